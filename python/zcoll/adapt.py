"""Table-wise error bounds (C++ adapt/, the DLRM compression paper's Algorithm 1): a table whose looked-up
vectors collapse onto few distinct vectors when quantized at the global bound (a high homogenization
index) gets a smaller bound, one whose vectors stay distinct a larger one.

    index = zcoll.adapt.homogenization_index(pooled_rows_of_table, error_bound=0.01)
    bound, kind = zcoll.adapt.table_bound(index, global_bound=0.01)        # kind: large, medium, small
"""

from . import _zcoll
from ._arrays import values_buffer
from ._zcoll import ArgumentError

__all__ = ["homogenization_index", "table_bound"]


def homogenization_index(rows, error_bound):
    """(N_original - N_quantized) / N_original of a [vectors, dim] float32 array or tensor: the share of
    its distinct vectors that quantization at `error_bound` (absolute) merges."""
    if len(rows.shape) != 2:
        raise ArgumentError(f"homogenization_index: rows of shape {tuple(rows.shape)}; expected [vectors, dim]")
    values, dtype = values_buffer(rows, "homogenization_index: rows")
    if dtype != "float32":
        raise ArgumentError(f"homogenization_index: rows are {dtype}; expected float32")
    return _zcoll.homogenization_index(values, int(rows.shape[1]), float(error_bound))


def table_bound(index, global_bound, *, alpha=5.0 / 3.0, beta=3.0, large_below=0.05, small_above=0.5):
    """(absolute bound, class) of a table of homogenization `index`: global_bound × alpha below
    large_below, global_bound / beta above small_above, global_bound between (the paper's 0.05 / 0.03 /
    0.01 with the defaults)."""
    return tuple(_zcoll.table_bound(float(index), float(global_bound), float(alpha), float(beta), float(large_below),
                                    float(small_above)))

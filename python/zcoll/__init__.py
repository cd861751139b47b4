"""zcoll: error-bounded lossy compression of float arrays and tensors, and compressed collectives.

    import zcoll
    codec = zcoll.Codec("fzlight", zcoll.relative(1e-4))
    stream = codec.compress(x)            # x: numpy array, CPU or CUDA tensor (float32/64, float16, bfloat16)
    y = codec.decompress(stream)          # |x - y| <= the stream's stated bound, on every element
    zcoll.stream_info(stream)["error_bound"]

Collectives over torch.distributed: zcoll.torch (docs/python.md). Errors are zcoll.Error and its kinds
FormatError (a damaged stream), ArgumentError (also a ValueError) and TransportError.
"""

from dataclasses import dataclass

import threading

from . import _cuda, _zcoll
from ._arrays import bytes_buffer, dtype_name, empty_like_kind, values_buffer
from ._zcoll import ArgumentError, Error, FormatError, TransportError

__all__ = ["Bound", "absolute", "relative", "lossless", "Codec", "codec_names", "stream_info", "decompress",
           "Error", "FormatError", "ArgumentError", "TransportError"]


@dataclass(frozen=True)
class Bound:
    """A pointwise error bound: absolute(eb), or relative(fraction of the data's value range)."""

    mode: str
    value: float

    def __post_init__(self):
        if self.mode not in ("absolute", "relative"):
            raise ArgumentError(f"Bound: mode '{self.mode}'; expected 'absolute' or 'relative'")
        if not (self.value >= 0.0 and self.value != float("inf")):
            raise ArgumentError(f"Bound: {self.mode} bound {self.value} must be finite and >= 0")

    def __str__(self):
        return f"{'abs' if self.mode == 'absolute' else 'rel'} {self.value:g}"


def absolute(eb):
    """|x - x'| <= eb on every element."""
    return Bound("absolute", float(eb))


def relative(fraction):
    """|x - x'| <= fraction × (max - min of the finite values, fill values left out)."""
    return Bound("relative", float(fraction))


def lossless():
    return Bound("absolute", 0.0)


def codec_names():
    """Every registered codec, by the name Codec takes."""
    return list(_zcoll.codec_names())


def stream_info(stream):
    """What a stream's header says: codec, dtype, count, error_bound (absolute), chunk_values, fill_value."""
    return _zcoll.stream_info(bytes_buffer(stream, "stream_info: stream"))


def _check_bound(error_bound):
    if not isinstance(error_bound, Bound):
        raise ArgumentError(f"error_bound: a {type(error_bound).__name__}; expected zcoll.absolute(eb) or "
                            "zcoll.relative(fraction)")
    return error_bound


class Codec:
    """A registered codec at an error bound: Codec("fzlight", zcoll.relative(1e-4)).

    chunk_values: values per independent chunk (a multiple of 32, 0 for the codec's default);
    fill_value: a value stored exactly and left out of the relative range; shape: the data's extents,
    slowest first (row codecs need the row length last; 2-D/3-D predictors use it); threads: host
    threads (the bytes do not depend on them); tuning: what a codec that picks its predictor's settings
    on a sample (HighRatio) picks them for, "ratio" (the fewest bytes within the bound, the default) or
    "rate-distortion" (the least error for the bytes; others ignore it).
    """

    def __init__(self, name, error_bound=None, *, chunk_values=0, fill_value=None, shape=None, threads=1,
                 tuning="ratio"):
        if not isinstance(name, str):
            raise ArgumentError(f"name: a {type(name).__name__}; expected one of {', '.join(codec_names())}")
        bound = _check_bound(error_bound if error_bound is not None else lossless())
        if not isinstance(threads, int) or threads < 1:
            raise ArgumentError(f"threads: {threads!r}; expected an int >= 1")
        if tuning not in ("ratio", "rate-distortion"):
            raise ArgumentError(f"tuning: {tuning!r}; expected 'ratio' or 'rate-distortion'")
        self.error_bound = bound
        self.tuning = tuning
        self.shape = tuple(int(d) for d in shape) if shape is not None else ()
        self._codec = _zcoll.Codec(name, bound.mode, bound.value, int(chunk_values),
                                   None if fill_value is None else float(fill_value), list(self.shape), threads,
                                   tuning)
        self.name = name
        self.threads = threads
        self._device_settings = (int(chunk_values), None if fill_value is None else float(fill_value))
        self._device_codec = None  # made at the first CUDA tensor
        self._device_lock = threading.Lock()

    def __repr__(self):
        tuning = "" if self.tuning == "ratio" else f", tuning={self.tuning!r}"
        return f"zcoll.Codec({self.name!r}, {self.error_bound}, threads={self.threads}{tuning})"

    def max_compressed_size(self, count, dtype="float32"):
        return self._codec.max_compressed_size(dtype_name(dtype), int(count))

    def compress(self, x, out=None):
        """The stream of `x` (read in place): a uint8 tensor for a tensor (on its device: a CUDA tensor is
        coded on the GPU, on torch's current stream), a numpy array otherwise, a view of `out` when given
        (at least max_compressed_size bytes)."""
        if _cuda.is_cuda_tensor(x):
            return self._on_device().compress(self, x, out)
        values, dtype = values_buffer(x, "compress: x")
        if out is None:
            out = empty_like_kind(x, self.max_compressed_size(values.size, dtype), "uint8")
        written = self._codec.compress(values, dtype, bytes_buffer(out, "compress: out"))
        return out[:written]

    def decompress(self, stream, out=None, dtype=None):
        """The values of `stream`, into `out` (any float array or tensor of the stream's count) or a new
        1-D array (a tensor when the stream is one) of `dtype` (default: the stream's)."""
        return self.decompress_with_bound(stream, out, dtype)[0]

    def decompress_with_bound(self, stream, out=None, dtype=None):
        """(values, bound): the bound every value is within, the stream's stated bound plus, for 16-bit
        outputs, the largest error their final rounding added. A stream in a CUDA tensor is decoded on its
        GPU, into a tensor there."""
        if _cuda.is_cuda_tensor(stream):
            return self._on_device().decompress(stream, out, dtype)
        data = bytes_buffer(stream, "decompress: stream")
        info = _zcoll.stream_info(data)
        if out is None:
            out = empty_like_kind(stream, info["count"], dtype_name(dtype) if dtype is not None else info["dtype"])
        values, out_dtype = values_buffer(out, "decompress: out", writable=True)
        if values.size != info["count"]:  # a stream that is not what the call expects, as in C++
            raise FormatError(f"decompress: the stream holds {info['count']} values; out holds {values.size}")
        rounding = self._codec.decompress(data, values, out_dtype)
        return out, info["error_bound"] + rounding

    def _on_device(self):
        """The codec's device side (zcoll._cuda.DeviceCodec), made at the first CUDA tensor."""
        with self._device_lock:
            if self._device_codec is None:
                chunk_values, fill_value = self._device_settings
                self._device_codec = _cuda.DeviceCodec(self.name, self.error_bound, chunk_values, fill_value, self.shape)
            return self._device_codec


def decompress(stream, out=None, dtype=None):
    """Decompresses a stream of any registered codec (the header names it); a stream in a CUDA tensor on
    its GPU."""
    info = _cuda.header_info(stream) if _cuda.is_cuda_tensor(stream) else stream_info(stream)
    if info["codec"] not in codec_names():
        raise FormatError(f"decompress: the stream was written by {info['codec']}")
    # Decoders read their settings from the stream; a row codec's constructor still asks for a row length.
    codec = Codec(info["codec"], shape=(1,) if _zcoll.codec_on_rows(info["codec"]) else None)
    return codec.decompress(stream, out, dtype)

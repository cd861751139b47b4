"""Codecs with TorchRec's quantized-comms protocol, for its embedding all-to-alls and reduce-scatters,
written without importing torchrec: row-wise Int8/Int4/Int2 in FBGEMM's fused layout and the FP16, BF16
and FP8 casts. The bytes are zcoll's (quantize/rowwise.hpp, quantize/cast.hpp), the same that zcoll's
Int8/Int4/Int2 and cast codecs write after their headers, and FBGEMM's unpack ops read them.

    codec = zcoll.torchrec.RowwiseQuantizedCodec(bits=4, row_dim=64)
    ctx = codec.create_context()
    wire = codec.encode(embeddings, ctx)               # uint8, calc_quantized_size(n, ctx) bytes
    ...all_to_all_single of the wire bytes...
    restored = codec.decode(received, ctx)              # float32; within ctx.error_bound of the input

Unlike TorchRec's codecs, each encode states its bound: ctx.error_bound holds on every element of what
decode returns. QComms' buffers have a fixed size per element, so a codec whose size depends on the data
(zcoll's error-bounded FZLight) cannot go through them: zcoll.torch.Collectives.all_to_all_single moves
variable-size streams (their sizes travel first) for that.
"""

from dataclasses import dataclass
from typing import Optional

import torch

from . import ArgumentError, _zcoll
from ._arrays import values_buffer

__all__ = ["QuantizationContext", "RowwiseQuantizedCodec", "CastCodec"]


@dataclass
class QuantizationContext:
    """What an encode and its decode share: the row length (row-wise codecs), the padding padded_size
    chose, and the bound the last encode states."""

    row_dim: int = -1
    padded_dim_sum_per_rank: Optional[list] = None
    error_bound: float = 0.0


def _check_floats(tensor, call):
    if not isinstance(tensor, torch.Tensor):
        raise ArgumentError(f"{call}: a {type(tensor).__name__}; expected a torch tensor")


class RowwiseQuantizedCodec:
    """Row-wise min-max quantization to `bits` (8, 4 or 2) per value, FBGEMM's fused layout: each row's
    codes, then its scale and bias (two float32 for 8 bits, two float16 below). row_dim: values per row
    (the embedding dimension); -1 takes the context's."""

    quantized_dtype = torch.uint8

    def __init__(self, bits=8, row_dim=-1, decode_dtype=torch.float32):
        if bits not in (8, 4, 2):
            raise ArgumentError(f"bits: {bits!r}; expected 8, 4 or 2")
        self.bits = bits
        self.row_dim = int(row_dim)
        self.decode_dtype = decode_dtype

    def create_context(self):
        return QuantizationContext(row_dim=self.row_dim)

    def _dim(self, ctx, input_len):
        dim = ctx.row_dim if ctx is not None and ctx.row_dim > 0 else self.row_dim
        if dim <= 0:
            raise ArgumentError("row_dim: not set; give RowwiseQuantizedCodec(row_dim=...) or a context with one")
        if input_len % dim != 0:
            raise ArgumentError(f"input: {input_len} values are not whole rows of row_dim = {dim}")
        return dim

    def calc_quantized_size(self, input_len, ctx=None):
        dim = self._dim(ctx, input_len)
        return _zcoll.fused_row_bytes(self.bits, input_len // dim, dim)

    def padded_size(self, input_tensor, dim_per_rank, my_rank, qcomm_ctx):
        """(padded length, padding) of this rank's slice: whole rows of row_dim values."""
        if input_tensor.dim() == 1:
            return input_tensor.shape[0], 0
        dim_sum = input_tensor.shape[1]
        dim = qcomm_ctx.row_dim if qcomm_ctx is not None and qcomm_ctx.row_dim > 0 else self.row_dim
        if dim <= 0:
            return dim_sum, 0
        padded = (dim_sum + dim - 1) // dim * dim
        if qcomm_ctx is not None and padded != dim_sum:
            qcomm_ctx.padded_dim_sum_per_rank = [(d + dim - 1) // dim * dim for d in dim_per_rank]
        return padded, padded - dim_sum

    def encode(self, input_tensor, ctx=None):
        _check_floats(input_tensor, "encode")
        flat = input_tensor.contiguous().view(-1)
        dim = self._dim(ctx, flat.numel())
        values, dtype = values_buffer(flat, "encode: input")
        out = torch.empty(_zcoll.fused_row_bytes(self.bits, flat.numel() // dim, dim), dtype=torch.uint8)
        bound = _zcoll.quantize_rows(self.bits, values, dtype, dim, out.numpy())
        if ctx is not None:
            ctx.error_bound = bound
        return out

    def decode(self, input_grad, ctx=None):
        if input_grad.dtype != torch.uint8 or input_grad.dim() != 1:
            raise ArgumentError(f"decode: a {input_grad.dtype} tensor of {input_grad.dim()} dims; expected 1-D uint8")
        dim = ctx.row_dim if ctx is not None and ctx.row_dim > 0 else self.row_dim
        if dim <= 0:
            raise ArgumentError("row_dim: not set; give RowwiseQuantizedCodec(row_dim=...) or a context with one")
        row_bytes = _zcoll.fused_row_bytes(self.bits, 1, dim)
        if input_grad.numel() % row_bytes != 0:
            raise ArgumentError(f"decode: {input_grad.numel()} bytes are not whole fused rows of {row_bytes} bytes")
        out = torch.empty(input_grad.numel() // row_bytes * dim, dtype=self.decode_dtype)
        values, dtype = values_buffer(out, "decode: out", writable=True)
        _zcoll.dequantize_rows(self.bits, input_grad.contiguous().numpy(), dim, values, dtype)
        return out


_CAST_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp8-e4m3": torch.uint8, "fp8-e5m2": torch.uint8}


class CastCodec:
    """Each value rounded to fp16, bf16 or an FP8 format (e4m3, e5m2): TorchRec's FP16/BF16/FP8 codecs,
    with the bound of the rounding stated in the context (+inf when a value overflowed)."""

    def __init__(self, format="fp16", decode_dtype=torch.float32):
        if format not in _CAST_DTYPES:
            raise ArgumentError(f"format: {format!r}; expected one of {', '.join(_CAST_DTYPES)}")
        self.format = format
        self.quantized_dtype = _CAST_DTYPES[format]
        self.decode_dtype = decode_dtype

    def create_context(self):
        return QuantizationContext()

    def calc_quantized_size(self, input_len, ctx=None):
        return int(input_len)

    def padded_size(self, input_tensor, dim_per_rank, my_rank, qcomm_ctx):
        return (input_tensor.shape[0] if input_tensor.dim() == 1 else input_tensor.shape[1]), 0

    def encode(self, input_tensor, ctx=None):
        _check_floats(input_tensor, "encode")
        values, dtype = values_buffer(input_tensor.contiguous(), "encode: input")
        out = torch.empty(values.size, dtype=self.quantized_dtype)
        bound = _zcoll.cast_encode(self.format, values, dtype, out.view(torch.uint8).numpy())
        if ctx is not None:
            ctx.error_bound = bound
        return out.view(input_tensor.shape)

    def decode(self, input_grad, ctx=None):
        if input_grad.dtype != self.quantized_dtype:
            raise ArgumentError(f"decode: a {input_grad.dtype} tensor; expected {self.quantized_dtype}")
        codes = input_grad.contiguous()
        out = torch.empty(codes.shape, dtype=self.decode_dtype)
        values, dtype = values_buffer(out, "decode: out", writable=True)
        _zcoll.cast_decode(self.format, codes.view(torch.uint8).view(-1).numpy(), values, dtype)
        return out

"""zcoll.torchrec: TorchRec's quantized-comms codec protocol. FBGEMM's own unpack ops read zcoll's fused
rows to what zcoll decodes, within the stated bound of the input; the casts equal torch's roundings; the
QComms flow (encode, split sizes from calc_quantized_size, all_to_all_single, decode) against an unsharded
reference."""

import pytest
import torch
import torch.distributed as dist

import zcoll
import zcoll.torchrec as tr
from conftest import run_ranks

UNPACK = {8: torch.ops.quantized.embedding_bag_byte_unpack, 4: torch.ops.quantized.embedding_bag_4bit_unpack,
          2: torch.ops.quantized.embedding_bag_2bit_unpack}


def embeddings(rows, dim, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, dim, generator=g) * torch.rand(rows, 1, generator=g) * 4
    x[0] = 1.5  # a constant row (scale 0)
    return x.to(dtype)


@pytest.mark.parametrize("bits", [8, 4, 2])
@pytest.mark.parametrize("dim", [1, 7, 16, 33, 128])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_fbgemm_unpack_reads_zcoll_rows(bits, dim, dtype):
    x = embeddings(37, dim, seed=dim, dtype=dtype)
    codec = tr.RowwiseQuantizedCodec(bits, row_dim=dim)
    ctx = codec.create_context()
    wire = codec.encode(x, ctx)
    assert wire.dtype == torch.uint8 and wire.numel() == codec.calc_quantized_size(x.numel(), ctx)
    mine = codec.decode(wire, ctx).view(37, dim)
    theirs = UNPACK[bits](wire.view(37, -1))
    # FBGEMM unpacks every code slot of a row's bytes: past dim, the padding of the last byte.
    assert torch.equal(mine, theirs[:, :dim])
    err = (mine.double() - x.double()).abs().max().item()
    assert err <= ctx.error_bound


def test_rows_the_layout_cannot_hold_are_refused():
    codec = tr.RowwiseQuantizedCodec(8, row_dim=4)
    with pytest.raises(zcoll.ArgumentError):
        codec.encode(torch.tensor([1.0, float("nan"), 2.0, 3.0]), codec.create_context())
    with pytest.raises(zcoll.ArgumentError, match="whole rows"):
        codec.encode(torch.ones(6), codec.create_context())
    with pytest.raises(zcoll.ArgumentError, match="bits"):
        tr.RowwiseQuantizedCodec(3)


@pytest.mark.parametrize("fmt,reference", [("fp16", torch.float16), ("bf16", torch.bfloat16), ("fp8-e4m3", None),
                                           ("fp8-e5m2", None)])
def test_casts_state_their_bound(fmt, reference):
    x = embeddings(64, 32, seed=3)
    codec = tr.CastCodec(fmt)
    ctx = codec.create_context()
    wire = codec.encode(x, ctx)
    assert wire.dtype == codec.quantized_dtype and wire.numel() == codec.calc_quantized_size(x.numel(), ctx)
    if reference is not None:
        assert torch.equal(wire, x.to(reference))  # the same rounding as torch's cast (nearest, ties to even)
    restored = codec.decode(wire, ctx)
    assert (restored.double() - x.double()).abs().max().item() <= ctx.error_bound
    big = codec.create_context()
    codec.encode(torch.tensor([1e30, 1.0]), big)
    assert big.error_bound == float("inf") or fmt in ("bf16", "fp8-e4m3")  # overflow states +inf (E4M3 saturates)


def test_padded_size_pads_whole_rows():
    codec = tr.RowwiseQuantizedCodec(8, row_dim=8)
    ctx = codec.create_context()
    assert codec.padded_size(torch.zeros(4, 20), [12, 8], 0, ctx) == (24, 4)
    assert ctx.padded_dim_sum_per_rank == [16, 8]
    assert codec.padded_size(torch.zeros(30), [30], 0, ctx) == (30, 0)


def qcomms_flow(rank, world, bits):
    """TorchRec's pooled-embedding all-to-all: each rank encodes the rows for every rank, the split sizes
    come from calc_quantized_size, the bytes go through all_to_all_single, each rank decodes."""
    dim, rows_per_rank = 16, 5
    codec = tr.RowwiseQuantizedCodec(bits, row_dim=dim)
    everything = [embeddings(rows_per_rank * world, dim, seed=10 + r) for r in range(world)]  # unsharded
    ctx = codec.create_context()
    mine = everything[rank]
    wire = codec.encode(mine, ctx)
    per_rank = codec.calc_quantized_size(rows_per_rank * dim, ctx)
    received = torch.empty(per_rank * world, dtype=torch.uint8)
    dist.all_to_all_single(received, wire, [per_rank] * world, [per_rank] * world)
    decoded = codec.decode(received, ctx).view(world * rows_per_rank, dim)
    want = torch.cat([everything[r][rank * rows_per_rank:(rank + 1) * rows_per_rank] for r in range(world)])
    # Every rank's encode of the same rows states the same bound; take each sender's.
    bounds = []
    for r in range(world):
        c = codec.create_context()
        codec.encode(everything[r], c)
        bounds.append(c.error_bound)
    return float((decoded.double() - want.double()).abs().max()), max(bounds)


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("bits", [8, 4])
def test_qcomms_flow_against_an_unsharded_reference(world, bits):
    for err, bound in run_ranks(world, qcomms_flow, bits):
        assert err <= bound

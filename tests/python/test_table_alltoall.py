"""zcoll.torch.TableWiseAlltoall (one stream per table segment, each at its table's bound) on 1 to 4 gloo
ranks against the exact values, and the table-wise bounds of zcoll.adapt."""

import pytest
import torch

import zcoll
import zcoll.adapt
import zcoll.torch
from conftest import run_ranks

TABLES, DIM, BATCH = 7, 8, 6
BOUNDS = [0.05, 0.01, 0.001, 0.0, 0.02, 0.003, 0.01]  # 0: lossless


def pooled(owner_seed, table, rows):
    g = torch.Generator().manual_seed(1000 * owner_seed + table)
    return torch.randn(rows, DIM, generator=g)


def exchange(rank, world, codec):
    owned = [[t for t in range(TABLES) if t % world == r] for r in range(world)]
    a2a = zcoll.torch.TableWiseAlltoall(codec, dim=DIM)
    # Rank r owns tables t % world == r and sends each rank its BATCH rows of each of them.
    send = torch.cat([pooled(rank, t, world * BATCH)[d * BATCH:(d + 1) * BATCH].reshape(-1)
                      for d in range(world) for t in owned[rank]] or [torch.zeros(0)])
    send_segments = [(d, t, BATCH * DIM) for d in range(world) for t in owned[rank]]
    recv_segments = [(s, t, BATCH * DIM) for s in range(world) for t in owned[s]]
    out = torch.empty(len(recv_segments) * BATCH * DIM)
    report = a2a.exchange(out, send, send_segments, recv_segments, BOUNDS)
    failures = []
    for (s, t, n), got in zip(recv_segments, out.split(BATCH * DIM)):
        want = pooled(s, t, world * BATCH)[rank * BATCH:(rank + 1) * BATCH].reshape(-1)
        err = float((got.double() - want.double()).abs().max())
        limit = 0.0 if s == rank else BOUNDS[t]  # a rank's own segments are copied
        if err > limit:
            failures.append(f"segment from {s} of table {t}: error {err} > {limit}")
    return failures, report["bytes_sent"] > 0 or world == 1


@pytest.mark.parametrize("world", [1, 2, 3, 4])
@pytest.mark.parametrize("codec", ["embedding-hybrid", "fzlight"])
def test_every_segment_within_its_tables_bound(world, codec):
    for failures, sent in run_ranks(world, exchange, codec):
        assert failures == [] and sent


def disagreeing_segments(rank, world):
    """Rank 1 says its segment to rank 0 holds one vector more than rank 0 expects: a FormatError on rank
    0, after the exchange, with nobody left waiting (rank 1's segment to itself agrees: a rank whose own
    segments disagree is an ArgumentError before anything is sent)."""
    a2a = zcoll.torch.TableWiseAlltoall("embedding-hybrid", dim=DIM)
    to_rank_0 = BATCH * DIM + (DIM if rank == 1 else 0)
    send = torch.zeros(to_rank_0 + BATCH * DIM)
    send_segments = [(0, 0, to_rank_0), (1, 0, BATCH * DIM)]
    recv_segments = [(0, 0, BATCH * DIM), (1, 0, BATCH * DIM)]
    try:
        a2a.exchange(torch.empty(2 * BATCH * DIM), send, send_segments, recv_segments, [0.01])
    except zcoll.Error as e:
        return type(e).__name__
    return "no error"


def test_disagreeing_ranks_raise_instead_of_hanging():
    # A rank left waiting would fail this as a hang after 30 s; the exchange itself takes milliseconds.
    assert run_ranks(2, disagreeing_segments, timeout=30) == ["FormatError", "no error"]


def test_homogenization_index_and_table_bounds():
    constant = torch.ones(100, DIM)
    assert zcoll.adapt.homogenization_index(constant, 0.01) == 0.0  # one distinct vector before and after
    near = torch.ones(100, DIM) + torch.arange(100).unsqueeze(1) * 1e-5  # 100 distinct, one bin apart at 0.01
    assert zcoll.adapt.homogenization_index(near, 0.01) == pytest.approx(0.99)
    spread = torch.randn(100, DIM, generator=torch.Generator().manual_seed(0))
    assert zcoll.adapt.homogenization_index(spread, 1e-6) == 0.0
    assert zcoll.adapt.table_bound(0.01, 0.03) == pytest.approx((0.05, "large"))
    assert zcoll.adapt.table_bound(0.2, 0.03) == pytest.approx((0.03, "medium"))
    assert zcoll.adapt.table_bound(0.9, 0.03) == pytest.approx((0.01, "small"))
    with pytest.raises(zcoll.ArgumentError, match="index"):
        zcoll.adapt.table_bound(1.5, 0.03)
    with pytest.raises(zcoll.ArgumentError, match="global_bound"):
        zcoll.adapt.table_bound(0.5, 0.0)
    with pytest.raises(zcoll.ArgumentError, match="vectors, dim"):
        zcoll.adapt.homogenization_index(torch.ones(10), 0.01)

"""zcoll.torch.Collectives over gloo: every operation on 1, 2, 3 and 4 ranks against exact references,
every dtype, the bound of every report checked on every element; non-blocking calls; bad calls."""

import pytest
import torch
import torch.distributed as dist

import zcoll
import zcoll.torch
from conftest import run_ranks

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def contribution(rank, n, dtype):
    """Rank `rank`'s input: multiples of 1/8 in [-4, 4) (exact in every dtype, and so are their sums over
    a few ranks in float32, where the engine reduces 16-bit values), different on every rank."""
    g = torch.Generator().manual_seed(1000 + rank)
    return (torch.randint(-32, 32, (n,), generator=g).to(torch.float64) / 8).to(dtype)


def final_rounding(dtype, magnitude):
    """Half an ulp of `dtype` at `magnitude`: the one rounding of a 16-bit result (0 for float32/64,
    whose results the bound covers as they are)."""
    if dtype not in (torch.float16, torch.bfloat16):
        return 0.0
    return float(torch.finfo(dtype).eps) * max(magnitude, float(torch.finfo(dtype).tiny))


def check(failures, what, got, want, bound):
    got64, want64 = got.double(), want.double()
    err = (got64 - want64).abs()
    limit = bound + final_rounding(got.dtype, float(want64.abs().max()) + bound if want64.numel() else 0.0)
    if got.shape != want.shape:
        failures.append(f"{what}: shape {tuple(got.shape)}, expected {tuple(want.shape)}")
    elif err.numel() and float(err.max()) > limit:
        i = int(err.argmax())
        failures.append(f"{what}: element {i} is {float(got64[i])}, exact {float(want64[i])}, bound {limit}")


def every_operation(rank, world, n):
    failures = []
    eb = 1.0 / 64
    for schedule in ("ring", "recursive_doubling"):
        coll = zcoll.torch.Collectives("fzlight", zcoll.absolute(eb), schedule=schedule, pipeline_values=1024)
        for dtype in DTYPES:
            mine = contribution(rank, n, dtype)
            every = [contribution(r, n, torch.float64) for r in range(world)]
            exact_sum = torch.stack(every).sum(0)
            for op, want in (("sum", exact_sum), ("avg", exact_sum / world), ("min", torch.stack(every).min(0).values),
                             ("max", torch.stack(every).max(0).values)):
                data = mine.clone()
                report = coll.allreduce(data, op=op)
                check(failures, f"{schedule} allreduce {op} {dtype}", data, want, report["error_bound"])
                if report["statistical_error_bound"] > report["error_bound"]:
                    failures.append(f"{schedule} {op}: statistical bound above the worst case")
            if schedule == "ring":
                block = n // world
                out = torch.empty(block, dtype=dtype)
                report = coll.reduce_scatter(out, mine[: block * world].clone())
                check(failures, f"reduce_scatter {dtype}", out, exact_sum[rank * block:(rank + 1) * block],
                      report["error_bound"])
                gathered = torch.empty(n * world, dtype=dtype)
                report = coll.all_gather(gathered, mine)
                check(failures, f"all_gather {dtype}", gathered, torch.cat(every), report["error_bound"])
    return failures


def alltoall_checks(rank, world, n):
    failures = []
    coll = zcoll.torch.Collectives("fzlight", zcoll.absolute(1.0 / 64))
    for dtype in DTYPES:
        rows = 4 * world
        mine = contribution(rank, rows * 8, dtype).view(rows, 8)
        out = torch.empty_like(mine)
        report = coll.all_to_all_single(out, mine)
        want = torch.cat([contribution(r, rows * 8, torch.float64).view(rows, 8)[rank * 4:(rank + 1) * 4]
                          for r in range(world)])
        check(failures, f"all_to_all_single {dtype}", out, want, report["error_bound"])
        # Splits: rank r sends r + b + 1 rows to rank b (so rank b receives r + b + 1 from each r).
        send = [rank + b + 1 for b in range(world)]
        recv = [r + rank + 1 for r in range(world)]
        src = contribution(rank + 50, sum(send) * 8, dtype).view(-1, 8)
        out = torch.empty(sum(recv), 8, dtype=dtype)
        report = coll.all_to_all_single(out, src, output_split_sizes=recv, input_split_sizes=send)
        pieces = []
        for r in range(world):
            theirs = contribution(r + 50, sum(r + b + 1 for b in range(world)) * 8, torch.float64).view(-1, 8)
            first = sum(r + b + 1 for b in range(rank))
            pieces.append(theirs[first:first + r + rank + 1])
        check(failures, f"all_to_all_single splits {dtype}", out, torch.cat(pieces), report["error_bound"])
    # int8 rows in the embedding all-to-all: within the report's bound (the largest row bound of the call).
    rows8 = torch.randn(4 * world, 16, generator=torch.Generator().manual_seed(rank))
    coll8 = zcoll.torch.Collectives("int8", shape=(16,))
    out = torch.empty_like(rows8)
    report = coll8.all_to_all_single(out, rows8)
    want = torch.cat([torch.randn(4 * world, 16, generator=torch.Generator().manual_seed(r))[rank * 4:(rank + 1) * 4]
                      for r in range(world)])
    check(failures, "int8 all_to_all_single", out, want, report["error_bound"])
    # The exact codec moves every bit.
    exact = zcoll.torch.Collectives("identity")
    data = contribution(rank, 1000, torch.float32) / 3
    want = sum(contribution(r, 1000, torch.float64) / 3 for r in range(world))
    report = exact.allreduce(data)
    check(failures, "identity allreduce", data, want.float(), report["error_bound"] + 1e-6 * float(want.abs().max()))
    return failures


def homomorphic_and_async(rank, world, n):
    failures = []
    coll = zcoll.torch.Collectives("fzlight", zcoll.absolute(1.0 / 64), homomorphic=True)
    exact = sum(contribution(r, n, torch.float64) for r in range(world))
    data = contribution(rank, n, torch.float32)
    report = coll.allreduce(data)
    check(failures, "homomorphic allreduce", data, exact, report["error_bound"])
    # Several calls in flight, completed in reverse order; a future's value is the output tensor.
    plain = zcoll.torch.Collectives("fzlight", zcoll.absolute(1.0 / 64))
    tensors = [contribution(rank, n, torch.float32) * (k + 1) for k in range(3)]
    handles = [plain.allreduce(t, async_op=True) for t in tensors]
    for k in reversed(range(3)):
        value = handles[k].get_future().wait()
        if value is not tensors[k]:
            failures.append("the future's value is not the output tensor")
        check(failures, f"async allreduce {k}", tensors[k], exact * (k + 1), handles[k].wait()["error_bound"])
    # A collective on a sub-group: the ranks of one parity; its tags stay apart from the others.
    if world >= 2:
        groups = [dist.new_group([r for r in range(world) if r % 2 == parity]) for parity in (0, 1)]
        sub = zcoll.torch.Collectives("fzlight", zcoll.absolute(1.0 / 64), group=groups[rank % 2])
        data = contribution(rank, n, torch.float32)
        report = sub.allreduce(data)
        want = sum(contribution(r, n, torch.float64) for r in range(world) if r % 2 == rank % 2)
        check(failures, "sub-group allreduce", data, want, report["error_bound"])
    return failures


@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_every_operation_against_exact_references(world):
    for failures in run_ranks(world, every_operation, 3001):
        assert failures == []


@pytest.mark.parametrize("world", [1, 2, 4])
def test_alltoall_with_and_without_splits(world):
    for failures in run_ranks(world, alltoall_checks, 0):
        assert failures == []


@pytest.mark.parametrize("world", [2, 3])
def test_homomorphic_async_and_sub_groups(world):
    for failures in run_ranks(world, homomorphic_and_async, 20000):
        assert failures == []


def mismatched_calls(rank, world):
    """Verify mode: rank 1 calls with another length; every rank raises the same ArgumentError."""
    coll = zcoll.torch.Collectives("fzlight", zcoll.absolute(0.01), verify=True)
    data = torch.ones(100 if rank != 1 else 101)
    try:
        coll.allreduce(data)
    except zcoll.ArgumentError as e:
        return str(e)
    return "no error"


def test_verify_mode_agrees_on_a_bad_call():
    messages = run_ranks(3, mismatched_calls)
    assert messages[0] != "no error" and all(m == messages[0] for m in messages), messages


def bad_arguments(rank, world):
    coll = zcoll.torch.Collectives("fzlight", zcoll.absolute(0.01))
    raised = []
    for call in (lambda: coll.allreduce(torch.ones(4), op="prod"),
                 lambda: coll.reduce_scatter(torch.ones(3), torch.ones(4, dtype=torch.float64)),
                 lambda: coll.all_to_all_single(torch.ones(4), torch.ones(4), input_split_sizes=[1, 1, 1]),
                 lambda: coll.allreduce(torch.ones(4, dtype=torch.int32)),
                 lambda: zcoll.torch.Collectives("fzlight", schedule="tree"),
                 lambda: zcoll.torch.Collectives("highratio-1d")):
        try:
            call()
            raised.append("nothing")
        except zcoll.ArgumentError as e:
            raised.append(str(e))
    return raised


def test_bad_arguments_raise_argument_errors_before_any_message():
    for raised in run_ranks(2, bad_arguments):
        assert "nothing" not in raised, raised
        assert "op" in raised[0] and "dtype" in raised[1] and "input_split_sizes" in raised[2]
        assert "schedule" in raised[4] and "does not run in collectives" in raised[5]


def seven_ranks(rank, world):
    failures = []
    coll = zcoll.torch.Collectives("fzlight", zcoll.absolute(1.0 / 64), pipeline_values=1024)
    data = contribution(rank, 5000, torch.float32)
    report = coll.allreduce(data)
    check(failures, "allreduce", data, sum(contribution(r, 5000, torch.float64) for r in range(world)),
          report["error_bound"])
    mine = contribution(rank + 20, world * 3 * 4, torch.float32).view(world * 3, 4)
    out = torch.empty_like(mine)
    report = coll.all_to_all_single(out, mine)
    want = torch.cat([contribution(r + 20, world * 3 * 4, torch.float64).view(world * 3, 4)[rank * 3:(rank + 1) * 3]
                      for r in range(world)])
    check(failures, "all_to_all_single", out, want, report["error_bound"])
    return failures


def test_seven_ranks():
    for failures in run_ranks(7, seven_ranks):
        assert failures == []


def request_outlives_its_collective(rank, world):
    import gc

    import numpy as np

    coll = zcoll.torch.Collectives("fzlight", zcoll.absolute(1.0 / 64))
    data = contribution(rank, 5000, torch.float32).numpy()
    want = sum(contribution(r, 5000, torch.float64) for r in range(world))
    request = coll._collective.allreduce(None, data, "float32", "sum")  # the engine's call, not waited on
    del coll
    gc.collect()
    report = request.wait()  # the Request keeps the Collective (its engine) alive
    return float(np.abs(data.astype(np.float64) - want.numpy()).max()) <= report["error_bound"]


def test_a_request_keeps_its_collective_alive():
    assert run_ranks(2, request_outlives_its_collective) == [True, True]

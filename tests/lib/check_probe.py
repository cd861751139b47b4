#!/usr/bin/python3
"""Compares two runs of collectives_probe: one with plain MPI, one with libzcoll-mpi.so preloaded.

    check_probe.py --ranks P --plain DIR --preloaded DIR --report FILE [--compressed yes|no]

Checks, on every rank and every value:
  * the plain run against a reference computed here from every rank's recorded inputs (exact for data
    movement, min and max; sums within float rounding): the probe and this checker agree with MPI;
  * the preloaded run's calls labelled "other" (integers, a user operation, a derived type, an excluded
    communicator, a small message) bit for bit against the plain run's: passed through untouched;
  * its "large" calls within the report's largest stated error bound of that operation (plus float
    rounding for sums) of the reference when --compressed yes, bit for bit as the plain run's otherwise;
  * the report's counts: per operation, calls intercepted = large calls x ranks (0 with --compressed no)
    and passed through = other calls x ranks (every call with --compressed no).
Exits 1 with a message naming the call, rank and value at the first failure.
"""
import argparse
import json
import struct
import sys
from collections import defaultdict

import numpy as np

DTYPES = {0: np.float32, 1: np.float64, 2: np.int32}
EPS = {np.float32: 2.0 ** -23, np.float64: 2.0 ** -52, np.int32: 0.0}


def fail(message):
    print("check_probe: FAIL: " + message)
    sys.exit(1)


def read_rank(path):
    """{(direction, call): (operation, kind, root, values)} of one rank's file."""
    records = {}
    with open(path, "rb") as f:
        data = f.read()
    at = 0
    while at < len(data):
        label = data[at:at + 64].split(b"\0", 1)[0].decode()
        kind, _, count = struct.unpack_from("<iiq", data, at + 64)
        at += 80
        dtype = DTYPES[kind]
        size = np.dtype(dtype).itemsize * count
        values = np.frombuffer(data[at:at + size], dtype=dtype)
        at += size
        direction, call, operation, category, root = label.split("|")
        records[(direction, int(call))] = (operation, category, int(root), values)
    return records


def read_run(directory, ranks):
    return [read_rank(f"{directory}/rank{r}.bin") for r in range(ranks)]


def report_operation(label):
    """The report's operation of a probe label: allreduce-sum -> allreduce."""
    for name in ("iallreduce", "reduce_scatter_block", "allreduce", "reduce"):
        if label.startswith(name + "-") or label == name:
            return name
    return label


def reference(run, call, rank):
    """What rank `rank` must hold after call `call`, in float64 (None: nothing to check), and the sum of
    magnitudes behind each value (for the rounding of sums)."""
    operation, _, root, _ = run[rank][("out", call)]
    inputs = [run[r][("in", call)][3].astype(np.float64) for r in range(len(run))]
    p = len(run)
    zero = None
    if operation.endswith("-sum") or operation.endswith("-user"):
        stacked = np.stack(inputs) if inputs[0].size else np.zeros((p, 0))
        magnitude = np.abs(stacked).sum(axis=0)
        if operation.startswith("reduce_scatter_block"):
            block = inputs[0].size // p
            part = slice(rank * block, (rank + 1) * block)
            return stacked.sum(axis=0)[part], magnitude[part]
        if operation.startswith("reduce-") and rank != root:
            return zero, zero
        return stacked.sum(axis=0), magnitude
    if operation.endswith("-max") or operation.endswith("-min"):
        if operation.startswith("reduce-") and rank != root:
            return zero, zero
        stacked = np.stack(inputs)
        result = stacked.max(axis=0) if operation.endswith("-max") else stacked.min(axis=0)
        return result, np.zeros_like(result)
    if operation == "allgather":
        result = np.concatenate(inputs)
    elif operation == "bcast":
        result = inputs[root]
    elif operation == "scatter":
        block = inputs[root].size // p
        result = inputs[root][rank * block:(rank + 1) * block]
    elif operation == "gather":
        if rank != root:
            return zero, zero
        result = np.concatenate(inputs)
    elif operation == "alltoall":
        block = inputs[0].size // p
        result = np.concatenate([inputs[q][rank * block:(rank + 1) * block] for q in range(p)])
    else:
        fail(f"unknown operation {operation} in call {call}")
    return result, np.zeros_like(result)


def check_within(run, call, rank, bound, what):
    expected, magnitude = reference(run, call, rank)
    if expected is None:
        return
    operation, _, _, got = run[rank][("out", call)]
    if got.size != expected.size:
        fail(f"{what}: call {call} ({operation}) rank {rank}: {got.size} values, expected {expected.size}")
    slack = len(run) * EPS[got.dtype.type] * (magnitude + bound)
    error = np.abs(got.astype(np.float64) - expected)
    bad = np.nonzero(~(error <= bound + slack))[0]
    if bad.size:
        i = bad[0]
        fail(f"{what}: call {call} ({operation}) rank {rank} value {i}: {got[i]!r}, expected {expected[i]!r} "
             f"within {bound} (+{slack[i]:.3g} rounding); {bad.size} values outside")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--plain", required=True)
    parser.add_argument("--preloaded", required=True)
    parser.add_argument("--report", required=True)
    parser.add_argument("--compressed", choices=("yes", "no"), default="yes")
    args = parser.parse_args()
    plain = read_run(args.plain, args.ranks)
    preloaded = read_run(args.preloaded, args.ranks)
    with open(args.report) as f:
        report = json.load(f)
    if report["ranks"] != args.ranks:
        fail(f"the report is of {report['ranks']} ranks, expected {args.ranks}")
    operations = report["operations"]

    calls = sorted(call for (direction, call) in plain[0] if direction == "out")
    large = defaultdict(int)
    other = defaultdict(int)
    for call in calls:
        operation, category, _, _ = plain[0][("out", call)]
        name = report_operation(operation)
        (large if category == "large" else other)[name] += 1
        for rank in range(args.ranks):
            check_within(plain, call, rank, 0.0, "plain MPI")
            if not np.array_equal(plain[rank][("in", call)][3], preloaded[rank][("in", call)][3]):
                fail(f"call {call} ({operation}) rank {rank}: the two runs had different inputs")
            got = preloaded[rank][("out", call)][3]
            if category == "large" and args.compressed == "yes":
                bound = operations[name]["intercepted"]["max_error_bound"]
                check_within(preloaded, call, rank, bound, "preloaded")
            elif got.tobytes() != plain[rank][("out", call)][3].tobytes():
                fail(f"call {call} ({operation}, {category}) rank {rank}: the preloaded run's result differs "
                     "from plain MPI's, expected the same bits")

    for name in set(large) | set(other):
        counts = operations[name]
        want_intercepted = large[name] * args.ranks if args.compressed == "yes" else 0
        want_passed = (other[name] + (0 if args.compressed == "yes" else large[name])) * args.ranks
        if counts["intercepted"]["calls"] != want_intercepted or counts["passed_through"]["calls"] != want_passed:
            fail(f"report: {name}: {counts['intercepted']['calls']} intercepted and "
                 f"{counts['passed_through']['calls']} passed through, expected {want_intercepted} and {want_passed}")
        if want_intercepted and args.ranks > 1 and not counts["intercepted"]["bytes_sent"] > 0:
            fail(f"report: {name}: no bytes sent by {want_intercepted} intercepted calls")
    print(f"check_probe: {len(calls)} calls on {args.ranks} ranks: plain MPI matches the reference, "
          f"{sum(large.values())} large calls {'within the reported bounds' if args.compressed == 'yes' else 'unchanged'}, "
          f"{sum(other.values())} other calls bit for bit, report counts match")


if __name__ == "__main__":
    main()

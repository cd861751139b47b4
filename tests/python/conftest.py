"""Shared helpers of zcoll's Python tests: run a function on N gloo ranks in forked (or spawned) processes."""

import multiprocessing
import os
import queue
import socket
import time
import traceback

import pytest


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(rank, world, port, target, args, results, done, timeout):
    import torch.distributed as dist

    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
        value = target(rank, world, *args)
        results.put((rank, "ok", value))
    except BaseException:  # noqa: B902 - every failure is reported to the parent
        results.put((rank, "error", traceback.format_exc()))
    finally:
        results.close()
        results.join_thread()  # the queue's feeder thread delivers the result before the process ends
        # Rank 0's process serves the group's TCP store: torch 1.13's store-based barriers (in
        # init_process_group and new_group) poll it until every rank has passed, so no rank may end
        # before all have finished ("Connection reset by peer" otherwise). A rank that crashed breaks
        # the wait after `timeout`; the parent reports it.
        try:
            done.wait(timeout)
        except Exception:  # noqa: B902 - threading.BrokenBarrierError: a rank is gone
            pass
        os._exit(0)  # no atexit handlers of the forked parent (pytest's) in the child


def run_ranks(world, target, *args, timeout=120, start_method="fork"):
    """target(rank, world, *args) on `world` forked processes in one gloo group; the list of what each
    rank returned (picklable), in rank order. A rank's exception fails the test with its traceback; a
    rank still running after `timeout` seconds fails it as a hang. start_method "spawn" starts fresh
    interpreters instead (CUDA cannot be used in a child forked from a process that used it)."""
    context = multiprocessing.get_context(start_method)
    results = context.Queue()
    done = context.Barrier(world)
    port = _free_port()
    procs = [context.Process(target=_rank_main, args=(r, world, port, target, args, results, done, timeout))
             for r in range(world)]
    for p in procs:
        p.start()
    outcome = {}
    deadline = time.monotonic() + timeout
    try:
        while len(outcome) < world:
            try:
                rank, status, value = results.get(timeout=1)
                outcome[rank] = (status, value)
                continue
            except queue.Empty:
                pass
            # A rank that ended without a result crashed (a signal: negative exit code).
            dead = [(r, p.exitcode) for r, p in enumerate(procs) if r not in outcome and p.exitcode is not None]
            if dead and results.empty():
                pytest.fail(f"ranks {dead} (rank, exit code) of {world} ended without a result; the others: {outcome}")
            if time.monotonic() > deadline:
                pytest.fail(f"ranks {sorted(set(range(world)) - set(outcome))} of {world} gave no result within "
                            f"{timeout} s (a hang); the others: {outcome}")
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    errors = [f"rank {r}:\n{v}" for r, (s, v) in sorted(outcome.items()) if s == "error"]
    if errors:
        pytest.fail("\n".join(errors))
    return [outcome[r][1] for r in range(world)]

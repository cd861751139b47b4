#!/usr/bin/python3
"""A DDP training step on a model of --params parameters (default 16.8 M: one 4096 x 4096 linear layer) under
gradient communication hooks, side by side in one run: DDP's default allreduce (fp32), PyTorch's
fp16_compress_hook and zcoll's allreduce_hook (FZLight at a relative bound; homomorphic sums too). Per
hook: the median step time of --repeat steps, and the largest error of the averaged gradients against the
exact average of the same step (computed apart, untimed) beside the bound the hook states (fp16 states
none).

    # on the test bed (bench/netbed): 2 hosts at 1 Gbit/s, gloo over TCP
    bench/netbed/netbed up 2 1gbit
    NETBED_MPIRUN_ARGS="-x PYTHONPATH" PYTHONPATH=build/release/python \\
        bench/netbed/netbed run 2 -- /usr/bin/python3 bench/python_ddp.py --master 10.77.0.1 --ifname eth0
    bench/netbed/netbed down
    # anywhere: mpirun -n 2 ... bench/python_ddp.py (ranks from Open MPI's environment), or
    #           bench/python_ddp.py --rank R --world N --master HOST

Only the rendezvous reads the MPI environment: every byte of the step goes through gloo.
"""

import argparse
import datetime
import os
import socket
import statistics
import time

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

import zcoll
import zcoll.torch


def make_model(width, seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh(), torch.nn.Linear(width, 16))


def step(model, x, y):
    model.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--rank", type=int, default=int(os.environ.get("OMPI_COMM_WORLD_RANK", 0)))
    parser.add_argument("--world", type=int, default=int(os.environ.get("OMPI_COMM_WORLD_SIZE", 1)))
    parser.add_argument("--master", default="127.0.0.1", help="the address of rank 0's host")
    parser.add_argument("--port", type=int, default=29517, help="rank 0's rendezvous port (0: a free one, one host)")
    parser.add_argument("--ifname", help="GLOO_SOCKET_IFNAME: the network interface gloo uses")
    parser.add_argument("--width", type=int, default=4096, help="the first layer is width x width")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rel", type=float, default=1e-3, help="zcoll's bound, relative to a bucket's range")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1, help="torch and zcoll threads per rank")
    a = parser.parse_args()
    if a.ifname:
        os.environ["GLOO_SOCKET_IFNAME"] = a.ifname
    torch.set_num_threads(a.threads)
    if a.port == 0:
        if a.world != 1:
            parser.error("--port 0 picks a free port of this host: one rank only")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            a.port = s.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://{a.master}:{a.port}", rank=a.rank, world_size=a.world,
                            timeout=datetime.timedelta(minutes=10))
    g = torch.Generator().manual_seed(1000 + a.rank)
    x, y = torch.randn(a.batch, a.width, generator=g), torch.randn(a.batch, 16, generator=g)
    reference = make_model(a.width, 0)
    step(reference, x, y)  # this rank's own gradients, then their exact average
    exact = [p.grad.clone() for p in reference.parameters()]
    for e in exact:
        dist.all_reduce(e)
        e /= a.world
    params = sum(p.numel() for p in reference.parameters())

    hooks = [("default allreduce (fp32)", None, None),
             ("fp16_compress_hook", dist.group.WORLD, default_hooks.fp16_compress_hook)]
    for homomorphic in (False, True):
        state = zcoll.torch.HookState("fzlight", zcoll.relative(a.rel), threads=a.threads, homomorphic=homomorphic)
        hooks.append((f"zcoll fzlight rel {a.rel:g}" + (" homomorphic" if homomorphic else ""), state,
                      zcoll.torch.allreduce_hook))
    rows = []
    for name, state, hook in hooks:
        model = DDP(make_model(a.width, 0))
        if hook is not None:
            model.register_comm_hook(state, hook)
        times = []
        for i in range(a.repeat + 2):  # two warm-up steps (DDP rebuilds its buckets after the first)
            dist.barrier()
            start = time.perf_counter()
            step(model, x, y)
            times.append(time.perf_counter() - start)
        error = max(float((p.grad - e).abs().max()) for p, e in zip(model.parameters(), exact))
        bound = max(r["error_bound"] for r in state.reports.values()) if isinstance(state, zcoll.torch.HookState) \
            else (0.0 if hook is None else float("nan"))
        ratio = 1.0 if hook is None else 2.0  # fp16 halves the bytes
        if isinstance(state, zcoll.torch.HookState):
            sent = sum(r["bytes_sent"] for r in state.reports.values())
            ratio = sum(r["raw_bytes_sent"] for r in state.reports.values()) / sent if sent else 1.0
        rows.append((name, statistics.median(times[2:]), error, bound, ratio))
    if a.rank == 0:
        print(f"python_ddp: {a.world} ranks, {params / 1e6:.1f} M parameters ({4 * params / 2**20:.0f} MiB of fp32 "
              f"gradients), batch {a.batch} per rank, {a.threads} thread(s) per rank, median of {a.repeat} steps; "
              f"torch {torch.__version__}")
        base = rows[0][1]
        print(f"{'hook':<40} {'step s':>9} {'vs fp32':>8} {'ratio':>7} {'max error':>11} {'stated bound':>13}")
        for name, seconds, error, bound, ratio in rows:
            print(f"{name:<40} {seconds:9.4f} {base / seconds:8.2f} {ratio:7.2f} {error:11.3e} {bound:13.3e}")
    dist.barrier()  # no rank tears its connections down while another still uses them
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

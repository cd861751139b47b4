#!/usr/bin/python3
"""zcoll-dlrm-torch: a PyTorch DLRM trained on N gloo processes under communication configurations, as
recommendation models are trained: EmbeddingBag tables sharded table-wise (model parallel) with an
all-to-all of the pooled embeddings forward and of their gradients backward, and the dense MLPs data
parallel under DDP. Prints per configuration the test accuracy, AUC and log loss, their deltas against
fp32 paired by seed with 95 % confidence intervals, bytes per step and the time split (docs/python.md).

    examples/python/dlrm_torch.py --task movielens --data ml-latest-small/ratings.csv --seeds 1,2,3
    zcoll-dlrm --dump criteo.bin --task criteo --train-samples 262144      # the C++ example's task
    examples/python/dlrm_torch.py --task criteo --data criteo.bin

Configurations (--configs, default all); each changes one exchange against fp32, as zcoll-dlrm's do:
    fp32            embeddings and gradients exact (gloo's all_to_all_single and allreduce)
    fp16-hook       PyTorch's fp16_compress_hook on the dense gradients
    zcoll-fzlight   zcoll's DDP hook, FZLight at --grad-eb (relative to each bucket's range), on the dense
                    gradients
    zcoll-fzlight-ef  the same with the hook's error feedback
    zcoll-int8, zcoll-int4  TorchRec-protocol row-wise Int8/Int4 (zcoll.torchrec, FBGEMM's layout) on the
                    forward embedding all-to-all, FP16 on the backward one (TorchRec's usual pairing)
    zcoll-tablewise-hybrid  zcoll's table-wise all-to-all (zcoll.torch.TableWiseAlltoall, one stream per
                    table segment) with the embedding-hybrid codec on the forward all-to-all, each table at
                    the bound zcoll.adapt gives it from its homogenization index at --emb-eb (re-measured
                    every --reclassify steps on the tables' pooled rows); backward exact, as zcoll-dlrm's
                    hybrid configurations
"""

import argparse
import json
import multiprocessing
import os
import socket
import sys
import time
import traceback

import numpy as np
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

import zcoll
import zcoll.adapt
import zcoll.torch
import zcoll.torchrec

CONFIGS = ["fp32", "fp16-hook", "zcoll-fzlight", "zcoll-fzlight-ef", "zcoll-int8", "zcoll-int4",
           "zcoll-tablewise-hybrid"]
# Two-sided 95 % quantiles of Student's t for 1..10 degrees of freedom.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]


# ---- tasks ---------------------------------------------------------------------------------------------

class Task:
    """Samples as arrays: dense [n, D] float32, ids [n, T] int64, labels [n] float32; rows per table."""

    def __init__(self, dense, ids, labels, train, table_rows):
        self.dense, self.ids, self.labels, self.train, self.table_rows = dense, ids, labels, train, table_rows


def movielens(path, seed):
    """MovieLens ratings as examples/dlrm/tasks.hpp builds them: click = rating >= 4; user, movie, hour of
    day and weekday (UTC) as ids; log(1 + the user's and the movie's training ratings) and the time as
    dense features; shuffled by the seed and split 90 / 10."""
    raw = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float64)
    _, user = np.unique(raw[:, 0], return_inverse=True)
    _, movie = np.unique(raw[:, 1], return_inverse=True)
    seconds = raw[:, 3].astype(np.int64)
    ids = np.stack([user, movie, (seconds // 3600) % 24, (seconds // 86400 + 4) % 7], axis=1).astype(np.int64)
    labels = (raw[:, 2] >= 4.0).astype(np.float32)
    order = np.random.default_rng(seed).permutation(len(raw))
    ids, labels, seconds = ids[order], labels[order], seconds[order]
    train = len(raw) * 9 // 10
    user_count = np.bincount(ids[:train, 0], minlength=ids[:, 0].max() + 1)
    movie_count = np.bincount(ids[:train, 1], minlength=ids[:, 1].max() + 1)
    span = max(1.0, float(seconds.max() - seconds.min()))
    dense = np.stack([np.log1p(user_count[ids[:, 0]]) / 8.0, np.log1p(movie_count[ids[:, 1]]) / 6.0,
                      (seconds - seconds.min()) / span], axis=1).astype(np.float32)
    rows = [int(ids[:, 0].max()) + 1, int(ids[:, 1].max()) + 1, 24, 7]
    return Task(dense, ids, labels, train, rows)


def criteo_dump(path):
    """The samples `zcoll-dlrm --dump` wrote (format: the comment at the top of examples/dlrm/dlrm_study.cpp)."""
    with open(path, "rb") as f:
        if f.read(8) != b"ZDLRM1\0\0":
            raise SystemExit(f"{path}: not a zcoll-dlrm --dump file")
        d, t, train, test = np.frombuffer(f.read(32), dtype="<u8").astype(int)
        rows = np.frombuffer(f.read(8 * t), dtype="<u8").astype(int).tolist()
        record = np.dtype([("dense", "<f4", (d,)), ("ids", "<u8", (t,)), ("label", "<f4")])
        samples = np.frombuffer(f.read(), dtype=record, count=train + test)
    return Task(np.ascontiguousarray(samples["dense"]), samples["ids"].astype(np.int64),
                np.ascontiguousarray(samples["label"]), train, rows)


# ---- the model -------------------------------------------------------------------------------------------

def mlp(sizes, last_relu):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2 or last_relu:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


class DenseArch(torch.nn.Module):
    """Bottom MLP, dot interaction of the bottom output with the pooled embeddings, top MLP."""

    def __init__(self, dense_features, tables, dim):
        super().__init__()
        self.bottom = mlp([dense_features, 64, dim], True)
        features = tables + 1
        self.pairs = torch.triu_indices(features, features, offset=1)
        self.top = mlp([dim + features * (features - 1) // 2, 64, 1], False)

    def forward(self, dense, pooled):  # pooled: [b, T, dim]
        z = self.bottom(dense)
        vectors = torch.cat([z.unsqueeze(1), pooled], dim=1)
        dots = torch.bmm(vectors, vectors.transpose(1, 2))[:, self.pairs[0], self.pairs[1]]
        return self.top(torch.cat([z, dots], dim=1)).squeeze(1)


# ---- the embedding all-to-all --------------------------------------------------------------------------

class Exchange:
    """The all-to-all of pooled embeddings (forward) and their gradients (backward) under a configuration;
    counts the bytes this rank puts on the wire and the time spent."""

    def __init__(self, config, world, rank, tables, dim, emb_eb):
        self.world, self.rank, self.dim, self.emb_eb = world, rank, dim, emb_eb
        self.owned = [[t for t in range(tables) if t % world == r] for r in range(world)]
        self.bytes = 0
        self.seconds = 0.0
        self.kind = "exact"
        self.bounds = [emb_eb] * tables  # the table-wise configuration's, agreed by every rank
        if config == "zcoll-tablewise-hybrid":
            self.kind = "tables"
            self.tables = zcoll.torch.TableWiseAlltoall("embedding-hybrid", dim=dim)
        elif config in ("zcoll-int8", "zcoll-int4"):
            self.kind = "qcomm"
            self.forward_codec = zcoll.torchrec.RowwiseQuantizedCodec(8 if config == "zcoll-int8" else 4, row_dim=dim)
            self.backward_codec = zcoll.torchrec.CastCodec("fp16")

    def reclassify(self, pooled_mine):
        """Each owner measures its tables' homogenization index on this batch's pooled rows and takes the
        bound zcoll.adapt gives it; every rank learns every table's bound (owners are unique: a sum)."""
        mine = torch.zeros(len(self.bounds), dtype=torch.float64)
        for j, t in enumerate(self.owned[self.rank]):
            index = zcoll.adapt.homogenization_index(pooled_mine[:, j, :].contiguous(), self.emb_eb)
            mine[t] = zcoll.adapt.table_bound(index, self.emb_eb)[0]
        dist.all_reduce(mine)
        self.bounds = mine.tolist()

    def move_tables(self, pooled_mine, b):
        """The forward all-to-all as table segments: rank r gets, per table t of this rank, the pooled
        rows of its samples, compressed at bounds[t]."""
        start = time.perf_counter()
        mine = self.owned[self.rank]
        send = torch.cat([pooled_mine[r * b:(r + 1) * b, j, :].reshape(-1) for r in range(self.world)
                          for j in range(len(mine))]) if mine else torch.zeros(0)
        send_segments = [(r, t, b * self.dim) for r in range(self.world) for t in mine]
        recv_segments = [(s, t, b * self.dim) for s in range(self.world) for t in self.owned[s]]
        out = torch.empty(sum(v for _, _, v in recv_segments))
        report = self.tables.exchange(out, send, send_segments, recv_segments, self.bounds)
        self.bytes += report["bytes_sent"]
        local = torch.empty(b, len(self.bounds), self.dim)
        for (s, t, values), block in zip(recv_segments, out.split([v for _, _, v in recv_segments])):
            local[:, t, :] = block.view(b, self.dim)
        self.seconds += time.perf_counter() - start
        return local

    def move(self, chunks, recv_rows, backward):
        """Sends chunks[r] ([rows_r, dim] float32) to rank r; returns the received [rows, dim] per rank."""
        start = time.perf_counter()
        send = torch.cat(chunks)
        out = torch.empty(sum(recv_rows), self.dim)
        send_rows = [c.shape[0] for c in chunks]
        if self.kind == "exact" or (self.kind == "tables" and backward):
            dist.all_to_all_single(out, send, recv_rows, send_rows)
            self.bytes += 4 * self.dim * (sum(send_rows) - send_rows[self.rank])
        else:
            codec = self.backward_codec if backward else self.forward_codec
            encoded = [codec.encode(c, codec.create_context()).view(torch.uint8).view(-1) for c in chunks]
            sizes = [e.numel() for e in encoded]
            # calc_quantized_size counts elements of quantized_dtype (fp16 on the way back): bytes are more.
            unit = torch.empty(0, dtype=codec.quantized_dtype).element_size()
            recv_sizes = [codec.calc_quantized_size(r * self.dim) * unit for r in recv_rows]
            received = torch.empty(sum(recv_sizes), dtype=torch.uint8)
            dist.all_to_all_single(received, torch.cat(encoded), recv_sizes, sizes)
            self.bytes += sum(sizes) - sizes[self.rank]
            pieces, first = [], 0
            for size in recv_sizes:
                piece = received[first:first + size]
                if backward:
                    piece = piece.view(codec.quantized_dtype)
                pieces.append(codec.decode(piece, codec.create_context()).view(-1, self.dim))
                first += size
            out = torch.cat(pieces)
        self.seconds += time.perf_counter() - start
        return list(out.split(recv_rows))


class PooledExchange(torch.autograd.Function):
    """pooled_mine [B, T_own, dim] (this rank's tables, the whole global batch) -> [b, T, dim] (every
    table, this rank's samples); backward moves the gradients back to the tables' owners."""

    @staticmethod
    def forward(ctx, pooled_mine, exchange, b):
        ctx.exchange, ctx.b = exchange, b
        world = exchange.world
        if exchange.kind == "tables":
            return exchange.move_tables(pooled_mine, b)
        chunks = [pooled_mine[r * b:(r + 1) * b].reshape(-1, exchange.dim) for r in range(world)]
        recv_rows = [b * len(exchange.owned[s]) for s in range(world)]
        received = exchange.move(chunks, recv_rows, backward=False)
        tables = sum(len(o) for o in exchange.owned)
        out = torch.empty(b, tables, exchange.dim)
        for s, block in enumerate(received):
            out[:, exchange.owned[s], :] = block.view(b, len(exchange.owned[s]), exchange.dim)
        return out

    @staticmethod
    def backward(ctx, grad):
        exchange, b = ctx.exchange, ctx.b
        world, mine = exchange.world, exchange.owned[exchange.rank]
        chunks = [grad[:, exchange.owned[s], :].reshape(-1, exchange.dim) for s in range(world)]
        received = exchange.move(chunks, [b * len(mine)] * world, backward=True)
        return torch.cat([block.view(b, len(mine), exchange.dim) for block in received]), None, None


# ---- one run ---------------------------------------------------------------------------------------------

def auc(labels, scores):
    """Area under the ROC curve: the Mann-Whitney statistic with tied scores sharing their mean rank."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    _, first, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    mean_rank = first + (counts + 1) / 2.0
    ranks[order] = np.repeat(mean_rank, counts)
    positives = labels.sum()
    negatives = len(labels) - positives
    return float((ranks[labels == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def train(rank, world, task, config, seed, a):
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    tables = len(task.table_rows)
    exchange = Exchange(config, world, rank, tables, a.dim, a.emb_eb)
    embeddings = {t: torch.nn.EmbeddingBag(task.table_rows[t], a.dim, mode="sum", sparse=True)
                  for t in range(tables)}
    for t, e in embeddings.items():  # every rank makes every table (same seed), keeps its own
        torch.nn.init.normal_(e.weight, std=1.0 / a.dim ** 0.5)
    mine = exchange.owned[rank]
    embeddings = {t: embeddings[t] for t in mine}
    model = DDP(DenseArch(task.dense.shape[1], tables, a.dim))
    hook_state = None
    if config == "fp16-hook":
        model.register_comm_hook(dist.group.WORLD, default_hooks.fp16_compress_hook)
    elif config in ("zcoll-fzlight", "zcoll-fzlight-ef"):
        hook_state = zcoll.torch.HookState("fzlight", zcoll.relative(a.grad_eb),
                                           error_feedback=config == "zcoll-fzlight-ef")
        model.register_comm_hook(hook_state, zcoll.torch.allreduce_hook)
    dense_opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    sparse_opt = torch.optim.SGD([p for e in embeddings.values() for p in e.parameters()], lr=a.lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    b = a.batch // world
    dense_numel = sum(p.numel() for p in model.parameters())
    dense_bytes = 0
    step_seconds = 0.0
    for step in range(a.steps):
        start = time.perf_counter()
        first = (step * a.batch) % (task.train - a.batch)
        rows = slice(first, first + a.batch)
        ids = torch.from_numpy(task.ids[rows])
        pooled = torch.stack([embeddings[t](ids[:, t:t + 1]) for t in mine], dim=1) if mine else \
            torch.zeros(a.batch, 0, a.dim, requires_grad=True)
        if exchange.kind == "tables" and step % a.reclassify == 0:
            exchange.reclassify(pooled.detach())
        local = PooledExchange.apply(pooled, exchange, b)
        mine_rows = slice(first + rank * b, first + (rank + 1) * b)
        logits = model(torch.from_numpy(task.dense[mine_rows]), local)
        loss = loss_fn(logits, torch.from_numpy(task.labels[mine_rows]))
        dense_opt.zero_grad()
        sparse_opt.zero_grad()
        loss.backward()
        dense_opt.step()
        sparse_opt.step()
        step_seconds += time.perf_counter() - start
        if hook_state is not None:
            dense_bytes += sum(r["bytes_sent"] for r in hook_state.reports.values())
        else:  # gloo's ring allreduce sends 2 (N - 1) / N of the gradient bytes
            dense_bytes += (2 if config == "fp16-hook" else 4) * dense_numel * 2 * (world - 1) / world
    # Evaluation with exact exchanges: the model's quality, not the configuration's communication.
    exchange.kind = "exact"
    test = np.arange(task.train, len(task.labels))
    test = test[: len(test) // a.batch * a.batch]
    scores = []
    with torch.no_grad():
        for first in range(0, len(test), a.batch):
            ids = torch.from_numpy(task.ids[test[first:first + a.batch]])
            pooled = torch.stack([embeddings[t](ids[:, t:t + 1]) for t in mine], dim=1) if mine else \
                torch.zeros(a.batch, 0, a.dim)
            local = PooledExchange.apply(pooled, exchange, b)
            mine_rows = test[first + rank * b:first + (rank + 1) * b]
            logits = model.module(torch.from_numpy(task.dense[mine_rows]), local)
            gathered = [torch.empty(b) for _ in range(world)]
            dist.all_gather(gathered, logits)
            scores.append(torch.cat(gathered))
    if rank != 0:
        return None
    p = torch.sigmoid(torch.cat(scores)).double().numpy()
    y = task.labels[test].astype(np.float64)
    eps = 1e-12
    return {"accuracy": float(((p > 0.5) == (y > 0.5)).mean()), "auc": auc(y, p),
            "log_loss": float(-(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)).mean()),
            "embedding_bytes_per_step": exchange.bytes / a.steps, "dense_bytes_per_step": dense_bytes / a.steps,
            "step_ms": 1e3 * step_seconds / a.steps, "exchange_ms": 1e3 * exchange.seconds / a.steps}


def rank_main(rank, world, port, task, config, seed, a, results):
    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
        results.put((rank, train(rank, world, task, config, seed, a), None))
        dist.destroy_process_group()
    except BaseException:  # noqa: B902 - the parent reports it
        results.put((rank, None, traceback.format_exc()))
    finally:
        results.close()
        results.join_thread()
        os._exit(0)


def run(task, config, seed, a):
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [context.Process(target=rank_main, args=(r, a.ranks, port, task, config, seed, a, results))
             for r in range(a.ranks)]
    for p in procs:
        p.start()
    outcome = [results.get(timeout=3600) for _ in procs]
    for p in procs:
        p.join()
    errors = [e for _, _, e in outcome if e]
    if errors:
        raise SystemExit(f"{config} seed {seed} failed:\n" + "\n".join(errors))
    return [m for r, m, _ in outcome if r == 0][0]


def interval(deltas):
    """Mean and 95 % half-width (Student's t) of paired deltas."""
    n = len(deltas)
    mean = float(np.mean(deltas))
    if n < 2:
        return mean, float("nan")
    return mean, T975[min(n - 2, len(T975) - 1)] * float(np.std(deltas, ddof=1)) / n ** 0.5


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--task", choices=["movielens", "criteo"], required=True)
    parser.add_argument("--data", required=True, help="MovieLens ratings.csv, or a zcoll-dlrm --dump file")
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=512, help="global batch (a multiple of --ranks)")
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--configs", default="all")
    parser.add_argument("--emb-eb", type=float, default=0.01, help="absolute bound of the embedding codecs")
    parser.add_argument("--grad-eb", type=float, default=0.01, help="bound of the DDP hook, relative to a bucket")
    parser.add_argument("--reclassify", type=int, default=100, help="steps between table-wise bound updates")
    parser.add_argument("--json", help="write every run's numbers here")
    a = parser.parse_args()
    configs = CONFIGS if a.configs == "all" else a.configs.split(",")
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown or a.batch % a.ranks or a.ranks < 1:
        parser.error(f"--configs: unknown {unknown}" if unknown else "--batch must be a multiple of --ranks")
    if "fp32" not in configs:
        configs = ["fp32"] + configs  # the reference of the deltas
    seeds = [int(s) for s in a.seeds.split(",")]
    runs = {}
    for seed in seeds:
        task = movielens(a.data, seed) if a.task == "movielens" else criteo_dump(a.data)
        for config in configs:
            runs[(config, seed)] = run(task, config, seed, a)
            print(f"  {config} seed {seed}: " + ", ".join(f"{k} {v:.4g}" for k, v in runs[(config, seed)].items()),
                  file=sys.stderr, flush=True)
    print(f"dlrm_torch: --task {a.task}, {a.ranks} gloo ranks, {a.steps} steps of {a.batch}, dim {a.dim}, "
          f"lr {a.lr}, seeds {seeds}, embedding eb {a.emb_eb} (abs, table-wise), gradient eb {a.grad_eb} (rel)")
    print("| configuration | accuracy | Δacc pp (95 % CI) | AUC | ΔAUC (95 % CI) | log loss | Δlog loss (95 % CI) "
          "| emb bytes/step | dense bytes/step | step ms | exchange ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for config in configs:
        rows = [runs[(config, s)] for s in seeds]
        mean = {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}
        cells = []
        for key, scale in (("accuracy", 100), ("auc", 1), ("log_loss", 1)):
            d, h = interval([scale * (runs[(config, s)][key] - runs[("fp32", s)][key]) for s in seeds])
            cells.append(f"{d:+.4f} (±{h:.4f})")
        print(f"| {config} | {mean['accuracy']:.4f} | {cells[0]} | {mean['auc']:.4f} | {cells[1]} | "
              f"{mean['log_loss']:.4f} | {cells[2]} | {mean['embedding_bytes_per_step']:.0f} | "
              f"{mean['dense_bytes_per_step']:.0f} | {mean['step_ms']:.1f} | {mean['exchange_ms']:.1f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({f"{c}/{s}": v for (c, s), v in runs.items()}, f, indent=1)


if __name__ == "__main__":
    main()

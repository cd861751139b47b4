#!/usr/bin/python3
"""What calling a zcoll codec from Python costs: the Python call beside zcoll-bench's C++ call on the same
values, codec, bound and threads, in one run.

    PYTHONPATH=build/release/python bench/python_codecs.py --zcoll-bench build/release/bench/zcoll-bench \\
        --input bench/data/navy_winds_uwnd_132x73x144.f32 [--codec fzlight] [--rel 1e-4] [--threads 1]

The input (raw float32) is tiled to --large-mb (default 64 MB) for the large row and cut to --small-kb
(default 4 KB) for the per-call row. Python times are medians of --repeat calls into preallocated
outputs (as zcoll-bench's are), from a float32 torch tensor; the C++ times are zcoll-bench's medians. The
overhead per call is the difference of the two medians.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

import zcoll


def median_seconds(call, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cxx_seconds(zcoll_bench, values, codec, rel, threads, repeat):
    """(compress s, decompress s) of zcoll-bench codec on `values`, from its GB/s."""
    with tempfile.TemporaryDirectory() as tmp:
        data, out = os.path.join(tmp, "values.f32"), os.path.join(tmp, "bench.json")
        values.tofile(data)
        subprocess.run([zcoll_bench, "codec", "--input", data, "--codec", codec, "--rel", str(rel), "--threads",
                        str(threads), "--repeat", str(repeat), "--json", out], check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            row = [r for r in json.load(f)["rows"] if r["codec"] != "memcpy (reference)"][0]
    size = values.nbytes / 1e9
    return size / row["compress_gb_per_s"], size / row["decompress_gb_per_s"]


def python_seconds(values, codec_name, rel, threads, repeat):
    tensor = torch.from_numpy(values)
    codec = zcoll.Codec(codec_name, zcoll.relative(rel), threads=threads)
    out = torch.empty(codec.max_compressed_size(values.size), dtype=torch.uint8)
    stream = codec.compress(tensor, out=out)
    restored = torch.empty_like(tensor)
    compress = median_seconds(lambda: codec.compress(tensor, out=out), repeat)
    decompress = median_seconds(lambda: codec.decompress(stream, out=restored), repeat)
    return compress, decompress


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--zcoll-bench", required=True)
    parser.add_argument("--input", required=True, help="raw float32 values")
    parser.add_argument("--codec", default="fzlight")
    parser.add_argument("--rel", type=float, default=1e-4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--large-mb", type=float, default=64)
    parser.add_argument("--small-kb", type=float, default=4)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--small-repeat", type=int, default=2001)
    a = parser.parse_args()
    field = np.fromfile(a.input, dtype=np.float32)
    large_count = int(a.large_mb * 1e6 / 4)
    large = np.resize(field, large_count)  # tiled
    small = np.ascontiguousarray(field[: int(a.small_kb * 1024 / 4)])
    print(f"python_codecs: {a.input}, codec {a.codec}, rel {a.rel:g}, {a.threads} thread(s); medians of "
          f"{a.repeat} (large) and {a.small_repeat} (small) calls; torch {torch.__version__}, python "
          f"{sys.version.split()[0]}")
    print(f"{'size':>10} {'op':>10} {'C++ s':>12} {'Python s':>12} {'Python/C++':>11} {'overhead us':>12}")
    for values, repeat in ((large, a.repeat), (small, a.small_repeat)):
        cxx = cxx_seconds(a.zcoll_bench, values, a.codec, a.rel, a.threads, repeat)
        py = python_seconds(values, a.codec, a.rel, a.threads, repeat)
        for op, c, p in zip(("compress", "decompress"), cxx, py):
            print(f"{values.nbytes:>10} {op:>10} {c:12.6g} {p:12.6g} {p / c:11.3f} {(p - c) * 1e6:12.2f}")


if __name__ == "__main__":
    main()

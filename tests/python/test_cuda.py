"""zcoll on CUDA tensors (zcoll/_cuda.py, zcoll._zcoll_cuda). Here, without a GPU: the staged steps the
collectives take on CUDA tensors, run on CPU tensors through a HostStaging by the same C++ model, give
the host calls' values bit for bit on 1, 2, 3, 4 and 7 ranks; the device module refuses what it cannot
do with zcoll's errors. Where torch sees a GPU, the codecs and collectives on CUDA tensors themselves:
the host's bytes and values."""

import os

os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # asking for a GPU must not keep forked ranks off it

import numpy as np
import pytest
import torch

import zcoll
import zcoll._cuda
import zcoll.torch
from conftest import run_ranks
from test_collectives import contribution
from test_ddp_hook import hooked_against_plain

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]

try:
    import zcoll._zcoll_cuda as cuda_module
except ImportError:
    cuda_module = None
GPU = torch.cuda.is_available()


def differences(what, staged, host):
    """[] when the two tensors hold the same bits."""
    if staged.dtype != host.dtype or staged.shape != host.shape:
        return [f"{what}: {staged.dtype} {tuple(staged.shape)} against {host.dtype} {tuple(host.shape)}"]
    same = staged.view(-1).view(torch.uint8).equal(host.view(-1).view(torch.uint8))
    return [] if same else [f"{what}: the staged call's values differ from the host call's"]


def staged_equals_host(rank, world, n):
    failures = []
    for schedule in ("ring", "recursive_doubling"):
        settings = dict(schedule=schedule, pipeline_values=1024)
        host = zcoll.torch.Collectives("fzlight", zcoll.absolute(1.0 / 64), **settings)
        staged = zcoll.torch.Collectives("fzlight", zcoll.absolute(1.0 / 64), _host_staging=True, **settings)
        for dtype in DTYPES:
            mine = contribution(rank, n, dtype)
            for op in ("sum", "avg", "max"):
                a, b = mine.clone(), mine.clone()
                report_a, report_b = staged.allreduce(a, op=op), host.allreduce(b, op=op)
                failures += differences(f"{schedule} allreduce {op} {dtype}", a, b)
                if report_a["error_bound"] != report_b["error_bound"]:
                    failures.append(f"{schedule} allreduce {op} {dtype}: bounds {report_a['error_bound']}, "
                                    f"{report_b['error_bound']}")
            if schedule == "ring":
                block = n // world
                outs = [torch.empty(block, dtype=dtype) for _ in range(2)]
                staged.reduce_scatter(outs[0], mine[: block * world].clone())
                host.reduce_scatter(outs[1], mine[: block * world].clone())
                failures += differences(f"reduce_scatter {dtype}", *outs)
                outs = [torch.empty(n * world, dtype=dtype) for _ in range(2)]
                staged.all_gather(outs[0], mine)
                host.all_gather(outs[1], mine)
                failures += differences(f"all_gather {dtype}", *outs)
                rows = mine[: (n // world) * world].view(world, -1)
                outs = [torch.empty_like(rows) for _ in range(2)]
                staged.all_to_all_single(outs[0], rows)
                host.all_to_all_single(outs[1], rows)
                failures += differences(f"all_to_all_single {dtype}", *outs)
    # Rows: int8 and int4, float32, sent with uneven splits (rank r sends r + b + 1 rows to rank b).
    for codec in ("int8", "int4"):
        staged = zcoll.torch.Collectives(codec, shape=(8,), _host_staging=True)
        host = zcoll.torch.Collectives(codec, shape=(8,))
        send = [rank + b + 1 for b in range(world)]
        recv = [r + rank + 1 for r in range(world)]
        mine = contribution(rank + 10, sum(send) * 8, torch.float32).view(-1, 8)
        outs = [torch.empty(sum(recv), 8) for _ in range(2)]
        staged.all_to_all_single(outs[0], mine, recv, send)
        host.all_to_all_single(outs[1], mine, recv, send)
        failures += differences(f"{codec} all_to_all_single with splits", *outs)
    return failures


@pytest.mark.parametrize("world", [1, 2, 3, 4, 7])
def test_staged_collectives_give_the_host_calls_values(world):
    for failures in run_ranks(world, staged_equals_host, 1000 + 37 * world, timeout=240):
        assert failures == []


def staged_refusals(rank, world):
    errors = []
    for codec in ("identity", "embedding-hybrid"):
        try:
            zcoll.torch.Collectives(codec, shape=(8,), _host_staging=True)
        except zcoll.ArgumentError as e:
            errors.append(str(e))
    return errors


def test_staged_collectives_take_the_device_codecs_only():
    for errors in run_ranks(1, staged_refusals):
        assert len(errors) == 2 and all("fzlight, int8 or int4" in e for e in errors), errors


@pytest.mark.skipif(cuda_module is None, reason="zcoll was built without its CUDA module (no nvcc)")
def test_the_cuda_module_names_its_codecs_and_refuses_the_others():
    names = cuda_module.device_codec_names().split(", ")
    assert {"fzlight", "int8", "int4", "fp16", "bf16", "topk", "embedding-huffman", "embedding-lz"} <= set(names)
    assert "highratio-1d" not in names
    with pytest.raises(zcoll.ArgumentError, match="no device driver.*fzlight"):
        zcoll._cuda.DeviceCodec("highratio-1d", zcoll.absolute(0.1), 0, None, ())
    with pytest.raises(zcoll.ArgumentError, match="dtype 'int32'"):
        cuda_module.DeviceCodec("fzlight", "absolute", 0.1, 0, None, []).max_compressed_size("int32", 10)


@pytest.mark.skipif(cuda_module is None or GPU, reason="needs the CUDA module and no GPU")
def test_without_a_gpu_a_device_call_is_a_zcoll_error_not_a_crash():
    codec = cuda_module.DeviceCodec("fzlight", "absolute", 0.1, 0, None, [])
    with pytest.raises(zcoll.Error, match="cuda"):
        codec.compress((0, 0), "float32", (0, 0), 0, 0)


@pytest.mark.skipif(cuda_module is not None, reason="zcoll was built with its CUDA module")
def test_without_the_cuda_module_a_cuda_call_says_so():
    with pytest.raises(zcoll.Error, match="no CUDA module"):
        zcoll._cuda.module()


# ---- where torch sees a GPU ------------------------------------------------------------------------

def field(n, dtype):
    x = torch.sin(torch.arange(n, dtype=torch.float64) * 0.01) * 40 + torch.arange(n) % 7
    if n > 10:
        x[3], x[5], x[9] = float("nan"), float("inf"), float("-inf")
    return x.to(dtype)


@pytest.mark.skipif(not GPU or cuda_module is None, reason="needs a GPU that torch sees and the CUDA module")
@pytest.mark.parametrize("dtype", DTYPES)
def test_codecs_on_cuda_tensors_write_the_hosts_bytes(dtype):
    codec = zcoll.Codec("fzlight", zcoll.absolute(1e-3))
    for n in (0, 1, 1000, 70001):
        x = field(n, dtype)
        host = codec.compress(x)
        device = codec.compress(x.cuda())
        assert device.is_cuda and torch.equal(device.cpu(), host)
        for out_dtype in (None, dtype):  # the stream's (float32 for 16-bit inputs), or the input's
            y_host, bound_host = codec.decompress_with_bound(host, dtype=out_dtype)
            y_device, bound_device = codec.decompress_with_bound(device, dtype=out_dtype)
            assert y_device.is_cuda and y_device.dtype == y_host.dtype and bound_device == bound_host
            assert np.array_equal(y_device.cpu().view(torch.uint8).numpy(), y_host.view(torch.uint8).numpy())
        if n > 1:
            with pytest.raises(zcoll.FormatError):
                codec.decompress(device[:-1].clone())


def cuda_collectives(rank, world):
    """Every call on CUDA tensors (ranks share the one GPU) against the staged call on CPU tensors: the
    same C++ steps, so the same bits."""
    failures = []
    n = 100000
    for codec, shape in (("fzlight", None), ("int8", (8,))):
        device = zcoll.torch.Collectives(codec, zcoll.absolute(1.0 / 64), shape=shape)
        host = zcoll.torch.Collectives(codec, zcoll.absolute(1.0 / 64), shape=shape, _host_staging=True)
        for dtype in (DTYPES if codec == "fzlight" else [torch.float32]):
            mine = contribution(rank, n * world, dtype)
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):  # the calls run on the caller's current stream
                results = {}
                for name, coll, x in (("cuda", device, mine.cuda()), ("cpu", host, mine.clone())):
                    if codec == "fzlight":
                        a = x.clone()
                        coll.allreduce(a, op="sum")  # (an average's division is torch's, which rounds
                        # differently on a GPU: test_ddp_hook's bound check covers it below)
                        rs = torch.empty(n, dtype=dtype, device=x.device)
                        coll.reduce_scatter(rs, x)
                        ag = torch.empty(n * world * world, dtype=dtype, device=x.device)
                        handle = coll.all_gather(ag, x, async_op=True)
                        handle.wait()
                        results[name] = [a, rs, ag]
                    rows = x.view(-1, 8)
                    out = torch.empty_like(rows)
                    coll.all_to_all_single(out, rows)
                    results.setdefault(name, []).append(out)
            for i, (a, b) in enumerate(zip(results["cuda"], results["cpu"])):
                if not (a.is_cuda and torch.equal(a.cpu().view(-1).view(torch.uint8), b.view(-1).view(torch.uint8))):
                    failures.append(f"{codec} {dtype} call {i}: the CUDA tensor's values differ from the host's")
    return failures


def cuda_ddp(rank, world):
    torch.cuda.set_device(0)
    return hooked_against_plain(rank, world, "float32", True, 3, device="cuda")


@pytest.mark.skipif(not GPU or cuda_module is None, reason="needs a GPU that torch sees and the CUDA module")
def test_the_ddp_hook_on_cuda_gradients_holds_its_bound():
    for failures, buckets in run_ranks(2, cuda_ddp, start_method="spawn", timeout=300):
        assert failures == [] and buckets >= 2


@pytest.mark.skipif(not GPU or cuda_module is None, reason="needs a GPU that torch sees and the CUDA module")
@pytest.mark.parametrize("world", [1, 2, 3])
def test_collectives_on_cuda_tensors_give_the_host_calls_values(world):
    for failures in run_ranks(world, cuda_collectives, start_method="spawn", timeout=300):
        assert failures == []

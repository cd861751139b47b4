"""zcoll on CUDA tensors: the device codecs and collectives of the compiled module zcoll._zcoll_cuda.

A CUDA tensor is handed over as (address, bytes), with its device index and the handle of torch's
current stream on that device: the codec runs on that stream, so work queued on it before the call
(the kernel that wrote the tensor) runs first, and the call returns once its result is written (it
waits for what the host must know: a stream's size, whether a stream decoded, the bytes of a
collective's messages). Nothing here links libtorch; the module exists where zcoll was built with nvcc.
"""

import contextlib
import threading

from ._arrays import dtype_name, torch_module
from ._zcoll import ArgumentError, Error, stream_header_bytes, stream_info

_module = None


def module():
    """zcoll._zcoll_cuda; zcoll.Error when this build of zcoll has none."""
    global _module
    if _module is None:
        try:
            from . import _zcoll_cuda
        except ImportError as e:
            raise Error("this build of zcoll has no CUDA module (zcoll._zcoll_cuda is built where nvcc and "
                        "the CUDA Toolkit are found, with -DZCOLL_ENABLE_CUDA=ON): it cannot code CUDA tensors") from e
        _module = _zcoll_cuda
    return _module


def is_cuda_tensor(x):
    torch = torch_module()
    return torch is not None and isinstance(x, torch.Tensor) and x.device.type == "cuda"


def _dtype_of(x, argument):
    name = dtype_name(x.dtype)
    if name not in ("float32", "float64", "float16", "bfloat16"):
        raise ArgumentError(f"{argument}: dtype {x.dtype}; expected torch.float32, float64, float16 or bfloat16")
    return name


def _check_contiguous(x, argument):
    if not x.is_contiguous():
        raise ArgumentError(f"{argument}: the tensor is not contiguous; zcoll reads tensors in place "
                            "(pass x.contiguous())")


def device_values(x, argument, writable=False):
    """((address, bytes), dtype name) of a contiguous float CUDA tensor; ArgumentError otherwise.
    (`writable` is values_buffer's: a tensor is always writable.)"""
    del writable
    if not is_cuda_tensor(x):
        raise ArgumentError(f"{argument}: a {type(x).__name__} on {getattr(x, 'device', 'the host')}; "
                            "expected a CUDA tensor like the call's other tensors")
    _check_contiguous(x, argument)
    return (x.data_ptr(), x.numel() * x.element_size()), _dtype_of(x, argument)


def device_bytes(x, argument, device):
    """(address, bytes) of a contiguous torch.uint8 CUDA tensor on `device`."""
    torch = torch_module()
    if not is_cuda_tensor(x) or x.dtype != torch.uint8 or x.device != device:
        raise ArgumentError(f"{argument}: expected a contiguous torch.uint8 tensor on {device}, got "
                            f"{getattr(x, 'dtype', type(x).__name__)} on {getattr(x, 'device', 'the host')}")
    _check_contiguous(x, argument)
    return x.data_ptr(), x.numel()


def header_info(stream):
    """stream_info of a stream in a CUDA tensor: its fixed header copied to the host (a wait on torch's
    current stream)."""
    device_bytes(stream, "decompress: stream", stream.device)
    return stream_info(stream[:stream_header_bytes].cpu().numpy())


def current_stream(device):
    """torch's current stream on `device` (a torch.device)."""
    return torch_module().cuda.current_stream(device)


class DeviceCodec:
    """A zcoll.Codec's device side: made at its first CUDA tensor, its workspace kept between calls."""

    def __init__(self, name, bound, chunk_values, fill_value, shape):
        self._codec = module().DeviceCodec(name, bound.mode, bound.value, int(chunk_values), fill_value, list(shape))
        self._lock = threading.Lock()  # one workspace: one call at a time

    def compress(self, codec, x, out):
        torch = torch_module()
        values, dtype = device_values(x, "compress: x")
        needed = codec.max_compressed_size(x.numel(), dtype)
        if out is None:
            out = torch.empty(needed, dtype=torch.uint8, device=x.device)
        target = device_bytes(out, "compress: out", x.device)
        with self._lock:
            written = self._codec.compress(values, dtype, target, x.device.index, current_stream(x.device).cuda_stream)
        return out[:written]

    def decompress(self, stream, out, dtype):
        """(values, the bound every value is within), as Codec.decompress_with_bound."""
        torch = torch_module()
        data = device_bytes(stream, "decompress: stream", stream.device)
        info = header_info(stream)
        if out is None:
            name = dtype_name(dtype) if dtype is not None else info["dtype"]
            torch_dtype = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
                           "bfloat16": torch.bfloat16}.get(name)
            if torch_dtype is None:
                raise ArgumentError(f"dtype: {dtype}; expected float32, float64, float16 or bfloat16")
            out = torch.empty(info["count"], dtype=torch_dtype, device=stream.device)
        target, out_dtype = device_values(out, "decompress: out")
        if out.device != stream.device:
            raise ArgumentError(f"decompress: out is on {out.device}, the stream on {stream.device}")
        if out.numel() != info["count"]:  # a stream that is not what the call expects, as in C++
            raise ArgumentError(f"decompress: the stream holds {info['count']} values; out holds {out.numel()}")
        with self._lock:
            rounding = self._codec.decompress(data, target, out_dtype, stream.device.index,
                                              current_stream(stream.device).cuda_stream)
        return out, info["error_bound"] + rounding


class DeviceCalls:
    """A device collective's calls with the host collective's signatures (zcoll.torch.Collectives calls
    either alike): each runs on `stream` of `device` and keeps `tensors` alive until it completes."""

    def __init__(self, collective, device, stream, tensors):
        self._collective = collective
        self._device = device.index
        self.stream = stream
        self._keep = tuple(tensors)

    def _extra(self):
        return self._device, self.stream.cuda_stream, self._keep

    def allreduce(self, input, out, dtype, op):
        return self._collective.allreduce(input, out, dtype, op, *self._extra())

    def reduce_scatter(self, input, out, dtype, op):
        return self._collective.reduce_scatter(input, out, dtype, op, *self._extra())

    def allgather(self, input, out, dtype):
        return self._collective.allgather(input, out, dtype, *self._extra())

    def alltoall(self, input, out, dtype):
        return self._collective.alltoall(input, out, dtype, *self._extra())

    def alltoallv(self, input, send_counts, out, recv_counts, dtype):
        return self._collective.alltoallv(input, send_counts, out, recv_counts, dtype, *self._extra())

    def finishing(self):
        """Where torch work on the call's outputs runs (an average's division): the caller's stream."""
        return torch_module().cuda.stream(self.stream)

    def finished(self):
        """Waits for that work, so the call's future completes with its outputs written."""
        self.stream.synchronize()


class HostCalls:
    """The host collective's calls (its own signatures), and nothing to wait for after them."""

    def __init__(self, collective):
        self._collective = collective

    def __getattr__(self, name):
        return getattr(self._collective, name)

    @staticmethod
    def finishing():
        return contextlib.nullcontext()

    @staticmethod
    def finished():
        pass

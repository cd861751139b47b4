"""How zcoll reads numpy arrays and torch tensors without copying them.

The compiled module takes buffers (the buffer protocol) and a dtype name. A CPU tensor hands over its
numpy view, which shares its storage; a bfloat16 tensor, which numpy has no dtype for, its storage
viewed as int16, with "bfloat16" said beside it. Nothing here imports torch: a tensor is recognised
by the module torch already loaded.
"""

import sys

import numpy as np

from ._zcoll import ArgumentError

_NUMPY_DTYPES = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64", np.dtype(np.float16): "float16"}


def torch_module():
    """torch if the program has imported it, else None."""
    return sys.modules.get("torch")


def is_tensor(x):
    torch = torch_module()
    return torch is not None and isinstance(x, torch.Tensor)


def dtype_name(dtype):
    """The zcoll name of a numpy dtype, torch dtype or name ("float32", "float64", "float16", "bfloat16")."""
    if isinstance(dtype, str):
        return dtype
    torch = torch_module()
    if torch is not None and isinstance(dtype, torch.dtype):
        return {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
                torch.bfloat16: "bfloat16"}.get(dtype, str(dtype))
    return _NUMPY_DTYPES.get(np.dtype(dtype), str(np.dtype(dtype)))


def values_buffer(x, argument, writable=False):
    """(buffer, dtype name) of a float array or tensor, sharing its memory; ArgumentError otherwise."""
    if is_tensor(x):
        torch = torch_module()
        if x.device.type != "cpu":
            raise ArgumentError(f"{argument}: a {x.device.type} tensor; zcoll's Python face codes CPU tensors "
                                "(device codecs: docs/cuda.md)")
        if not x.is_contiguous():
            raise ArgumentError(f"{argument}: the tensor is not contiguous; zcoll reads tensors in place "
                                "(pass x.contiguous())")
        x = x.detach()
        if x.dtype == torch.bfloat16:
            return x.view(torch.int16).numpy(), "bfloat16"
        name = dtype_name(x.dtype)
        if name not in ("float32", "float64", "float16"):
            raise ArgumentError(f"{argument}: dtype {x.dtype}; expected torch.float32, float64, float16 or bfloat16")
        return x.numpy(), name
    if isinstance(x, np.ndarray):
        name = _NUMPY_DTYPES.get(x.dtype)
        if name is None:
            raise ArgumentError(f"{argument}: dtype {x.dtype}; expected float32, float64 or float16")
        if not x.flags.c_contiguous:
            raise ArgumentError(f"{argument}: the array is not C-contiguous; zcoll reads arrays in place "
                                "(pass np.ascontiguousarray(x))")
        if writable and not x.flags.writeable:
            raise ArgumentError(f"{argument}: the array is read-only; zcoll writes its result into it")
        return x, name
    raise ArgumentError(f"{argument}: a {type(x).__name__}; expected a numpy array or a CPU torch tensor")


def bytes_buffer(x, argument):
    """A byte buffer of a stream (numpy uint8 array, uint8 tensor, bytes, bytearray, memoryview)."""
    if is_tensor(x):
        torch = torch_module()
        if x.device.type != "cpu" or x.dtype != torch.uint8 or not x.is_contiguous():
            raise ArgumentError(f"{argument}: expected a contiguous CPU torch.uint8 tensor, got {x.dtype} on "
                                f"{x.device}")
        return x.numpy()
    if isinstance(x, np.ndarray):
        if x.dtype != np.uint8 or not x.flags.c_contiguous:
            raise ArgumentError(f"{argument}: expected a contiguous uint8 array, got {x.dtype}")
        return x
    if isinstance(x, (bytes, bytearray, memoryview)):
        return x
    raise ArgumentError(f"{argument}: a {type(x).__name__}; expected a uint8 array or tensor, or bytes")


def empty_like_kind(reference, count, dtype):
    """A new 1-D array of `count` values of `dtype` (a zcoll name), a tensor when `reference` is one."""
    if is_tensor(reference):
        torch = torch_module()
        torch_dtype = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
                       "bfloat16": torch.bfloat16, "uint8": torch.uint8}[dtype]
        return torch.empty(count, dtype=torch_dtype)
    if dtype == "bfloat16":
        raise ArgumentError("dtype bfloat16: numpy has no bfloat16; decode into a torch.bfloat16 tensor (out=...)")
    return np.empty(count, dtype=dtype)

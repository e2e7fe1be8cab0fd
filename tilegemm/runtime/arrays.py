"""Kernel arguments: reading numpy and DLPack arrays (torch, cupy, jax, DeviceArray) and checking them
against the compiled kernel's parameters before anything reaches the GPU."""
import sys
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ..errors import ArgumentError
from . import dlpack

_CONTIGUOUS_HINT = "make it contiguous with np.ascontiguousarray / .contiguous()"


@dataclass(frozen=True)
class ArrayArg:
    """One argument as the runtime sees it. `host` is the numpy array for host memory (copied in and out);
    otherwise `ptr` is a device pointer on GPU `device`. `keepalive` holds what owns the memory."""
    shape: tuple
    dtype: np.dtype
    strides: tuple   # in elements
    ptr: int
    device: object   # CUDA ordinal, or None for host memory
    host: object
    library: str     # top-level module of the caller's array type: "numpy", "torch", "cupy", ...
    keepalive: tuple = ()

    @property
    def is_row_major(self):
        """True if the elements are packed in C order (strides of extent-1 dimensions do not matter)."""
        expected = dlpack.row_major_strides(self.shape)
        return 0 in self.shape or all(s == e for s, e, d in zip(self.strides, expected, self.shape) if d != 1)


def library_of(x):
    """The top-level module an array's type comes from ("numpy", "torch", "cupy", "jaxlib", "tilegemm")."""
    return type(x).__module__.split(".")[0]


def adapt(x, index, stream_id):
    """Reads argument `index` (a position, or a name such as "out[0]"); device arrays are exported for the
    consumer stream `stream_id` (DLPack id)."""
    if isinstance(x, np.ndarray):
        return _from_numpy(x, library_of(x))
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        return _from_dlpack(x, index, stream_id)
    raise ArgumentError(f"argument {index} is a {type(x).__name__}, not an array: pass a numpy array or a device "
                        "array that supports DLPack (torch, cupy, jax, tg.runtime.DeviceArray)")


def _from_numpy(x, library):
    strides = tuple(s // x.itemsize for s in x.strides)
    return ArrayArg(x.shape, x.dtype, strides, x.ctypes.data, None, x, library)


def _from_dlpack(x, index, stream_id):
    what = f"argument {index} ({type(x).__name__})"
    try:
        device_type, device_id = x.__dlpack_device__()
    except (BufferError, RuntimeError, TypeError, ValueError) as e:   # torch meta tensors: "Unknown device type"
        raise ArgumentError(f"{what} has no memory tilegemm can read through DLPack: {e}") from e
    if device_type not in (dlpack.CPU, dlpack.CUDA_HOST, dlpack.CUDA, dlpack.CUDA_MANAGED):
        raise ArgumentError(f"{what} lives on DLPack device type {device_type}, which is not a CUDA GPU; "
                            "move it to the GPU or pass a numpy array")
    try:
        if device_type in (dlpack.CPU, dlpack.CUDA_HOST):
            return _from_numpy(np.from_dlpack(x), library_of(x))
        capsule = x.__dlpack__(stream=stream_id)
    except (BufferError, RuntimeError, TypeError, ValueError) as e:
        raise ArgumentError(f"{what} could not be read through DLPack: {e}") from e
    info = dlpack.read(capsule)
    if info.dtype is None:
        code, bits, lanes = info.type_code
        raise ArgumentError(f"{what} has a DLPack element type (code {code}, {bits} bits, {lanes} lanes) that "
                          "tilegemm does not know; use float16, bfloat16, float32 or int32")
    return ArrayArg(info.shape, info.dtype, info.strides, info.ptr, int(device_id), None, library_of(x),
                    (x, capsule))


def check_arguments(params, args, device_ordinal, kernel_name):
    """Raises ArgumentError unless `args` match the compiled kernel's input `params` and can be used on the GPU
    `device_ordinal`: count, dtype, shape, row-major layout, and (device memory) GPU and 16-byte alignment."""
    inputs = [p for p in params if not p.is_output]
    if len(args) != len(inputs):
        names = ", ".join(p.name for p in inputs)
        raise ArgumentError(f"{kernel_name} takes {len(inputs)} array(s) ({names}), got {len(args)}")
    for index, (param, arg) in enumerate(zip(inputs, args)):
        _check(param, arg, f"{kernel_name}: argument {index} ({param.name})", device_ordinal)


def check_output(param, arg, device_ordinal, kernel_name, host_call):
    """Returns `arg`, an array given as `out=` for output `param`, after the checks an input gets; it must live
    where the call's outputs do (host memory for host inputs, the GPU for device inputs)."""
    what = f"{kernel_name}: the out= array for {param.name}"
    if (arg.host is not None) != host_call:
        where = "in host memory (numpy)" if host_call else f"on cuda:{device_ordinal}"
        raise ArgumentError(f"{what} must be {where}, where the inputs of this call are")
    _check(param, arg, what, device_ordinal)
    return arg


def _check(param, arg, what, device_ordinal):
    """Raises ArgumentError unless `arg` has `param`'s dtype and shape, is row-major and, in device memory, lives
    on GPU `device_ordinal` at a 16-byte aligned address."""
    if arg.dtype != np.dtype(param.dtype):
        raise ArgumentError(f"{what} is {arg.dtype.name} but the kernel was traced for {np.dtype(param.dtype).name}")
    if tuple(arg.shape) != tuple(param.shape):
        raise ArgumentError(f"{what} has shape {tuple(arg.shape)} but the kernel was traced for {tuple(param.shape)}")
    if not arg.is_row_major:
        raise ArgumentError(f"{what} is not a contiguous row-major array (element strides {arg.strides}); "
                            f"{_CONTIGUOUS_HINT}")
    if arg.host is None and arg.device != device_ordinal:
        raise ArgumentError(f"{what} is on cuda:{arg.device} but the kernel runs on cuda:{device_ordinal}; "
                            "move all device arrays to one GPU")
    if arg.host is None and arg.ptr % 16:
        raise ArgumentError(f"{what} starts at device address {arg.ptr:#x}, which is not 16-byte aligned "
                            "(TMA needs it); pass an array that starts on a 16-byte boundary, e.g. a fresh copy")


def shape_and_dtype(x, what):
    """(shape, numpy dtype) of an array argument named `what`; ArgumentError for anything that is not an array
    tilegemm reads (numpy, or a DLPack array: torch, cupy, jax, DeviceArray)."""
    if isinstance(x, np.ndarray):
        return x.shape, x.dtype
    if library_of(x) == "torch" and getattr(x, "is_meta", False):
        raise ArgumentError(f"{what} is a torch meta tensor, which has a shape but no data: pass a tensor on a GPU "
                            "or the CPU (for tracing alone, pass tg.ShapeDtype(x.shape, x.dtype))")
    if hasattr(x, "__dlpack__") and hasattr(x, "shape") and hasattr(x, "dtype"):
        return tuple(x.shape), _numpy_dtype(x.dtype)
    raise ArgumentError(f"{what} is {_a(type(x).__name__)}, not an array: pass a numpy array or a device array "
                        "(torch, cupy, jax, tg.runtime.DeviceArray)")


def host_array(x, what, why):
    """`x` as a numpy array without copying device memory: ArgumentError (saying `why` host memory is needed)
    for arrays that live on a GPU."""
    if isinstance(x, np.ndarray):
        return x
    device_type, _ = x.__dlpack_device__()
    if device_type not in (dlpack.CPU, dlpack.CUDA_HOST):
        raise ArgumentError(f"{what} lives on a GPU, but {why}: pass a numpy array or a host tensor (x.cpu())")
    dtype = _numpy_dtype(x.dtype)
    if library_of(x) == "torch" and dtype == ml_dtypes.bfloat16:   # numpy's DLPack has no bfloat16: read the bits
        return np.from_dlpack(x.view(sys.modules["torch"].int16)).view(dtype)
    return np.from_dlpack(x)


def _numpy_dtype(dtype):
    """A numpy dtype for an array library's dtype object (torch.float16 -> float16); the name itself if unknown."""
    if isinstance(dtype, np.dtype):
        return dtype
    name = str(dtype).rsplit(".", 1)[-1]
    try:
        return np.dtype(getattr(ml_dtypes, name, name))
    except TypeError:
        return name


def _a(noun):
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def element_strides(x):
    """The element strides of an array argument (numpy, torch, cupy, or anything DLPack reads); DeviceArrays and
    jax arrays are row-major."""
    if isinstance(x, np.ndarray) or library_of(x) == "cupy":
        return tuple(s // x.itemsize for s in x.strides)
    if library_of(x) == "torch":
        return tuple(x.stride())
    if library_of(x) in ("tilegemm", "jax", "jaxlib"):
        return dlpack.row_major_strides(tuple(x.shape))
    return adapt(x, "?", None).strides

"""The array libraries of the launch fast path: reading their arrays, their current stream, new outputs.

DLPack (arrays.adapt) reads any array but costs tens of microseconds a call. For
the arrays users pass most — torch tensors, cupy arrays, tilegemm DeviceArrays —
a Reader reads what a launch needs straight from the object. The signature
(shape, dtype, strides, device) keys a call's prepared launch: equal signatures
mean the same checks pass, so a repeated call only reads pointers. A Reader also
knows its library's current stream and GPU (so a kernel is ordered with the
library's work) and how it makes the arrays a call returns.
"""
import sys

import numpy as np
from cuda.bindings import driver as cu

from .device import get_device, primary_context
from .driver import call, capture_id
from .memory import DeviceArray
from .stream import Stream


class Reader:
    """How one array type is read: `signature(x)` (hashable, the GPU's ordinal among its parts), `pointer(x)`
    (int device address) and `gpu(x)` (the GPU's ordinal, or None for host memory); `stream(ordinal)` and
    `is_current(ordinal)` make functions reading the library's current stream handle and whether GPU `ordinal`
    is the current one; `outputs(params, device)` makes a function allocating a call's outputs,
    stream -> (arrays, pointers); `zeros(shape, dtype, ordinal, stream)` makes an array of zeros on GPU `ordinal`,
    ordered on `stream` (a handle); `capture(stream)` is the id of the CUDA graph capture recording the work of
    `stream`, the library's current one (its work recorded, not run), or None where it is not captured."""
    library = None

    @staticmethod
    def stream(ordinal):
        return lambda: 0   # the legacy default stream

    @staticmethod
    def is_current(ordinal):
        context = int(primary_context(ordinal))
        return lambda: int(call(cu.cuCtxGetCurrent)) == context

    @staticmethod
    def outputs(params, device):
        def allocate(stream):
            arrays = [DeviceArray.empty(p.shape, p.dtype, device, Stream(stream)) for p in params]
            return arrays, [a.ptr for a in arrays]
        return allocate

    @staticmethod
    def capture(stream):
        return None   # tilegemm's own arrays are not captured (their allocation would fail in a capture)

    @staticmethod
    def zeros(shape, dtype, ordinal, stream):
        array = DeviceArray.empty(shape, dtype, get_device(ordinal), Stream(stream))
        array.buffer.fill(0, Stream(stream))
        return array

    @staticmethod
    def signature(x):
        raise NotImplementedError

    @staticmethod
    def pointer(x):
        raise NotImplementedError

    @staticmethod
    def gpu(x):
        raise NotImplementedError


class TorchReader(Reader):
    library = "torch"

    @staticmethod
    def signature(x):
        return x.shape, x.dtype, x.stride(), x.get_device()   # get_device: -1 off the GPU, cheaper than .device

    @staticmethod
    def pointer(x):
        return x.data_ptr()

    @staticmethod
    def gpu(x):
        return x.get_device() if x.is_cuda else None

    @staticmethod
    def stream(ordinal):
        torch = sys.modules["torch"]
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)   # ~20x cheaper than torch.cuda.current_stream
        if raw is not None:
            return lambda: raw(ordinal)
        return lambda: torch.cuda.current_stream(ordinal).cuda_stream

    @staticmethod
    def is_current(ordinal):
        torch = sys.modules["torch"]
        current = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
        return lambda: current() == ordinal   # torch keeps its current GPU's primary context current

    @staticmethod
    def outputs(params, device):
        torch = sys.modules["torch"]
        specs = [(tuple(p.shape), getattr(torch, np.dtype(p.dtype).name)) for p in params]
        ordinal = device.ordinal   # an int device: 2.3 us a call against 3.8 for a torch.device (RESULTS.md run 30)

        def allocate(stream):
            arrays = [torch.empty(shape, dtype=dtype, device=ordinal) for shape, dtype in specs]
            return arrays, [t.data_ptr() for t in arrays]
        return allocate

    @staticmethod
    def capture(stream):
        capturing = sys.modules["torch"].cuda.is_current_stream_capturing()   # cheaper than asking the driver
        return capture_id(stream) if capturing else None

    @staticmethod
    def zeros(shape, dtype, ordinal, stream):
        """Outside torch's memory pools (cuMemAlloc'd, viewed through DLPack): torch.compile's CUDA graphs require
        every live tensor of their pool to be one of their outputs. In a capture, where cuMemAlloc may not run,
        from the graph's pool, on torch's current stream (which `stream` is)."""
        torch = sys.modules["torch"]
        if torch.cuda.is_current_stream_capturing():
            return torch.zeros(shape, dtype=getattr(torch, np.dtype(dtype).name), device=ordinal)
        return torch.from_dlpack(Reader.zeros(shape, dtype, ordinal, stream))


class CupyReader(Reader):
    library = "cupy"

    @staticmethod
    def signature(x):
        return x.shape, x.dtype, x.strides, x.device.id

    @staticmethod
    def pointer(x):
        return x.data.ptr

    @staticmethod
    def gpu(x):
        return x.device.id

    @staticmethod
    def stream(ordinal):
        cupy = sys.modules["cupy"]
        return lambda: cupy.cuda.get_current_stream().ptr

    @staticmethod
    def capture(stream):
        return capture_id(stream)   # asked of the driver: the same for every CuPy version

    @staticmethod
    def zeros(shape, dtype, ordinal, stream):
        cupy = sys.modules["cupy"]   # on cupy's current stream, which `stream` is
        with cupy.cuda.Device(ordinal):
            return cupy.zeros(shape, dtype)


class DeviceArrayReader(Reader):
    library = "tilegemm"

    @staticmethod
    def signature(x):
        return x.shape, x.dtype, x.buffer.device.ordinal

    @staticmethod
    def pointer(x):
        return x.buffer.ptr

    @staticmethod
    def gpu(x):
        return x.buffer.device.ordinal


_BY_TYPE = {DeviceArray: DeviceArrayReader}


def register(array_type, reader):
    """Makes the fast path read arrays of exactly `array_type` with `reader` (a Reader subclass)."""
    _BY_TYPE[array_type] = reader


def reader_for(x):
    """The Reader of x's type, or None for arrays the fast path does not read (numpy, jax, other DLPack)."""
    kind = type(x)
    reader = _BY_TYPE.get(kind)
    if reader is None and kind not in _BY_TYPE:
        reader = _BY_TYPE[kind] = _find_reader(kind)
    return reader


def _find_reader(kind):
    torch, cupy = sys.modules.get("torch"), sys.modules.get("cupy")
    if torch is not None and issubclass(kind, torch.Tensor):
        return TorchReader
    if cupy is not None and issubclass(kind, cupy.ndarray):
        return CupyReader
    return None


def signature(arrays):
    """The call signature of `arrays` (a tuple), or None if the fast path cannot read one of them."""
    parts = []
    for x in arrays:
        reader = _BY_TYPE.get(type(x))
        if reader is None:
            return None
        parts.append(reader.signature(x))
    return tuple(parts)

"""Reading device arrays on the launch fast path: a cheap signature and the device address.

DLPack (arrays.adapt) reads any array but costs tens of microseconds a call. For
the arrays users pass most — torch tensors, cupy arrays, tilegemm DeviceArrays —
a Reader reads what a launch needs straight from the object. The signature
(shape, dtype, strides, device) keys a call's prepared launch: equal signatures
mean the same checks pass, so a repeated call only reads pointers.
"""
import sys

from .memory import DeviceArray


class Reader:
    """How one array type is read: `signature(x)` (hashable) and `pointer(x)` (int device address)."""
    library = None

    @staticmethod
    def signature(x):
        raise NotImplementedError

    @staticmethod
    def pointer(x):
        raise NotImplementedError


class TorchReader(Reader):
    library = "torch"

    @staticmethod
    def signature(x):
        return x.shape, x.dtype, x.stride(), x.device

    @staticmethod
    def pointer(x):
        return x.data_ptr()


class CupyReader(Reader):
    library = "cupy"

    @staticmethod
    def signature(x):
        return x.shape, x.dtype, x.strides, x.device.id

    @staticmethod
    def pointer(x):
        return x.data.ptr


class DeviceArrayReader(Reader):
    library = "tilegemm"

    @staticmethod
    def signature(x):
        return x.shape, x.dtype, x.buffer.device.ordinal

    @staticmethod
    def pointer(x):
        return x.buffer.ptr


_BY_TYPE = {DeviceArray: DeviceArrayReader}


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

"""Device memory: raw buffers (alloc, free, copies, fill) and DeviceArray, a typed array that DLPack can export."""
import math
import weakref

import numpy as np
from cuda.bindings import driver as cu

from . import dlpack
from .device import current_device, primary_context
from .driver import call
from .stream import Event, Stream


def _free(ordinal, ptr):
    """Frees `ptr` in its GPU's primary context without changing the caller's current context."""
    call(cu.cuCtxPushCurrent, primary_context(ordinal))
    try:
        call(cu.cuMemFree, ptr)
    finally:
        call(cu.cuCtxPopCurrent)


POISON = 0xFF  # every byte 0xFF is NaN in f16, bf16 and f32


def fill_bytes(ptr, nbytes, byte, stream=None):
    """Queues setting `nbytes` bytes of device memory at `ptr` to `byte` on `stream`."""
    call(cu.cuMemsetD8Async, ptr, byte, nbytes, (stream or Stream.default()).handle)


class DeviceBuffer:
    """`nbytes` of memory on one GPU (cuMemAlloc, 256-byte aligned); freed by free() or when collected."""

    def __init__(self, nbytes, device=None):
        self.device = device or current_device()
        self.device.activate()
        self.nbytes = int(nbytes)
        self.ptr = int(call(cu.cuMemAlloc, self.nbytes))
        self._free = weakref.finalize(self, _free, self.device.ordinal, self.ptr)

    def free(self):
        """Returns the memory to the driver now (idempotent)."""
        self._free()

    def upload(self, host, stream=None):
        """Queues a copy of the numpy array `host` (exactly nbytes) into this buffer."""
        host = np.ascontiguousarray(host)
        self._check_size(host)
        call(cu.cuMemcpyHtoDAsync, self.ptr, host.ctypes.data, host.nbytes, (stream or Stream.default()).handle)

    def download(self, host, stream=None):
        """Copies this buffer into the contiguous numpy array `host` and waits for the copy."""
        if not host.flags.c_contiguous:
            raise ValueError("download needs a C-contiguous numpy array")
        self._check_size(host)
        stream = stream or Stream.default()
        call(cu.cuMemcpyDtoHAsync, host.ctypes.data, self.ptr, host.nbytes, stream.handle)
        stream.synchronize()

    def fill(self, byte, stream=None):
        """Queues setting every byte to `byte` (e.g. 0xFF to poison outputs before a kernel writes them)."""
        fill_bytes(self.ptr, self.nbytes, byte, stream)

    def _check_size(self, host):
        if host.nbytes != self.nbytes:
            raise ValueError(f"host array has {host.nbytes} bytes but the device buffer has {self.nbytes}")


class DeviceArray:
    """A row-major array in a DeviceBuffer, written on `stream`: what kernels return for non-torch device
    inputs. Zero-copy to torch/cupy/jax via DLPack (`torch.from_dlpack(x)`); `.numpy()` copies to the host."""

    def __init__(self, buffer, shape, dtype, stream=None):
        self.buffer = buffer
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.stream = stream or Stream.default()

    @classmethod
    def empty(cls, shape, dtype, device=None, stream=None):
        """An uninitialised array on `device` (the current GPU if None)."""
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        return cls(DeviceBuffer(nbytes, device), shape, dtype, stream)

    @classmethod
    def from_numpy(cls, array, device=None, stream=None):
        """A device copy of the numpy array `array`."""
        out = cls.empty(array.shape, array.dtype, device, stream)
        out.buffer.upload(array, out.stream)
        return out

    @property
    def ptr(self):
        return self.buffer.ptr

    @property
    def device(self):
        return self.buffer.device

    def copy_to_host(self):
        """A numpy copy of the array (waits for the work queued on its stream)."""
        host = np.empty(self.shape, self.dtype)
        self.buffer.download(host, self.stream)
        return host

    numpy = copy_to_host

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Exports the memory without copying; a consumer on another stream waits for this array's stream."""
        if copy or dl_device not in (None, self.__dlpack_device__()):
            raise BufferError("a DeviceArray exports only its own device memory, without copying")
        consumer = cu.CU_STREAM_LEGACY if stream is None else stream   # DLPack: None names the legacy stream
        if consumer not in (-1, self.stream.dlpack_id):
            Stream(consumer).wait(Event(timing=False).record(self.stream))
        return dlpack.export(self.ptr, self.device.ordinal, self.shape, self.dtype, owner=self)

    def __dlpack_device__(self):
        return (dlpack.CUDA, self.device.ordinal)

    def __repr__(self):
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device=cuda:{self.device.ordinal})"

"""DLPack through ctypes: read what a `__dlpack__` capsule describes, and export device memory as one.

Only the unversioned "dltensor" capsule (DLPack 0.x ABI) is used; every library
tilegemm talks to (torch, cupy, jax, numpy) produces and accepts it.
"""
import ctypes
from dataclasses import dataclass

import ml_dtypes
import numpy as np

CPU, CUDA, CUDA_HOST, CUDA_MANAGED = 1, 2, 3, 13
_NAME = b"dltensor"

_DTYPE_CODES = {np.dtype(t): code_bits for t, code_bits in [
    (np.int8, (0, 8)), (np.int16, (0, 16)), (np.int32, (0, 32)), (np.int64, (0, 64)),
    (np.uint8, (1, 8)), (np.uint16, (1, 16)), (np.uint32, (1, 32)), (np.uint64, (1, 64)),
    (np.float16, (2, 16)), (np.float32, (2, 32)), (np.float64, (2, 64)),
    (ml_dtypes.bfloat16, (4, 16)), (np.bool_, (6, 8))]}
_DTYPES = {code_bits: dtype for dtype, code_bits in _DTYPE_CODES.items()}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]

# Private prototypes (not ctypes.pythonapi's shared ones, whose argtypes other code may set).
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_raw_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_raw_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_new_capsule = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi))


@dataclass(frozen=True)
class TensorInfo:
    """What a DLPack capsule says about an array; `dtype` is None for element types numpy cannot name."""
    ptr: int
    device_type: int
    device_id: int
    shape: tuple
    strides: tuple   # in elements
    dtype: object
    type_code: tuple  # (code, bits, lanes), for messages about unknown element types


def read(capsule):
    """Describes the array behind an unconsumed "dltensor" capsule (the capsule keeps it alive)."""
    tensor = ctypes.cast(_capsule_pointer(capsule, _NAME), ctypes.POINTER(_Managed)).contents.dl_tensor
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    strides = (tuple(tensor.strides[i] for i in range(tensor.ndim)) if tensor.strides
               else row_major_strides(shape))
    code = (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes)
    dtype = _DTYPES.get(code[:2]) if code[2] == 1 else None
    return TensorInfo((tensor.data or 0) + tensor.byte_offset, tensor.device.device_type, tensor.device.device_id,
                      shape, strides, dtype, code)


def row_major_strides(shape):
    """Element strides of a compact row-major (C-order) array of `shape`."""
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


# Exported tensors still held by a consumer: struct address -> (struct, shape, strides, owner).
_exports = {}


def _release(address, exports=_exports):
    """Forgets an exported tensor, letting its owner go."""
    exports.pop(address, None)


# The two callbacks below may run while the interpreter shuts down (a consumer freeing a tensor it held till then),
# after this module's globals are cleared: they reach what they use through default arguments, and their C thunks
# are never freed (a reference taken for good), so that a late call neither fails nor jumps into freed memory.
@_Deleter
def _deleter(managed, release=_release, addressof=ctypes.addressof):
    """Called by the consumer when it is done with the memory."""
    release(addressof(managed.contents))


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule, release=_release, is_valid=_raw_capsule_is_valid, pointer=_raw_capsule_pointer,
                        name=_NAME):
    """A capsule nobody consumed (still named "dltensor") releases its tensor when it is collected."""
    if is_valid(capsule, name):
        release(pointer(capsule, name))


for _callback in (_deleter, _capsule_destructor):
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(_callback))


def export(ptr, device_id, shape, dtype, owner):
    """A "dltensor" capsule for row-major CUDA memory at `ptr`; `owner` is kept alive until the consumer is done."""
    if np.dtype(dtype) not in _DTYPE_CODES:
        raise BufferError(f"DLPack has no element type for {np.dtype(dtype)}")
    code, bits = _DTYPE_CODES[np.dtype(dtype)]
    c_shape = (ctypes.c_int64 * len(shape))(*shape)
    c_strides = (ctypes.c_int64 * len(shape))(*row_major_strides(shape))
    managed = _Managed(_Tensor(ptr, _Device(CUDA, device_id), len(shape), _DataType(code, bits, 1),
                               c_shape, c_strides, 0), None, _deleter)
    address = ctypes.addressof(managed)
    _exports[address] = (managed, c_shape, c_strides, owner)
    return _new_capsule(address, _NAME, ctypes.cast(_capsule_destructor, ctypes.c_void_p))

"""XLA's FFI for custom calls, from Python through ctypes: the C structures of xla/ffi/api/c_api.h that a handler
reads, and handlers made of Python functions (no compiled code).

A handler is a C function `XLA_FFI_Error* handler(XLA_FFI_CallFrame*)`. XLA
first calls it with a metadata extension, asking which FFI version and traits
it has (when it compiles a program that calls it), and then at every execution
of a custom call to its target, with the call's buffers (device pointers on a
GPU, host pointers on the CPU), attributes and an execution context that
yields the stream and the device. The structures only grow from one FFI
version to the next, so the fields read here stay where they are; the API
table's length is checked before one of its functions is used.
"""
import ctypes
import traceback
from dataclasses import dataclass

import jax
import ml_dtypes
import numpy as np

c_enum = ctypes.c_int   # the C enums of c_api.h


class ExtensionBase(ctypes.Structure):
    pass


ExtensionBase._fields_ = [("struct_size", ctypes.c_size_t), ("type", c_enum),
                          ("next", ctypes.POINTER(ExtensionBase))]
METADATA_EXTENSION = 1   # XLA_FFI_Extension_Metadata


class ApiVersion(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("major_version", ctypes.c_int), ("minor_version", ctypes.c_int)]


class Metadata(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("api_version", ApiVersion), ("traits", ctypes.c_uint32)]


class MetadataExtension(ctypes.Structure):
    _fields_ = [("extension_base", ExtensionBase), ("metadata", ctypes.POINTER(Metadata))]


class Buffer(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p), ("dtype", c_enum),
                ("data", ctypes.c_void_p), ("rank", ctypes.c_int64), ("dims", ctypes.POINTER(ctypes.c_int64))]


class Args(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p), ("size", ctypes.c_int64),
                ("types", ctypes.POINTER(c_enum)), ("args", ctypes.POINTER(ctypes.c_void_p))]


class Rets(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p), ("size", ctypes.c_int64),
                ("types", ctypes.POINTER(c_enum)), ("rets", ctypes.POINTER(ctypes.c_void_p))]


class ByteSpan(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class Scalar(ctypes.Structure):
    _fields_ = [("dtype", c_enum), ("value", ctypes.c_void_p)]


class Attrs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p), ("size", ctypes.c_int64),
                ("types", ctypes.POINTER(c_enum)), ("names", ctypes.POINTER(ctypes.POINTER(ByteSpan))),
                ("attrs", ctypes.POINTER(ctypes.c_void_p))]


class ErrorCreateArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("message", ctypes.c_char_p), ("errc", c_enum)]


class StreamGetArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("ctx", ctypes.c_void_p), ("stream", ctypes.c_void_p)]


class DeviceOrdinalGetArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("ctx", ctypes.c_void_p), ("device_ordinal", ctypes.c_int32)]


_Function = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)   # XLA_FFI_Error* fn(XLA_FFI_..._Args*)
_API_FUNCTIONS = ("error_create", "error_get_message", "error_destroy", "handler_register", "stream_get",
                  "type_register", "execution_context_get", "state_set", "state_get", "device_memory_allocate",
                  "device_memory_free", "thread_pool_schedule", "thread_pool_num_threads", "future_create",
                  "future_set_available", "future_set_error", "run_id_get", "device_ordinal_get")


class Api(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("api_version", ApiVersion), ("internal_api", ctypes.c_void_p),
                *[(name, _Function) for name in _API_FUNCTIONS]]


class CallFrame(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.POINTER(ExtensionBase)),
                ("api", ctypes.POINTER(Api)), ("ctx", ctypes.c_void_p), ("stage", c_enum), ("args", Args),
                ("rets", Rets), ("attrs", Attrs)]


def struct_size(cls):
    """XLA_FFI_STRUCT_SIZE: the bytes of a structure up to the end of its last field (no trailing padding)."""
    last = getattr(cls, cls._fields_[-1][0])
    return last.offset + last.size


# XLA_FFI_DataType codes of the element types tilegemm kernels take.
DTYPES = {4: np.dtype(np.int32), 10: np.dtype(np.float16), 11: np.dtype(np.float32),
          16: np.dtype(ml_dtypes.bfloat16), 1: np.dtype(np.bool_)}
_S64 = 5          # XLA_FFI_DataType_S64
_SCALAR = 3       # XLA_FFI_AttrType_SCALAR
_INTERNAL = 13    # XLA_FFI_Error_Code_INTERNAL


@dataclass(frozen=True)
class Array:
    """One buffer of a call: its address (device memory on a GPU), shape and dtype."""
    ptr: int
    shape: tuple
    dtype: np.dtype

    def numpy(self):
        """The buffer as a numpy array (host memory: the CPU platform's buffers)."""
        size = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        memory = (ctypes.c_char * size).from_address(self.ptr) if size else bytearray()
        return np.frombuffer(memory, self.dtype).reshape(self.shape)


class Call:
    """What a handler reads off one execution's call frame: `inputs` and `outputs` (Arrays), `attributes`
    (name -> int, the int64 scalars), and on a GPU `stream()` and `device_ordinal()`."""

    def __init__(self, frame):
        self._frame = frame
        self.inputs = [_array(frame.args.args[i]) for i in range(frame.args.size)]
        self.outputs = [_array(frame.rets.rets[i]) for i in range(frame.rets.size)]
        self.attributes = dict(_attribute(frame.attrs, i) for i in range(frame.attrs.size))

    def stream(self):
        """The CUstream (an int) XLA runs this call on."""
        args = StreamGetArgs(struct_size(StreamGetArgs), None, self._frame.ctx, None)
        _function(self._frame.api, "stream_get")(ctypes.addressof(args))
        return args.stream or 0

    def device_ordinal(self):
        """The CUDA ordinal of the GPU XLA runs this call on."""
        args = DeviceOrdinalGetArgs(struct_size(DeviceOrdinalGetArgs), None, self._frame.ctx, 0)
        _function(self._frame.api, "device_ordinal_get")(ctypes.addressof(args))
        return args.device_ordinal


def _array(address):
    buffer = ctypes.cast(address, ctypes.POINTER(Buffer)).contents
    dtype = DTYPES.get(buffer.dtype)
    if dtype is None:
        raise TypeError(f"a buffer has XLA element type {buffer.dtype}, which tilegemm kernels do not take")
    return Array(buffer.data or 0, tuple(buffer.dims[i] for i in range(buffer.rank)), dtype)


def _attribute(attrs, index):
    span = attrs.names[index].contents
    name = ctypes.string_at(span.ptr, span.len).decode()
    scalar = ctypes.cast(attrs.attrs[index], ctypes.POINTER(Scalar)).contents if attrs.types[index] == _SCALAR \
        else None
    if scalar is None or scalar.dtype != _S64:
        raise TypeError(f"attribute {name!r} is not an int64 scalar")
    return name, ctypes.c_int64.from_address(scalar.value).value


def _function(api, name):
    """The API table's function `name` (an Api field), after checking this XLA's table is long enough to hold it."""
    field = getattr(Api, name)
    if field.offset + field.size > api.contents.struct_size:
        raise RuntimeError(f"this jaxlib's XLA FFI API has no {name}; tilegemm.jax needs a newer jaxlib")
    function = getattr(api.contents, name)

    def call(args_address):
        if function(args_address):
            raise RuntimeError(f"the XLA FFI's {name} failed")
    return call


_Handler = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(CallFrame))


def handler(execute):
    """A C handler (keep it alive: XLA keeps only its address) that answers XLA's metadata query and runs
    `execute(Call)` at every execution; an exception becomes an XLA error carrying its message."""
    def handle(frame_pointer):
        frame = frame_pointer.contents
        api = frame.api
        try:
            extension = frame.extension_start
            if extension and extension.contents.type == METADATA_EXTENSION:
                _describe(ctypes.cast(extension, ctypes.POINTER(MetadataExtension)).contents, api.contents)
                return None
            execute(Call(frame))
            return None
        except BaseException as e:   # nothing may unwind into XLA's C++ frames
            message = "".join(traceback.format_exception_only(type(e), e)).strip()
            args = ErrorCreateArgs(struct_size(ErrorCreateArgs), None, message.encode(), _INTERNAL)
            return api.contents.error_create(ctypes.addressof(args))
    return _Handler(handle)


def _describe(extension, api):
    """Fills in the metadata XLA asks for: the FFI version this handler speaks (the runtime's own, whose
    structures hold every field read here) and no traits (so XLA never captures it into a CUDA graph)."""
    metadata = extension.metadata.contents
    metadata.api_version = ApiVersion(struct_size(ApiVersion), None, api.api_version.major_version,
                                      api.api_version.minor_version)
    metadata.traits = 0


def register(target, platform, c_handler):
    """Registers the C handler `c_handler` for custom calls to `target` on `platform` ("cpu" or "CUDA")."""
    jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(ctypes.cast(c_handler, ctypes.c_void_p).value),
                                platform=platform)

"""The launch fast path: CuTe DSL's compiled host function called with an argument block built once.

The host function (the generated `@cute.jit` entry, compiled) builds the TMA
descriptors from the pointers and launches the kernel. It takes one packed
array of addresses: one per argument, each pointing at that argument's value
(a device address, an int32, the stream handle), then the address of the cell
it writes its CUDA error code into. Calling it the documented way converts
every Python argument on every call; a Launcher keeps one such block per
compiled kernel and a call only writes the new pointer values and the stream.
"""
import ctypes
import threading

from ..errors import LaunchError
from . import cache


class Launcher:
    """Launches one compiled kernel: `launcher(pointers, stream)` with int device addresses (inputs then
    outputs) and an int CUstream handle; returns without synchronising, raises LaunchError on a CUDA error."""

    def __init__(self, executable, num_pointers, constants, name):
        self.name = name
        self._executor = executable.to()   # loads the kernel's CUDA library (context-free: every GPU)
        self._pointers = [ctypes.c_void_p(0) for _ in range(num_pointers)]
        self._constants = [ctypes.c_int32(int(v)) for v in constants]
        self._stream = ctypes.c_void_p(0)
        self._result = self._executor.cuda_result
        cells = [*self._pointers, *self._constants, self._stream, self._result]
        self._block = (ctypes.c_void_p * len(cells))(*[ctypes.addressof(c) for c in cells])
        self._host_function = self._executor.capi_func
        self._lock = threading.Lock()   # the block is shared: one launch through it at a time
        _check_packing(executable, self._block, len(cells) - 1)

    def __call__(self, pointers, stream):
        with self._lock:
            for cell, address in zip(self._pointers, pointers):
                cell.value = address
            self._stream.value = stream
            self._host_function(self._block)
            error = self._result.value
        if error:
            from cuda.bindings import runtime
            raise LaunchError(f"launching {self.name} failed with {runtime.cudaError_t(error).name}")


def _check_packing(executable, block, count):
    """Raises CompileError unless CuTe DSL packs this function's arguments as a Launcher does: `count` addresses,
    each pointing at its argument's value (checked against the DSL's own packing of sample values)."""
    import cutlass
    import cutlass.cute as cute
    from cuda.bindings import driver as cu
    from cutlass.cute.runtime import make_ptr

    samples, values = [], []
    for i, annotation in enumerate(executable.execution_args._meta.annotated_types):
        if annotation is cutlass.Int32:
            samples.append(cutlass.Int32(7 + i))
        elif annotation is cu.CUstream:
            samples.append(cu.CUstream(7 + i))
        else:
            samples.append(make_ptr(cutlass.Float16, 16 * (7 + i), cute.AddressSpace.gmem, assumed_align=16))
        values.append(7 + i if annotation in (cutlass.Int32, cu.CUstream) else 16 * (7 + i))
    theirs, _ = executable.execution_args.generate_execution_args(tuple(samples), {})
    read = [ctypes.c_uint32.from_address(int(a if isinstance(a, int) else a.value)).value for a in theirs]
    if len(theirs) != count or read != [v & 0xFFFFFFFF for v in values]:
        from ..errors import CompileError
        raise CompileError(f"nvidia-cutlass-dsl {cache.cutlass_dsl_version()} does not pass arguments as "
                           "tilegemm's launcher expects (one address per argument, pointing at its value)")

"""tilegemm kernels as XLA custom calls: one FFI target, "tilegemm_call", whose handlers run a call site.

A call site is one kernel at one set of input shapes (and debug switches),
numbered in this process; a custom call names its site by the int64 attribute
`site` (a random number of this process, then the site's), so compiled programs
that hold these calls belong to this process (no jax.export, no persistent
compilation cache: another process's site is an error, never another kernel). The GPU handler launches the
site's compiled kernel on XLA's stream with the buffers' device pointers
(compiled on the first execution on each GPU, then reused); the CPU handler
runs the numpy interpreter on XLA's host buffers. Both are Python functions
that XLA calls through ctypes (tilegemm.jax.xla_ffi).
"""
import secrets
import threading

import jax
import numpy as np
from cuda.bindings import driver as cu

from ..errors import ArgumentError
from ..runtime import get_device, require_supported
from ..runtime.driver import call as cuda_call
from ..runtime.hangs import run_compiled
from ..runtime.launch import enter_context, poison_outputs
from ..runtime.stream import Stream
from . import xla_ffi

TARGET = "tilegemm_call"

# XLA runs the custom calls of several devices (a mesh under shard_map) on threads of their own, at once; tracing,
# lowering and interpreting a kernel are not thread-safe (the tracer's state is process-wide), so they take turns.
_host_work = threading.Lock()


class Site:
    """One kernel at input shapes `in_specs` with debug `switches`, as custom calls name it (by `key`).
    `interpret(*arrays)` runs it in the numpy interpreter; `kernel_for_gpu()` is the tg.Kernel to compile for
    the current GPU."""

    def __init__(self, key, name, in_specs, out_specs, interpret, kernel_for_gpu, switches):
        self.key = key
        self.name = name
        self.in_specs = in_specs
        self.out_specs = out_specs
        self.interpret = interpret
        self.kernel_for_gpu = kernel_for_gpu
        self.switches = switches
        self._compiled = {}   # CUDA ordinal -> (CompiledKernel, Device)

    def run_on_gpu(self, call):
        """Launches on XLA's stream, reading and writing the device buffers of `call` (an xla_ffi.Call)."""
        buffers = call.inputs + call.outputs
        for i, buffer in enumerate(buffers):
            if buffer.ptr % 16:
                raise ArgumentError(f"{self.name}: XLA's buffer {i} starts at {buffer.ptr:#x}, which is not 16-byte "
                                    "aligned (TMA needs it)")
        ordinal, stream = call.device_ordinal(), call.stream()
        switched = enter_context(ordinal)
        try:
            compiled, device = self._compiled_for(ordinal)
            pointers = [b.ptr for b in buffers]
            if self.switches.poison_outputs:
                poison_outputs(self.out_specs, pointers[len(call.inputs):], Stream(stream))
            run_compiled(compiled, pointers, stream, device, self.name)
        finally:
            if switched:
                cuda_call(cu.cuCtxPopCurrent)

    def _compiled_for(self, ordinal):
        """(CompiledKernel, Device) for GPU `ordinal`, compiled on first use (its context is current)."""
        with _host_work:
            if ordinal not in self._compiled:
                device = get_device(ordinal)
                require_supported(device)
                lowered = self.kernel_for_gpu().lower(*self.in_specs, arch=device.arch, debug=self.switches)
                self._compiled[ordinal] = lowered.compile(), device
            return self._compiled[ordinal]

    def run_in_interpreter(self, call):
        """Runs the numpy interpreter on the host buffers of `call` and writes its outputs into them."""
        with _host_work:
            results = self.interpret(*(a.numpy() for a in call.inputs))
        for target, result in zip(call.outputs, results if isinstance(results, tuple) else (results,)):
            target.numpy()[...] = result


_PROCESS = secrets.randbits(31)   # the high half of this process's site keys: another process's are not ours
_sites = []    # the Sites of this process, by the low half of their keys
_keys = {}     # what a site is (kernel, shapes, switches) -> its key
_lock = threading.Lock()


def site(identity, make):
    """The Site of `identity` (hashable), made by `make(key)` the first time it is asked for."""
    with _lock:
        key = _keys.get(identity)
        if key is None:
            key = _keys[identity] = _PROCESS << 32 | len(_sites)
            _sites.append(make(key))
        return _sites[key & 0xFFFFFFFF]


def _site_of(call):
    key = call.attributes.get("site", -1)
    if key >> 32 != _PROCESS or (key & 0xFFFFFFFF) >= len(_sites):
        raise ArgumentError(f"{TARGET}: call site {key:#x} was not made by this process; programs holding "
                            "tilegemm calls run in the process that traced them (they cannot be exported or cached "
                            "across processes)")
    return _sites[key & 0xFFFFFFFF]


_HANDLERS = {"cpu": xla_ffi.handler(lambda call: _site_of(call).run_in_interpreter(call)),
             "CUDA": xla_ffi.handler(lambda call: _site_of(call).run_on_gpu(call))}
_registered = False


def custom_call(call_site, arrays):
    """The outputs (a list of jax arrays) of a custom call running `call_site` on `arrays`."""
    global _registered
    with _lock:
        if not _registered:
            for platform, handler in _HANDLERS.items():
                xla_ffi.register(TARGET, platform, handler)
            _registered = True
    results = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in call_site.out_specs]
    return jax.ffi.ffi_call(TARGET, results, vmap_method="sequential")(*arrays, site=np.int64(call_site.key))

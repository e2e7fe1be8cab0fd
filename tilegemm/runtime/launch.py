"""Launching compiled kernels: the general path (any arrays) and the prepared fast path (device arrays).

The general path reads every argument through DLPack or numpy, checks it,
uploads host inputs, allocates outputs and launches; host inputs get numpy
outputs back. A `PreparedCall` is made once for a kernel, a GPU and a call
signature of device arrays (readers.py); a repeated call only reads the
pointers, checks their alignment, allocates the outputs and launches on the
caller's stream.

`out=` (a list, one array per output; None: allocated) writes into the caller's
arrays, checked like inputs. With `poison=True` outputs are filled with NaN (POISON bytes)
before the kernel runs, so an element it fails to write shows up instead of
passing as stale memory (a debugging switch: tilegemm.debug). `aliases`
({input index: output index}, a kernel's `input_output_aliases`) launches an
output on its input's memory: it starts with the input's contents, is never
poisoned, and is returned in the input's array (a fresh numpy array for a host
input, which stays as it was).

Compiled kernels follow the `CompiledKernel` contract of tilegemm.lower:
`.params`, `.arch`, `compiled(*pointers, stream=)`, and `.launcher()` for the
fast path; this module knows nothing of how they were traced or compiled.
"""
import math

import numpy as np
from cuda.bindings import driver as cu

from ..errors import ArgumentError, LaunchError
from . import readers
from .arrays import adapt, check_arguments, check_output
from .device import current_device, get_device, primary_context, require_supported
from .driver import call
from .hangs import run_compiled
from .memory import POISON, DeviceArray, fill_bytes
from .stream import Stream


def launch_compiling(compile_for, arrays, name="kernel", out=None, poison=False, aliases=None):
    """Runs on `arrays` the kernel that `compile_for(arch)` returns for the GPU they live on (the current GPU for
    host arrays). Returns (outputs, device): numpy arrays for host inputs, torch tensors for torch inputs,
    DeviceArrays otherwise, or the arrays of `out` written in place; an aliased output is its input's array."""
    stream = launch_stream(arrays)
    args = [adapt(x, i, stream.dlpack_id) for i, x in enumerate(arrays)]
    device = _device_for(args)
    return _run(compile_for(device.arch), args, device, stream, name, out, poison, aliases or {}), device


def launch(compiled, *arrays, name="kernel", out=None, poison=False, aliases=None):
    """Runs an already compiled kernel (`kernel.lower(...).compile()`) on `arrays`; outputs as launch_compiling."""
    stream = launch_stream(arrays)
    args = [adapt(x, i, stream.dlpack_id) for i, x in enumerate(arrays)]
    return _run(compiled, args, _device_for(args), stream, name, out, poison, aliases or {})


def launch_stream(arrays):
    """The caller's stream: torch's current stream for torch CUDA tensors, cupy's for cupy arrays (so the
    kernel is ordered with the framework's work), else the legacy default stream."""
    for x in arrays:
        kind = readers.reader_for(x)
        if kind is not None and kind.library != "tilegemm" and kind.gpu(x) is not None:
            return Stream(kind.stream(kind.gpu(x))())
    return Stream.default()


def _device_for(args):
    """The GPU of the first device-memory argument, else the current GPU; it must run tilegemm kernels."""
    on_device = [a.device for a in args if a.host is None]
    device = get_device(on_device[0]) if on_device else current_device()
    require_supported(device)
    return device


def check_target(compiled, device, kernel_name):
    """Raises LaunchError if `compiled` was built for another architecture than `device` has."""
    if compiled.arch != device.arch:
        raise LaunchError(f"{kernel_name} was compiled for {compiled.arch} but {device} needs {device.arch}; "
                          f"lower it with arch={device.arch!r}")


def _run(compiled, args, device, stream, kernel_name, out, poison, aliases):
    """Checks, uploads host inputs, allocates outputs and launches on `stream`; numpy results for host inputs."""
    check_target(compiled, device, kernel_name)
    check_arguments(compiled.params, args, device.ordinal, kernel_name)
    out_params = [p for p in compiled.params if p.is_output]
    host_call = all(a.host is not None for a in args)
    out = [None] * len(out_params) if out is None else list(out)
    given = {j: check_output(p, adapt(o, f"out[{j}]", stream.dlpack_id), device.ordinal, kernel_name, host_call)
             for j, (p, o) in enumerate(zip(out_params, out)) if o is not None}
    switched = enter_context(device.ordinal)
    try:
        uploads = [DeviceArray.from_numpy(a.host, device, stream) if a.host is not None else None for a in args]
        pointers = [a.ptr if up is None else up.ptr for a, up in zip(args, uploads)]
        inputs = [a.keepalive[0] if up is None else up for a, up in zip(args, uploads)]
        placed = {j: (inputs[i], pointers[i]) for i, j in aliases.items()}
        if not host_call:
            placed.update({j: (out[j], arg.ptr) for j, arg in given.items()})
        torch_inputs = not host_call and {a.library for a in args if a.host is None} == {"torch"}
        kind = readers.TorchReader if torch_inputs else readers.Reader
        allocated = [j for j in range(len(out_params)) if j not in placed]
        fresh = zip(*kind.outputs([out_params[j] for j in allocated], device)(stream.handle))
        placed.update(zip(allocated, fresh))
        outputs, output_pointers = (list(x) for x in zip(*(placed[j] for j in range(len(out_params))))) \
            if out_params else ([], [])
        if poison:
            written = fresh_outputs(out_params, aliases)
            poison_outputs([out_params[j] for j in written], [output_pointers[j] for j in written], stream)
        if getattr(compiled, "hang_waits", None):
            run_compiled(compiled, pointers + output_pointers, int(stream.handle), device, kernel_name)
        else:
            compiled(*pointers, *output_pointers, stream=stream.handle)
        if host_call:
            results = [o.copy_to_host() for o in outputs]
            for j in given:
                np.copyto(out[j], results[j])
                results[j] = out[j]
            return results
        if any(up is not None for up in uploads):
            stream.synchronize()   # the uploaded copies are freed on return; the kernel must be done with them
        return outputs
    finally:
        if switched:
            call(cu.cuCtxPopCurrent)


def fresh_outputs(out_params, aliases):
    """Indices of the outputs that are not an input's memory (poisoned when asked): those no input is aliased to."""
    aliased = set(aliases.values())
    return [j for j in range(len(out_params)) if j not in aliased]


def poison_outputs(params, pointers, stream):
    """Queues filling every output with NaN bytes on `stream`."""
    for p, ptr in zip(params, pointers):
        fill_bytes(ptr, math.prod(p.shape) * np.dtype(p.dtype).itemsize, POISON, stream)


def enter_context(ordinal):
    """Makes GPU `ordinal`'s primary context current for a launch unless it already is; returns whether it pushed
    it (then pop it after the launch: torch and cupy keep their notion of the current GPU in the context)."""
    context = primary_context(ordinal)
    if int(call(cu.cuCtxGetCurrent)) == int(context):
        return False
    call(cu.cuCtxPushCurrent, context)
    return True


# ----------------------------------------------------------------------------- the prepared fast path

def prepare(compiled, arrays, device, kernel_name, aliases=None):
    """A PreparedCall for calls with the signature of `arrays` (which the general path has checked), or None when
    the fast path cannot read them (host arrays, jax and other DLPack producers, mixed libraries). `aliases`: as
    launch_compiling's."""
    kinds = [readers.reader_for(x) for x in arrays]
    if not arrays or None in kinds or len({k.library for k in kinds}) != 1:
        return None
    if any(kind.gpu(x) != device.ordinal for kind, x in zip(kinds, arrays)):
        return None   # host memory (or another GPU, which the general path refuses): never the fast path
    return PreparedCall(compiled, kinds, device, kernel_name, aliases or {})


class PreparedCall:
    """One kernel's launch for one call signature of device arrays on one GPU (see the module docstring)."""

    def __init__(self, compiled, kinds, device, kernel_name, aliases=None):
        self.name = kernel_name
        self.compiled = compiled
        self.launcher = compiled.launcher()
        self.kinds = kinds
        self.device = device
        self.aliases = aliases or {}
        self.out_params = [p for p in compiled.params if p.is_output]
        self.fresh = fresh_outputs(self.out_params, self.aliases)
        self.allocate = kinds[0].outputs([self.out_params[j] for j in self.fresh], device)
        self.allocate_one = [kinds[0].outputs([p], device) for p in self.out_params]   # beside a partial out=
        self.current_stream = kinds[0].stream(device.ordinal)
        self.is_current = kinds[0].is_current(device.ordinal)
        samples = [allocate(0)[0][0] for allocate in self.allocate_one]
        self.out_readers = [readers.reader_for(o) for o in samples]
        self.out_signatures = [r.signature(o) for r, o in zip(self.out_readers, samples)]   # a fitting out=

    def __call__(self, arrays, out=None, poison=False):
        pointers = [kind.pointer(x) for kind, x in zip(self.kinds, arrays)]
        if any(p & 15 for p in pointers):
            self.refuse_misaligned(pointers)
        stream = self.current_stream()
        if out is None and not self.aliases:
            outputs, output_pointers = self.allocate(stream)
        else:
            outputs, output_pointers = self.place(arrays, pointers, out, stream)
        pointers += output_pointers
        if not poison and not self.compiled.hang_waits and self.is_current():
            self.launcher(pointers, stream)   # the common case: nothing but the launch
            return outputs
        switched = enter_context(self.device.ordinal)
        try:
            if poison:
                poison_outputs([self.out_params[j] for j in self.fresh], [output_pointers[j] for j in self.fresh],
                               Stream(stream))
            run_compiled(self.compiled, pointers, stream, self.device, self.name)
        finally:
            if switched:
                call(cu.cuCtxPopCurrent)
        return outputs

    def place(self, arrays, pointers, out, stream):
        """(outputs, their pointers): an aliased output is its input, an out= array itself, the rest fresh."""
        by_output = {j: i for i, j in self.aliases.items()}
        outputs, output_pointers = [], []
        for j, given in enumerate(out or [None] * len(self.out_params)):
            if j in by_output:
                array, pointer = arrays[by_output[j]], pointers[by_output[j]]
            elif given is not None:
                array, pointer = given, self.out_pointer(j, given, stream)
            else:
                (array,), (pointer,) = self.allocate_one[j](stream)
            outputs.append(array)
            output_pointers.append(pointer)
        return outputs, output_pointers

    def refuse_misaligned(self, pointers):
        for i, p in enumerate(pointers):
            if p % 16:
                raise ArgumentError(f"{self.name}: argument {i} starts at device address {p:#x}, which is not "
                                    "16-byte aligned (TMA needs it); pass an array that starts on a 16-byte "
                                    "boundary, e.g. a fresh copy")

    def out_pointer(self, index, array, stream):
        """The address of an out= array: read directly when it reads like a fresh output, else checked in full."""
        kind = self.out_readers[index]
        if readers.reader_for(array) is kind and kind.signature(array) == self.out_signatures[index]:
            pointer = kind.pointer(array)
            if pointer % 16 == 0:
                return pointer
        param = self.out_params[index]
        return check_output(param, adapt(array, f"out[{index}]", stream or 1), self.device.ordinal, self.name,
                            False).ptr

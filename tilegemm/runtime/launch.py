"""Launching kernels: adapt the arguments, pick the GPU and stream, compile once per signature, check, run.

Outputs are fresh arrays filled with NaN (POISON bytes) before the kernel runs,
so an element the kernel fails to write shows up instead of passing as stale
memory; set TILEGEMM_POISON=0 to skip the fill.

It runs compiled kernels (the `CompiledKernel` contract of tilegemm.lower:
`.params`, `.arch`, `compiled(*pointers, stream=)`) and knows nothing of how
they were traced or compiled.
"""
import math
import os
import sys

import numpy as np

from ..errors import LaunchError
from .arrays import adapt, check_arguments, library_of
from .device import current_device, get_device, require_supported
from .memory import POISON, DeviceArray, fill_bytes
from .stream import Stream

def launch_compiling(compile_for, arrays, name="kernel"):
    """Runs on `arrays` the kernel that `compile_for(arch)` returns for the GPU they live on (the current GPU for
    host arrays); outputs: numpy arrays for host inputs, torch tensors for torch inputs, DeviceArrays otherwise.
    Compiling and caching binaries is the caller's business (tg.kernel does it per signature)."""
    stream = launch_stream(arrays)
    args = [adapt(x, i, stream.dlpack_id) for i, x in enumerate(arrays)]
    device = _device_for(args)
    return _run(compile_for(device.arch), args, device, stream, name)


def launch(compiled, *arrays, name="kernel"):
    """Runs an already compiled kernel (`kernel.lower(...).compile()`) on `arrays`; outputs as launch_compiling."""
    stream = launch_stream(arrays)
    args = [adapt(x, i, stream.dlpack_id) for i, x in enumerate(arrays)]
    return _run(compiled, args, _device_for(args), stream, name)


def launch_stream(arrays):
    """torch's current stream when a torch CUDA tensor is among `arrays` (so the kernel is ordered with
    torch's work), else the legacy default stream."""
    for x in arrays:
        if library_of(x) == "torch" and x.is_cuda:
            return Stream(sys.modules["torch"].cuda.current_stream(x.device).cuda_stream)
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


def _run(compiled, args, device, stream, kernel_name):
    """Checks, uploads host inputs, allocates outputs and launches on `stream`; numpy results for host inputs."""
    check_target(compiled, device, kernel_name)
    check_arguments(compiled.params, args, device.ordinal, kernel_name)
    device.activate()
    pointers, uploads = [], []
    for a in args:
        if a.host is not None:
            uploads.append(DeviceArray.from_numpy(a.host, device, stream))
        pointers.append(a.ptr if a.host is None else uploads[-1].ptr)
    out_params = [p for p in compiled.params if p.is_output]
    outputs, output_pointers = _allocate_outputs(out_params, args, device, stream)
    if os.environ.get("TILEGEMM_POISON", "1") != "0":
        for p, ptr in zip(out_params, output_pointers):
            fill_bytes(ptr, math.prod(p.shape) * np.dtype(p.dtype).itemsize, POISON, stream)
    compiled(*pointers, *output_pointers, stream=stream.handle)
    if all(a.host is not None for a in args):
        return [out.copy_to_host() for out in outputs]
    if uploads:
        stream.synchronize()   # the uploaded copies are freed on return; the kernel must be done with them
    return outputs


def _allocate_outputs(params, args, device, stream):
    """Output arrays and their pointers: torch tensors when the device inputs are torch, DeviceArrays otherwise."""
    device_libraries = {a.library for a in args if a.host is None}
    if device_libraries == {"torch"}:
        torch = sys.modules["torch"]
        outputs = [torch.empty(p.shape, dtype=getattr(torch, np.dtype(p.dtype).name), device=f"cuda:{device.ordinal}")
                   for p in params]
        return outputs, [t.data_ptr() for t in outputs]
    outputs = [DeviceArray.empty(p.shape, p.dtype, device, stream) for p in params]
    return outputs, [a.ptr for a in outputs]

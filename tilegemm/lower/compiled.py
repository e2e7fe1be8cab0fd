"""A compiled kernel: its binary artifacts and a launcher taking raw device pointers.

The launcher calls CuTe DSL's own host code (it builds the TMA descriptors from
the pointers and launches with the right cluster and shared-memory attributes;
see launcher.py). That code is rebuilt from the compiled module's MLIR bytecode,
which the cache stores, so a process that loads a kernel from disk launches it
without recompiling.
"""
import functools
import importlib.util
import inspect
import sys
from pathlib import Path

import numpy as np

from ..errors import CompileError, LaunchError
from . import binutils
from .cute_names import cutlass_type
from .generated import LaunchDims, Param
from .launcher import Launcher


class CompiledKernel:
    """A kernel compiled for one arch: `params`, `arch`, `launch`, `ptx`, `cubin`, `sass`, `resources`.

    Call it as `kernel(*device_pointers, stream=stream)`: one int device address per
    Param (inputs then outputs) and a `cuda.bindings.driver.CUstream`; it launches
    on the current CUDA context and returns without synchronising.
    """

    def __init__(self, *, key, meta, ptx, cubin, module_bytecode, source_path, from_cache, executable=None):
        self.key = key
        self.arch = meta["arch"]
        self.params = params_of(meta)
        self.constants = tuple(tuple(c) for c in meta.get("constants", ()))
        waits = meta.get("hang_waits")
        self.hang_waits = tuple(waits) if waits is not None else None   # bounded barrier waits (tilegemm.debug)
        self.launch = LaunchDims(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in meta["launch"].items()})
        self.kernel_name = meta["kernel_name"]
        self.entry = meta["entry"]
        self.meta = meta
        self.ptx = ptx
        self.cubin = cubin
        self.module_bytecode = module_bytecode
        self.source_path = Path(source_path)
        self.from_cache = from_cache      # None (compiled by this process) or "disk"
        self._executable = executable
        self._launcher = None

    def __repr__(self):
        return f"<tilegemm CompiledKernel {self.entry} {self.arch} {self.launch.describe()}>"

    @functools.cached_property
    def sass(self):
        return binutils.sass(self.cubin)

    @functools.cached_property
    def resources(self):
        return binutils.resources(self.cubin, self.launch.smem_bytes)

    def __call__(self, *pointers, stream):
        """Launches on raw device pointers (inputs, outputs, then the hang report's when compiled with bounded
        barrier waits) and a CUstream."""
        expected = len(self.params) + bool(self.hang_waits)
        if len(pointers) != expected:
            names = ", ".join([p.name for p in self.params] + (["hang report"] if self.hang_waits else []))
            raise LaunchError(f"{self.entry} takes {expected} device pointers ({names}), got {len(pointers)}")
        self.launcher()([int(p) for p in pointers], int(stream))

    def launcher(self):
        """The Launcher of this kernel (built on first use; it loads the binary onto the GPUs)."""
        if self._launcher is None:
            self._launcher = Launcher(self.executable(), len(self.params) + bool(self.hang_waits),
                                      [v for _, v in self.constants], self.entry)
        return self._launcher

    def executable(self):
        """CuTe DSL's compiled host function (built once, from the module bytecode if need be)."""
        if self._executable is None:
            self._executable = load_executable(self.meta, self.module_bytecode, self.source_path)
        return self._executable


def _dtype(name):
    from ..lang import dtypes
    return dtypes.as_dtype(name)


def _cutlass_dtype(dtype):
    import cutlass
    return eval(cutlass_type(dtype), {"cutlass": cutlass})


def params_of(meta):
    """The Params a compiled kernel's meta.json lists."""
    return tuple(Param(p["name"], tuple(p["shape"]), np.dtype(_dtype(p["dtype"])), p["is_output"])
                 for p in meta["params"])


def fake_arguments(params, constants, hang_waits):
    """Placeholder host-function arguments for compiling without a GPU: pointers (address 0, 16-byte aligned),
    the hang report's when there are bounded barrier waits, and the Int32 constants."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr
    pointers = [make_ptr(_cutlass_dtype(p.dtype), 0, cute.AddressSpace.gmem, assumed_align=16) for p in params]
    if hang_waits:
        pointers.append(make_ptr(cutlass.Int32, 0, cute.AddressSpace.gmem, assumed_align=16))
    return pointers + [cutlass.Int32(value) for _, value in constants]


def import_source(path):
    """Imports a generated module from its file (CuTe DSL reads the source of what it compiles)."""
    path = Path(path)
    name = f"tilegemm_generated_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        del sys.modules[name]
        raise
    return module


def load_executable(meta, module_bytecode, source_path):
    """Rebuilds CuTe DSL's launcher from the compiled module: no tracing, no device compilation.

    Uses CuTe DSL 4.8's internals (the module is JIT-linked exactly as `cute.compile`
    does on a cache hit of its own file cache); the cache key includes the DSL version.
    """
    from cutlass._mlir import ir
    from cutlass.cutlass_dsl import CuTeDSL
    from cutlass.cutlass_dsl.cuda_jit_executor import CudaDialectJitCompiledFunction
    from cutlass.base_dsl.jit_executor import JitFunctionArtifacts

    module_py = import_source(source_path)
    entry = getattr(module_py, meta["entry"])
    signature = inspect.signature(getattr(entry, "__wrapped__", entry))
    dsl = CuTeDSL._get_dsl()
    try:
        context = ir.Context()
        with context:
            module = ir.Module.parse(module_bytecode)
            engine = dsl.compiler_provider.jit(module, shared_libs=dsl.get_shared_libs())
            capi = dsl._lookup_jit_entry(engine, meta["function_name"])
            fn = CudaDialectJitCompiledFunction(
                module, engine, capi, signature, meta["function_name"], {k: {} for k in meta["kernels"]},
                False, JitFunctionArtifacts(PTX=None, CUBIN=None, SASS=None, MLIR=None),
                dynamic_args=tuple(fake_arguments(params_of(meta), meta.get("constants", ()),
                                                  meta.get("hang_waits"))) + (None,),
                has_gpu_module=True)
    except Exception as e:
        raise CompileError(f"could not load the compiled kernel {meta['entry']} ({source_path}): {e}") from e
    fn._tilegemm_context = context   # the MLIR objects must outlive their context
    return fn

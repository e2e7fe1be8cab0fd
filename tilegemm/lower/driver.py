"""The compile driver: `Lowered` (generated source, compile, artifacts) and the cached compile itself.

`lower_graph(graph, arch)` generates the CuTe DSL module and writes it to a real
file (CuTe DSL reads the source of what it traces). `Lowered.compile()` returns
a CompiledKernel from the in-memory cache, else from the disk cache, else by
running `cute.compile` with `--gpu-arch <arch>` on placeholder pointers, which
needs no GPU.
"""
import functools
import hashlib
import os
import re
import tempfile
import time
import warnings
import weakref
from pathlib import Path

from ..errors import CompileError, CompiledCodeWarning, PerformanceWarning
from . import binutils, cache
from .compiled import CompiledKernel, fake_arguments, import_source
from .emit import generate


class Lowered:
    """A graph lowered to CuTe DSL for one arch.

    `.source` is the generated module (also on disk at `.source_path`);
    `.compile(options="")` compiles it (cached); `.ptx`, `.cubin`, `.sass` and
    `.resources` compile on first use. `.generated` carries the parameters,
    launch dimensions and the hardware features the kernel uses. After
    `compile()`, `.cache_hit` says where the kernel came from: "memory", "disk"
    or None (compiled just now). A fresh compile is checked against the graph
    (tilegemm.lower.facts: barriers, copies, masks, MMA descriptors, waits, the
    Blackwell lint); findings are reported as a tg.CompiledCodeWarning.
    """

    def __init__(self, graph, arch, barrier_timeout=None):
        self.graph = graph
        self.arch = arch
        self.barrier_timeout = barrier_timeout
        self.cache_hit = None
        self.generated = plan(graph, arch, barrier_timeout)
        self.source = self.generated.source
        self.source_path = write_source(self.generated)

    def __repr__(self):
        return f"<tilegemm Lowered {self.generated.entry} {self.arch}: {self.source_path}>"

    def _repr_html_(self):
        from ..notebook import lowered_html
        return lowered_html(self)

    def _repr_markdown_(self):
        from ..notebook import lowered_markdown
        return lowered_markdown(self)

    @property
    def params(self):
        return self.generated.params

    @property
    def features(self):
        return self.generated.features

    def cache_key(self, options=""):
        variant = "" if self.barrier_timeout is None else f" barrier_timeout={self.barrier_timeout}"
        return cache.cache_key(self.graph.fingerprint(), self.arch, options + variant)

    def compile(self, options=""):
        """The CompiledKernel (from the memory cache, the disk cache, or a fresh `cute.compile`)."""
        key = self.cache_key(options)
        compiled = cache.memory_get(key)
        if compiled is not None:
            self.cache_hit = "memory"
            return compiled
        files = cache.disk_get(key)
        if files is not None:
            compiled = from_files(key, files, self.source_path, from_cache="disk")
        else:
            compiled = compile_generated(self.generated, self.source_path, key, options, self.barrier_timeout)
            self._check_compiled(compiled)
        self.cache_hit = compiled.from_cache
        cache.memory_put(key, compiled)
        if compiled.meta.get("wgmma_serialized"):
            warnings.warn(PerformanceWarning(self._serialized_wgmma_message()), stacklevel=2)
        return compiled

    def _check_compiled(self, compiled):
        """Warns when the freshly compiled PTX disagrees with the graph (a lowering bug, not the user's)."""
        from .facts import verify_compiled
        findings = verify_compiled(compiled.ptx, self.graph, self.arch)
        if findings:
            warnings.warn(CompiledCodeWarning(
                f"{self.graph.loc}: the compiled code of kernel `{self.generated.entry}` for {self.arch} disagrees "
                "with the kernel, as read off its PTX by tilegemm.lower.facts. This is a bug in tilegemm's lowering, "
                "not in the kernel; on a GPU the kernel may hang or compute wrong results:\n  "
                + "\n  ".join(map(str, findings))), stacklevel=3)

    def _serialized_wgmma_message(self):
        lines = sorted({str(op.loc) for op in self.graph.walk() if op.kind == "wgmma"})
        return (f"{lines[0] if lines else self.generated.entry}: ptxas serialized the WGMMAs of kernel "
                f"`{self.generated.entry}` for {self.arch}: every HGMMA waits for the previous one (ptxas advisory "
                "C7514), which can halve tensor-core throughput. ptxas does this when other instructions touch "
                "accumulator registers while WGMMAs are in flight, often with large accumulators under register "
                "pressure; splitting a 128-row tg.ACC into two 64-row ones cured it in the flagship. WGMMAs at: "
                + ", ".join(lines))

    @functools.cached_property
    def _default(self):
        return self.compile()

    @property
    def ptx(self):
        return self._default.ptx

    @property
    def cubin(self):
        return self._default.cubin

    @property
    def sass(self):
        return self._default.sass

    @property
    def resources(self):
        return self._default.resources


def lower_graph(graph, arch=None, barrier_timeout=None):
    """Lowers a graph to CuTe DSL for `arch` (default: the architecture it was verified for), verifying it for
    `arch` first if it was verified for another; see `Lowered` (and tilegemm.debug for `barrier_timeout`)."""
    from ..lang.verify import verify
    arch = arch or graph.target
    if arch not in graph.verified_for:
        verify(graph, arch)
    return Lowered(graph, arch, barrier_timeout)


_PLANNED = weakref.WeakKeyDictionary()   # graph -> {(arch, barrier_timeout): GeneratedKernel}


def plan(graph, arch, barrier_timeout=None):
    """The generated module of `graph` for `arch` (generated once per graph, arch and barrier timeout). The
    verifier plans every kernel for its architecture this way; what the lowering cannot express raises
    plan.Unlowerable, naming the op's line."""
    planned = _PLANNED.setdefault(graph, {})
    key = (arch, barrier_timeout)
    if key not in planned:
        planned[key] = generate(graph, arch, barrier_timeout)
    return planned[key]


def write_source(generated):
    """Writes the module to `<cache>/source/<entry>_<hash>.py` (named by content) and returns the path."""
    digest = hashlib.sha256(generated.source.encode()).hexdigest()[:16]
    path = cache.cache_dir() / "source" / f"{generated.entry}_{digest}.py"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".py.tmp")
        with os.fdopen(fd, "w") as f:
            f.write(generated.source)
        os.replace(tmp, path)
    return path


def compile_generated(generated, source_path, key, options, barrier_timeout=None):
    """Runs `cute.compile` on the generated module, stores the artifacts in the disk cache and returns them."""
    start = time.perf_counter()
    try:
        module = import_source(source_path)
    except Exception as e:
        raise CompileError(f"the generated source {source_path} does not import: {type(e).__name__}: {e}") from e
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_stream
    entry = getattr(module, generated.entry)
    with tempfile.TemporaryDirectory() as dump:
        flags = f"--gpu-arch {generated.arch} --keep-ptx --keep-cubin --dump-dir {dump} {options}".strip()
        try:
            fn = cute.compile(entry, *fake_arguments(generated.params, generated.constants, generated.hang_waits),
                              make_fake_stream(), options=flags)
        except Exception as e:
            raise CompileError(f"CuTe DSL failed to compile {source_path}:\n{_short(e)}") from e
        ptx, cubin = fn.artifacts.PTX, fn.artifacts.CUBIN
    if not ptx or not cubin:
        raise CompileError(f"CuTe DSL produced no PTX/cubin for {source_path}")
    bytecode = _bytecode(fn.ir_module)
    meta = {
        "arch": generated.arch, "entry": generated.entry, "function_name": fn.function_name,
        "kernels": list(fn.kernel_info), "kernel_name": _entry_name(ptx), "options": options,
        "params": [{"name": p.name, "shape": list(p.shape), "dtype": str(p.dtype), "is_output": p.is_output}
                   for p in generated.params],
        "constants": [list(c) for c in generated.constants], "hang_waits": generated.hang_waits,
        "barrier_timeout": barrier_timeout,
        "launch": {"grid": list(generated.launch.grid), "block": list(generated.launch.block),
                   "cluster": list(generated.launch.cluster), "smem_bytes": generated.launch.smem_bytes,
                   "dependent": generated.launch.dependent},
        "features": list(generated.features), "cutlass_dsl": cache.cutlass_dsl_version(),
        "wgmma_serialized": _wgmma_serialized(ptx, cubin),
        "compile_seconds": round(time.perf_counter() - start, 3),
    }
    files = {"source.py": generated.source.encode(), "kernel.ptx": ptx.encode(), "kernel.cubin": bytes(cubin),
             "module.mlirbc": bytecode, "meta.json": cache.encode_meta(meta)}
    cache.disk_put(key, files)
    executable = fn if getattr(fn, "capi_func", None) else None
    return CompiledKernel(key=key, meta=meta, ptx=ptx, cubin=bytes(cubin), module_bytecode=bytecode,
                          source_path=source_path, from_cache=None, executable=executable)


def from_files(key, files, source_path, from_cache):
    """A CompiledKernel from a disk-cache entry."""
    meta = cache.decode_meta(files["meta.json"])
    path = Path(source_path)
    if path.read_bytes() != files["source.py"]:
        path = cache.entry_dir(key) / "source.py"
    return CompiledKernel(key=key, meta=meta, ptx=files["kernel.ptx"].decode(), cubin=files["kernel.cubin"],
                          module_bytecode=files["module.mlirbc"], source_path=path, from_cache=from_cache)


def _wgmma_serialized(ptx, cubin):
    """Whether ptxas serialized the WGMMAs (None when there are none, or no nvdisasm to read the SASS)."""
    if "wgmma.mma_async" not in ptx or binutils.find_tool("nvdisasm") is None:
        return None
    return binutils.serialized_wgmma(ptx, binutils.sass(cubin))


def _bytecode(ir_module):
    import io
    buf = io.BytesIO()
    ir_module.operation.write_bytecode(buf)
    return buf.getvalue()


def _entry_name(ptx):
    m = re.search(r"\.entry\s+([A-Za-z_$][\w$]*)", ptx)
    return m.group(1) if m else ""


def _short(error):
    """The message of a CuTe DSL error without ANSI colours."""
    return re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip()

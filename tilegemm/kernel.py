"""`tg.kernel`: turn a Python function into a traceable, verifiable, runnable GPU kernel.

A kernel body is a plain function of refs, `body(*inputs, *outputs, *scratch)`
(scratch as keyword arguments when `scratch_shapes` is a dict). Calling the
primitives inside it records a graph; the graph is verified, then either
interpreted with numpy (`interpret=True`) or lowered to CuTe DSL, compiled and
launched on the GPU.

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float16), grid=(m // 128, n // 128),
               grid_names=("m", "n"), scratch_shapes=[...])
    def matmul(a_ref, b_ref, c_ref, *scratch): ...

    c = matmul(a, b)                      # on the GPU (numpy in, numpy out; torch/cupy stay on the GPU)
    c = matmul(a, b, out=c)               # into the caller's array (several outputs: a tuple, None to allocate)
    c = matmul(a, b, interpret=True)      # numpy interpreter, no GPU needed
    c = matmul(a, b, debug=True)          # NaN-poisoned outputs, barrier waits that give up (tilegemm.debug)
    # input_output_aliases={2: 0}: output 0 is input 2's memory, starting with its contents (updated in place
    # for device arrays; a host array comes back as a new array, the caller's unchanged)
    graph = matmul(tg.ShapeDtype(a.shape, a.dtype), ...)         # specs only: trace + verify, print(graph)
    lowered = matmul.lower(a_spec, b_spec)                       # .source, .compile(), .ptx, .sass

Arguments follow Pallas `plgpu.kernel`: `out_shape` (a ShapeDtype or a
tuple/list of them), `grid`/`grid_names` (clusters of the launch),
`cluster`/`cluster_names` (blocks per cluster), `num_threads`/`thread_name`
(warpgroups per block: one tilegemm thread is one warpgroup of 128 CUDA
threads), `scratch_shapes` (list or dict of tg.SMEM, tg.TMEM, tg.ACC,
tg.Barrier, tg.ClusterBarrier), `input_output_aliases` ({input index: output
index}: the output is the input's buffer, as in Pallas; not with `out=`).
Differences from Pallas: `name` sets the kernel name; keyword arguments given
at call time are static and passed to the body.

`dependent_launch=True` launches the kernel with programmatic dependent launch
(PDL): the GPU may start its blocks while the kernel before it on the stream
finishes. Each block sets up (barrier init, TMA descriptor prefetch), then
waits for that kernel to complete and its writes to be visible
(`griddepcontrol.wait`, placed by the lowering before the body) before its body
runs, so no read or write of the body can race with the previous kernel: what
is saved is the launch latency and set-up between back-to-back kernels. The
kernel's own dependents start as its blocks exit, or earlier where the body
calls `tg.launch_dependents()` (a block's first call counts: a hint of when,
which changes speed, never results). The interpreter runs one launch at a time
and ignores both.

The target architecture: `arch="sm_90a"` or `"sm_100a"`, by default the one the
kernel's primitives imply (tcgen05 MMAs and tensor memory: sm_100a; otherwise
sm_90a). A kernel is verified for its target when it is traced, so one the
interpreter runs is one that compiles for it; `kernel.lower(arch=...)` verifies
it again for another.

Shapes a kernel accepts. A kernel whose `out_shape` is fixed was built for one
set of input shapes: declare them with `in_specs=[tg.ShapeDtype(...), ...]`, or
the first call (or trace) fixes them; a call with other shapes or dtypes is a
tg.ArgumentError naming the argument and the shape expected. A kernel meant for
many shapes says so by making `out_shape` (and `grid`, if it depends on the
shapes) functions of the input ShapeDtypes, e.g. `out_shape=lambda a, b:
tg.ShapeDtype((a.shape[0], b.shape[1]), a.dtype)`; its body then reads sizes
from the refs (`a.shape`), and each new shape is traced anew.

Calls are fast after the first: a repeated call with device arrays of the same
signature (torch tensors, cupy arrays, DeviceArrays) only reads their pointers
and launches on the caller's stream (torch's current stream for torch tensors,
so calls work inside torch.cuda.graph capture).
"""
import inspect

import numpy as np

from . import debug as debugging
from .errors import ArgumentError, KernelError
from .lang.ir import current_user_loc
from .lang.trace import LaunchConfig, ShapeDtype, trace_kernel
from .lang.verify import verify
from .runtime import readers

CALL_OPTIONS = ("interpret", "seed", "out", "debug")   # keywords a kernel call keeps for itself


class Kernel:
    """A traced-on-demand kernel; see the module docstring (help(tg.kernel)) for the API."""

    def __init__(self, body, *, out_shape, scratch_shapes=(), grid=(), grid_names=None, cluster=(),
                 cluster_names=None, num_threads=None, thread_name=None, name=None, in_specs=None, arch=None,
                 input_output_aliases=None, dependent_launch=False):
        self.body = body
        self.arch = arch
        self.name = name or getattr(body, "__name__", "kernel")
        loc = current_user_loc()
        self.polymorphic = callable(out_shape)
        if callable(grid) and not self.polymorphic:
            raise KernelError("grid is a function of the input shapes but out_shape is not: make out_shape a "
                              "function of the inputs too (a kernel whose grid follows its inputs serves many "
                              "shapes)", loc=loc)
        self._out_shape, self._grid = out_shape, grid
        self._launch_names = dict(grid_names=grid_names, cluster=cluster, cluster_names=cluster_names,
                                  num_threads=num_threads, thread_name=thread_name, dependent_launch=dependent_launch)
        self.scratch_shapes = scratch_shapes
        self.signature = BodySignature(body, scratch_shapes)
        if self.polymorphic:
            self.signature.set_inputs(_parameter_count(out_shape))
        else:
            self.out_specs, self._single_output = _out_specs(out_shape, loc)
            self.config = LaunchConfig.make(grid, **self._launch_names)
            self.signature.set_outputs(len(self.out_specs))
        self.aliases = _aliases(input_output_aliases, loc)
        self.in_specs = _declared_in_specs(in_specs, loc)
        if self.in_specs is not None:
            self.signature.set_inputs(len(self.in_specs))
        self._traces = {}
        self._binaries = {}
        self._prepared = {}
        self.__doc__ = getattr(body, "__doc__", None)

    # ------------------------------------------------------------------ tracing

    def trace(self, *args, **static):
        """Traces (once per shapes, dtypes and static arguments) and verifies; returns the Graph."""
        self.signature.check_static(static, self.name)
        return self._trace(self._specs_of(args), static)

    def _trace(self, specs, static):
        key = self._key(specs, static)
        graph = self._traces.get(key)
        if graph is None:
            config, out_specs = self._launch_for(specs)
            self._check_aliases(specs, out_specs)
            graph = trace_kernel(self.body, name=self.name, config=config, in_specs=specs, out_specs=out_specs,
                                 scratch_shapes=self.scratch_shapes, static_kwargs=static, aliases=self.aliases)
            verify(graph, self.arch)
            self._traces[key] = graph
        return graph

    def _launch_for(self, specs):
        """(LaunchConfig, output specs) of a trace for input `specs`."""
        if not self.polymorphic:
            return self.config, self.out_specs
        loc = self.signature.loc
        outs, single = _out_specs(self._out_shape(*specs), loc)
        self._single_output = single
        grid = self._grid(*specs) if callable(self._grid) else self._grid
        return LaunchConfig.make(grid, **self._launch_names), outs

    def _check_aliases(self, specs, out_specs):
        """Raises KernelError unless each aliased input and output exist and agree in shape and dtype."""
        for i, j in self.aliases.items():
            if i >= len(specs) or j >= len(out_specs):
                raise KernelError(f"input_output_aliases {{{i}: {j}}} of kernel `{self.name}`: it takes "
                                  f"{len(specs)} input(s) and has {len(out_specs)} output(s)", loc=self.signature.loc)
            if specs[i] != out_specs[j]:
                raise KernelError(f"input_output_aliases {{{i}: {j}}} of kernel `{self.name}`: input {i} is "
                                  f"{_describe(specs[i])} but output {j} is {_describe(out_specs[j])}; an aliased "
                                  "output is its input's buffer, of the same shape and dtype", loc=self.signature.loc)

    def _key(self, specs, static):
        key = tuple(specs), tuple(sorted(static.items()))
        try:
            hash(key)
        except TypeError:
            raise KernelError(f"static keyword arguments of {self.name} must be hashable (they key the trace "
                              f"cache); got {static!r}", loc=current_user_loc()) from None
        return key

    def _specs_of(self, args):
        """The ShapeDtype of each argument, checked against the count and shapes this kernel accepts."""
        self.signature.check_count(len(args), self.name, self.in_specs)
        specs = tuple(_spec_of(x, self._what(i)) for i, x in enumerate(args))
        if self.in_specs is None and not self.polymorphic:
            self.in_specs = specs   # a fixed-shape kernel serves the signature it first meets
        if self.in_specs is not None:
            for i, (got, want) in enumerate(zip(specs, self.in_specs)):
                if want is not None and got != want:
                    raise ArgumentError(self._mismatch(i, got, want))
        return specs

    def _what(self, index):
        names = self.signature.input_names
        named = f" ({names[index]})" if index < len(names) else ""
        return f"argument {index}{named} of kernel `{self.name}`"

    def _mismatch(self, index, got, want):
        return (f"{self._what(index)} is {_describe(got)} but the kernel was built for {_describe(want)}. A kernel "
                "whose out_shape is fixed serves one set of input shapes: build one for these shapes, or make "
                "out_shape (and grid) functions of the inputs to serve many (help(tg.kernel))")

    # ------------------------------------------------------------------ lowering and running

    def _compiled(self, specs, arch, static, barrier_timeout):
        """The compiled kernel for argument specs, arch, static arguments and barrier timeout (compiled once)."""
        key = (self._key(specs, static), arch, barrier_timeout)
        if key not in self._binaries:
            switches = debugging.Debug(barrier_timeout=barrier_timeout)
            self._binaries[key] = self.lower(*specs, arch=arch, debug=switches, **static).compile()
        return self._binaries[key]

    def lower(self, *args, arch=None, debug=None, **static):
        """Lowers to CuTe DSL for `arch` ('sm_90a' or 'sm_100a'; default: the kernel's target), verifying the
        kernel for it first; works without a GPU. With a barrier timeout
        (`debug`, or the process's tilegemm.debug switches) every barrier wait gives up after it and reports."""
        from .lower import lower_graph
        timeout = debugging.resolve(debug).barrier_timeout
        return lower_graph(self.trace(*args, **static), arch=arch, barrier_timeout=timeout)

    def interpret(self, *arrays, seed=None, out=None, **static):
        """Runs the kernel in the numpy interpreter and returns its outputs (numpy arrays)."""
        from .interpret import run_graph
        from .runtime.arrays import host_array
        self.signature.check_static(static, self.name)
        specs = self._specs_of(arrays)
        hosts = [host_array(x, self._what(i), "interpret=True runs in the numpy interpreter, on the host")
                 for i, x in enumerate(arrays)]
        graph = self._trace(specs, static)
        targets = self._out_list(out)
        if targets is not None:
            for i, (param, target) in enumerate(zip(graph.outputs, targets)):
                if target is not None:
                    _check_host_output(target, ShapeDtype(param.type.shape, param.type.dtype),
                                       f"the out= array for output {i} of kernel `{self.name}`")
        outs = run_graph(graph, hosts, seed=seed, aliases=self.aliases)
        if targets is not None:
            for i, target in enumerate(targets):
                if target is not None:
                    target[...] = outs[i]
                    outs[i] = target
        return outs[0] if self._single_output else tuple(outs)

    def __call__(self, *arrays, interpret=False, seed=None, out=None, debug=None, **static):
        """Runs the kernel (GPU, or the interpreter with interpret=True); with only tg.ShapeDtype specs, traces it
        and returns the verified Graph instead (no data, nothing runs). See help(tg.kernel)."""
        if not (interpret or static or seed is not None):
            switches = debugging.resolve(debug)
            prepared = self._prepared.get((readers.signature(arrays), switches.barrier_timeout))
            if prepared is not None:
                outs = prepared(arrays, self._out_list(out), switches.poison_outputs)
                return outs[0] if self._single_output else tuple(outs)
        return self._call(arrays, interpret, seed, out, debug, static)

    def _call(self, arrays, interpret, seed, out, debug, static):
        """The general path of __call__: every check, then trace, compile and launch (and prepare the fast path)."""
        self.signature.check_static(static, self.name)
        if arrays and all(isinstance(a, ShapeDtype) for a in arrays):
            if interpret or out is not None:
                raise ArgumentError(f"kernel `{self.name}` got only tg.ShapeDtype specs, which have no data: "
                                    "pass arrays to run it (specs alone trace it and return the Graph)")
            return self.trace(*arrays, **static)
        if seed is not None and not interpret:
            raise ArgumentError(f"seed= shuffles the numpy interpreter's schedule; kernel `{self.name}` runs on "
                                "the GPU here: pass interpret=True with it")
        if interpret:
            return self.interpret(*arrays, seed=seed, out=out, **static)
        from .runtime import launch_compiling, prepare
        switches = debugging.resolve(debug)
        specs = self._specs_of(arrays)
        timeout = switches.barrier_timeout
        outs, device = launch_compiling(lambda arch: self._compiled(specs, arch, static, timeout), arrays,
                                        self.name, out=self._out_list(out), poison=switches.poison_outputs,
                                        aliases=self.aliases)
        if not static:
            prepared = prepare(self._compiled(specs, device.arch, static, timeout), arrays, device, self.name,
                               self.aliases)
            if prepared is not None:   # its readers are registered now, so the signature can be read
                self._prepared[(readers.signature(arrays), timeout)] = prepared
        return outs[0] if self._single_output else tuple(outs)

    def prepared(self, signature, barrier_timeout=None):
        """The prepared fast-path launch of calls with this call signature (tilegemm.runtime.readers) and barrier
        timeout, if such a call has run; for callers such as tg.matmul that keep their own dispatch."""
        return self._prepared.get((signature, barrier_timeout))

    def _out_list(self, out):
        """`out=` as a list of one array per output (None stays None)."""
        if out is None:
            return None
        if self._single_output:
            targets = [out]
        elif not isinstance(out, (tuple, list)) or len(out) != len(self.out_specs):
            raise ArgumentError(f"kernel `{self.name}` has {len(self.out_specs)} outputs: pass out= as a tuple of "
                                f"{len(self.out_specs)} arrays (None for one the call allocates)")
        else:
            targets = list(out)
        aliased = sorted(j for j in self.aliases.values() if targets[j] is not None)
        if aliased:
            raise ArgumentError(f"kernel `{self.name}` writes output(s) {aliased} into the inputs they alias "
                                f"(input_output_aliases={self.aliases}): pass None for them in out=, or call it "
                                "without out=")
        return targets

    def __repr__(self):
        config = "shapes follow the inputs" if self.polymorphic else str(self.config)
        return f"<tg.kernel {self.name} {config}>"


class BodySignature:
    """What a kernel body's Python signature says about calls: its input names and count, and the static
    keywords it takes."""

    def __init__(self, body, scratch_shapes):
        self.loc = current_user_loc()
        try:
            params = list(inspect.signature(body).parameters.values())
        except (TypeError, ValueError):
            params = None
        self.params = params
        self.scratch_names = set(scratch_shapes) if isinstance(scratch_shapes, dict) else set()
        # refs come positionally: required positional parameters, except scratch passed by keyword
        positional = [p for p in params or () if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                      and p.default is p.empty and p.name not in self.scratch_names]
        self.varargs = params is None or any(p.kind == p.VAR_POSITIONAL for p in params)
        self.varkw = params is None or any(p.kind == p.VAR_KEYWORD for p in params)
        self.positional_names = [p.name for p in positional]
        self.scratch_positional = 0 if isinstance(scratch_shapes, dict) else len(scratch_shapes)
        self.keyword_names = {p.name for p in params or () if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        self.input_names = []

        self.num_inputs = None

    def set_outputs(self, num_outputs):
        """Inputs are the positional parameters before the outputs and the positional scratch."""
        if not self.varargs:
            self.set_inputs(max(len(self.positional_names) - num_outputs - self.scratch_positional, 0))

    def set_inputs(self, count):
        """The body takes `count` inputs (None: unknown); the first `count` parameter names name them."""
        self.num_inputs = count
        self.input_names = self.positional_names[:count] if count is not None else []

    def check_count(self, count, kernel_name, in_specs):
        """Raises ArgumentError unless a call with `count` input arrays fits the body."""
        expected = self.num_inputs
        if expected is not None and count != expected:
            names = f" ({', '.join(self.input_names)})" if len(self.input_names) == expected else ""
            raise ArgumentError(f"kernel `{kernel_name}` takes {expected} input array(s){names}, got {count}")

    def check_static(self, static, kernel_name):
        """Raises ArgumentError for a static keyword the body cannot take."""
        refs = set(self.positional_names) | self.scratch_names   # parameters tracing fills with refs
        for name in static:
            if name in refs or not (self.varkw or name in self.keyword_names):
                keywords = sorted(self.keyword_names - refs)
                statics = f"static keywords: {', '.join(keywords)}; " if keywords else ""
                raise ArgumentError(f"kernel `{kernel_name}` got an unexpected keyword argument {name!r}; it takes "
                                    f"{statics}call options: {', '.join(o + '=' for o in CALL_OPTIONS)}")


def _out_specs(out_shape, loc):
    """(output ShapeDtypes, whether the kernel has a single output) from an out_shape."""
    single = isinstance(out_shape, ShapeDtype)
    outs = [out_shape] if single else list(out_shape) if isinstance(out_shape, (tuple, list)) else [out_shape]
    for o in outs:
        if not isinstance(o, ShapeDtype):
            raise KernelError(f"out_shape must be a tg.ShapeDtype or a tuple/list of them, got "
                              f"{type(out_shape).__name__} {out_shape!r}", loc=loc)
    return tuple(outs), single


def _parameter_count(fn):
    """How many positional parameters `fn` takes (None when it takes *args or cannot be inspected)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def _aliases(aliases, loc):
    """input_output_aliases as a dict of int input index -> int output index, each output aliased once."""
    if aliases is None:
        return {}
    if not isinstance(aliases, dict) or not all(isinstance(i, int) and isinstance(j, int) and i >= 0 and j >= 0
                                                 for i, j in aliases.items()):
        raise KernelError(f"input_output_aliases must be a dict of input index -> output index (ints >= 0), got "
                          f"{aliases!r}", loc=loc)
    if len(set(aliases.values())) != len(aliases):
        raise KernelError(f"input_output_aliases {aliases!r} aliases one output to several inputs", loc=loc)
    return dict(aliases)


def _declared_in_specs(in_specs, loc):
    if in_specs is None:
        return None
    specs = tuple(in_specs)
    for s in specs:
        if s is not None and not isinstance(s, ShapeDtype):
            raise KernelError(f"in_specs must list a tg.ShapeDtype (or None: any) per input, got "
                              f"{type(s).__name__} {s!r}", loc=loc)
    return specs


def _spec_of(x, what):
    """The ShapeDtype of one call argument (an array or a ShapeDtype), or an ArgumentError naming it."""
    if isinstance(x, ShapeDtype):
        return x
    from .lang import dtypes
    from .runtime.arrays import shape_and_dtype
    shape, dtype = shape_and_dtype(x, what)
    if not isinstance(dtype, np.dtype) or dtype not in dtypes.ARRAY_DTYPES:
        known = ", ".join(np.dtype(d).name for d in dtypes.ARRAY_DTYPES)
        raise ArgumentError(f"{what} has element type {dtype}, which tilegemm kernels do not take; use {known}")
    return ShapeDtype(shape, dtype)


def _check_host_output(target, spec, what):
    """Raises ArgumentError unless `target` is a writeable numpy array of exactly `spec`."""
    if not isinstance(target, np.ndarray) or not target.flags.writeable:
        raise ArgumentError(f"{what} must be a writeable numpy array (interpret=True runs on the host), got "
                            f"{type(target).__name__}")
    got = ShapeDtype(target.shape, target.dtype)
    if got != spec:
        raise ArgumentError(f"{what} is {_describe(got)} but the output is {_describe(spec)}")


def _describe(spec):
    from .lang import dtypes
    return f"{dtypes.name(spec.dtype)}{list(spec.shape)}"


def kernel(body=None, **kwargs):
    """Makes a Kernel from `body`; usable as `tg.kernel(body, ...)` or as `@tg.kernel(...)`."""
    if body is None:
        return lambda fn: Kernel(fn, **kwargs)
    return Kernel(body, **kwargs)


kernel.__doc__ = __doc__ + "\n\n" + (kernel.__doc__ or "")

"""`tg.kernel`: turn a Python function into a traceable, verifiable, runnable GPU kernel.

A kernel body is a plain function of refs, `body(*inputs, *outputs, *scratch)`
(scratch as keyword arguments when `scratch_shapes` is a dict). Calling the
primitives inside it records a graph; the graph is verified, then either
interpreted with numpy (`interpret=True`) or lowered to CuTe DSL, compiled and
launched on the GPU.

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float16), grid=(m // 128, n // 128),
               grid_names=("m", "n"), scratch_shapes=[...])
    def matmul(a_ref, b_ref, c_ref, *scratch): ...

    c = matmul(a, b)                      # on the GPU (numpy in, numpy out)
    c = matmul(a, b, interpret=True)      # numpy interpreter, no GPU needed
    graph = matmul(tg.ShapeDtype(a.shape, a.dtype), ...)         # specs only: trace + verify, print(graph)
    lowered = matmul.lower(a_spec, b_spec, arch="sm_90a")        # .source, .compile(), .ptx, .sass

Arguments follow Pallas `plgpu.kernel`: `out_shape` (a ShapeDtype or a
tuple/list of them), `grid`/`grid_names` (clusters of the launch),
`cluster`/`cluster_names` (blocks per cluster), `num_threads`/`thread_name`
(warpgroups per block: one tilegemm thread is one warpgroup of 128 CUDA
threads), `scratch_shapes` (list or dict of tg.SMEM, tg.TMEM, tg.ACC,
tg.Barrier, tg.ClusterBarrier). Differences from Pallas: `name` sets the kernel
name; keyword arguments given at call time are static and passed to the body.
"""
from .errors import KernelError
from .lang.ir import current_user_loc
from .lang.trace import LaunchConfig, ShapeDtype, trace_kernel
from .lang.verify import verify


class Kernel:
    """A traced-on-demand kernel; see the module docstring (help(tg.kernel)) for the API."""

    def __init__(self, body, *, out_shape, scratch_shapes=(), grid=(), grid_names=None, cluster=(),
                 cluster_names=None, num_threads=None, thread_name=None, name=None):
        self.body = body
        self.name = name or getattr(body, "__name__", "kernel")
        self._single_output = isinstance(out_shape, ShapeDtype)
        outs = [out_shape] if self._single_output else list(out_shape)
        for o in outs:
            if not isinstance(o, ShapeDtype):
                raise KernelError(f"out_shape must be a tg.ShapeDtype or a tuple/list of them, got "
                                  f"{type(out_shape).__name__} {out_shape!r}", loc=current_user_loc())
        self.out_specs = tuple(outs)
        self.scratch_shapes = scratch_shapes
        self.config = LaunchConfig.make(grid, grid_names, cluster, cluster_names, num_threads, thread_name)
        self._traces = {}
        self._binaries = {}
        self.__doc__ = getattr(body, "__doc__", None)

    def _key(self, specs, static):
        key = tuple(specs), tuple(sorted(static.items()))
        try:
            hash(key)
        except TypeError:
            raise KernelError(f"static keyword arguments of {self.name} must be hashable (they key the trace "
                              f"cache); got {static!r}", loc=current_user_loc()) from None
        return key

    def trace(self, *args, **static):
        """Traces (once per shapes, dtypes and static arguments) and verifies; returns the Graph."""
        specs = tuple(ShapeDtype.of(a) for a in args)
        key = self._key(specs, static)
        graph = self._traces.get(key)
        if graph is None:
            graph = trace_kernel(self.body, name=self.name, config=self.config, in_specs=specs,
                                 out_specs=self.out_specs, scratch_shapes=self.scratch_shapes,
                                 static_kwargs=static)
            verify(graph)
            self._traces[key] = graph
        return graph

    def _compiled(self, specs, arch, static):
        """The compiled kernel for argument specs, arch and static arguments (compiled once per Kernel)."""
        key = (self._key(specs, static), arch)
        if key not in self._binaries:
            self._binaries[key] = self.lower(*specs, arch=arch, **static).compile()
        return self._binaries[key]

    def lower(self, *args, arch="sm_90a", **static):
        """Lowers to CuTe DSL for `arch` ('sm_90a' or 'sm_100a'); works without a GPU."""
        from .lower import lower_graph
        return lower_graph(self.trace(*args, **static), arch=arch)

    def interpret(self, *arrays, seed=None, **static):
        """Runs the kernel in the numpy interpreter and returns its outputs."""
        from .interpret import run_graph
        outs = run_graph(self.trace(*arrays, **static), arrays, seed=seed)
        return outs[0] if self._single_output else tuple(outs)

    def __call__(self, *arrays, interpret=False, seed=None, **static):
        """Runs the kernel (GPU, or the interpreter with interpret=True); with only tg.ShapeDtype specs, traces it
        and returns the verified Graph instead, as DESIGN §3 describes (no data, nothing runs)."""
        if arrays and all(isinstance(a, ShapeDtype) for a in arrays):
            return self.trace(*arrays, **static)
        if interpret:
            return self.interpret(*arrays, seed=seed, **static)
        from .runtime import launch_compiling
        specs = tuple(ShapeDtype.of(a) for a in arrays)
        outs = launch_compiling(lambda arch: self._compiled(specs, arch, static), arrays, self.name)
        return outs[0] if self._single_output else tuple(outs)

    def __repr__(self):
        return f"<tg.kernel {self.name} {self.config}>"


def kernel(body=None, **kwargs):
    """Makes a Kernel from `body`; usable as `tg.kernel(body, ...)` or as `@tg.kernel(...)`."""
    if body is None:
        return lambda fn: Kernel(fn, **kwargs)
    return Kernel(body, **kwargs)


kernel.__doc__ = __doc__ + "\n\n" + (kernel.__doc__ or "")

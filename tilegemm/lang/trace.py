"""Tracing a kernel body into a Graph: parameters, scratch allocation, verification."""
import inspect
from dataclasses import dataclass

import numpy as np

from ..errors import KernelError
from . import dtypes
from .ir import Graph, SourceLoc, _short_path, current_user_loc
from .scratch import SCRATCH_SPECS
from .tracer import tracing, VALUE_CLASSES
from .types import MemorySpace, RefType


@dataclass(frozen=True)
class ShapeDtype:
    """The shape and dtype of an array, for tracing and lowering without data (jax.ShapeDtypeStruct)."""
    shape: tuple
    dtype: object

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "dtype", dtypes.as_dtype(self.dtype))

    @classmethod
    def of(cls, x):
        """The ShapeDtype of an array-like (numpy, torch, cupy...) or a ShapeDtype."""
        if isinstance(x, ShapeDtype):
            return x
        dt = getattr(x, "dtype", None)
        if dt is not None and not isinstance(dt, np.dtype):
            dt = _foreign_dtype(dt)
        return cls(tuple(x.shape), dt)


def _foreign_dtype(dt):
    text = str(dt).replace("torch.", "")
    return dtypes.as_dtype(text)


@dataclass(frozen=True)
class LaunchConfig:
    """Grid of clusters, blocks per cluster and tilegemm threads (warpgroups) per block; `dependent_launch`: the
    kernel may start while the previous kernel on its stream finishes (tg.kernel's docstring)."""
    grid: tuple = (1,)
    grid_names: tuple = ()
    cluster: tuple = ()
    cluster_names: tuple = ()
    num_threads: int = 1
    thread_name: str = None
    dependent_launch: bool = False

    @classmethod
    def make(cls, grid=(), grid_names=None, cluster=(), cluster_names=None, num_threads=None, thread_name=None,
             dependent_launch=False):
        loc = current_user_loc()
        grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
        grid = grid or (1,)
        cluster = tuple(cluster) if isinstance(cluster, (tuple, list)) else (cluster,)
        grid_names = tuple(grid_names) if grid_names is not None else ("x", "y", "z")[:len(grid)]
        cluster_names = tuple(cluster_names) if cluster_names is not None else ("cx", "cy", "cz")[:len(cluster)]
        if len(grid_names) != len(grid):
            raise KernelError(f"grid {grid} has {len(grid)} axes but grid_names {grid_names} names "
                              f"{len(grid_names)}", loc=loc)
        if len(cluster_names) != len(cluster):
            raise KernelError(f"cluster {cluster} has {len(cluster)} axes but cluster_names {cluster_names} "
                              f"names {len(cluster_names)}", loc=loc)
        for d in grid + cluster:
            if not isinstance(d, (int, np.integer)) or d < 1:
                raise KernelError(f"grid and cluster sizes must be positive ints, got {d!r}", loc=loc)
        names = grid_names + cluster_names + ((thread_name,) if thread_name else ())
        if len(set(names)) != len(names):
            raise KernelError(f"axis names must be distinct, got {names}", loc=loc)
        if not isinstance(dependent_launch, bool):
            raise KernelError(f"dependent_launch must be True or False, got {dependent_launch!r}", loc=loc)
        return cls(tuple(int(d) for d in grid), grid_names, tuple(int(d) for d in cluster), cluster_names,
                   int(num_threads or 1), thread_name, dependent_launch)

    def as_dict(self):
        return dict(grid=self.grid, grid_names=self.grid_names, cluster=self.cluster,
                    cluster_names=self.cluster_names, num_threads=self.num_threads, thread_name=self.thread_name,
                    dependent_launch=self.dependent_launch)


def _def_loc(fn):
    try:
        return SourceLoc(_short_path(inspect.getsourcefile(fn)), inspect.getsourcelines(fn)[1], fn.__name__)
    except (TypeError, OSError):
        return None


def trace_kernel(body, *, name, config, in_specs, out_specs, scratch_shapes, static_kwargs=None, aliases=None):
    """Runs `body` once on abstract refs and returns the recorded Graph (not yet verified); `aliases`: the
    kernel's input_output_aliases."""
    graph = Graph(name, config.as_dict(), _def_loc(body))
    graph.aliases = dict(aliases or {})
    ref_cls = VALUE_CLASSES[RefType]
    loc = graph.loc
    for spec, into in [(s, graph.inputs) for s in in_specs] + [(s, graph.outputs) for s in out_specs]:
        into.append(graph.new_value(ref_cls, RefType(spec.shape, spec.dtype, MemorySpace.GMEM), loc))
    names = _positional_names(body)
    for value, name in zip(graph.params, names):
        value.name_hint = name
    with tracing(graph):
        if isinstance(scratch_shapes, dict):
            for k, v in scratch_shapes.items():
                _check_spec(k, v)
            kw = {k: v.alloc(k) for k, v in scratch_shapes.items()}
            args = []
        else:
            for i, v in enumerate(scratch_shapes):
                _check_spec(i, v)
            scratch_names = names[len(graph.params):]
            args = [v.alloc(scratch_names[i] if i < len(scratch_names) else None)
                    for i, v in enumerate(scratch_shapes)]
            kw = {}
        kw.update(static_kwargs or {})
        result = body(*graph.inputs, *graph.outputs, *args, **kw)
        if result is not None:
            raise KernelError("a kernel body returns None: outputs are written through the output refs",
                              loc=graph.loc)
    return graph


def _positional_names(body):
    """The body's positional parameter names (to name refs in listings and generated code)."""
    try:
        params = inspect.signature(body).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _check_spec(key, spec):
    if not isinstance(spec, SCRATCH_SPECS):
        raise KernelError(f"scratch_shapes[{key!r}] must be tg.SMEM, tg.TMEM, tg.ACC, tg.Barrier or "
                          f"tg.ClusterBarrier, got {type(spec).__name__}", loc=current_user_loc())

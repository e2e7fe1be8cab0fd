"""Control flow: axis_index, when, fori_loop, core_map/WarpMesh, run_scoped, nd_loop, planar_snake.

Python `for`/`if` over trace-time constants simply unroll while tracing; these
primitives are for decisions and loops that depend on run-time values.
"""
from dataclasses import dataclass

from ..errors import KernelError
from . import dtypes
from .ir import current_user_loc
from .tracer import _state, emit, region
from .types import ScalarType
from .values import Array, Scalar, select


def axis_index(name):
    """Index of this block/thread along the named grid, cluster, thread or warp axis."""
    loc = current_user_loc()
    st = _state()
    known = dict(st.graph.axis_sizes())
    known.update({a: 4 for a in getattr(st, "mesh_axes", [])})
    if name not in known:
        raise KernelError(f"unknown axis {name!r}; this kernel's axes are {sorted(known)}"
                          + ("" if getattr(st, "mesh_axes", []) else
                             " (a WarpMesh axis exists only inside its core_map)"), loc=loc)
    return emit("axis_index", (), {"axis": name}, (ScalarType(dtypes.int32),), loc=loc).result


def axis_size(name):
    """Static size of the named axis."""
    st = _state()
    sizes = dict(st.graph.axis_sizes())
    sizes.update({a: 4 for a in getattr(st, "mesh_axes", [])})
    if name not in sizes:
        raise KernelError(f"unknown axis {name!r}; this kernel's axes are {sorted(sizes)}", loc=current_user_loc())
    return sizes[name]


def when(cond):
    """Decorator: runs the decorated function's body only where `cond` holds.

    A Python bool decides at trace time; a traced bool records a conditional region.
    """
    loc = current_user_loc()

    def deco(body):
        if isinstance(cond, Scalar):
            if cond.type.dtype != dtypes.bool_:
                raise KernelError("tg.when needs a bool condition (compare with ==, <, ...)", loc=loc)
            with region() as r:
                body()
            emit("when", dict(cond=cond), {}, (), (r,), loc=loc)
        elif cond:
            body()
        return None
    return deco


def _flatten(carry):
    if carry is None:
        return [], lambda leaves: None
    if isinstance(carry, (tuple, list)):
        parts = [_flatten(c) for c in carry]
        sizes = [len(p[0]) for p in parts]

        def unflatten(leaves):
            out, i = [], 0
            for (_, unf), n in zip(parts, sizes):
                out.append(unf(leaves[i:i + n]))
                i += n
            return type(carry)(out)
        return [leaf for p in parts for leaf in p[0]], unflatten
    return [carry], lambda leaves: leaves[0]


def _carry_type(x, loc):
    if isinstance(x, (Scalar, Array)):
        return x.type
    if isinstance(x, bool):
        return ScalarType(dtypes.bool_)
    if isinstance(x, int):
        return ScalarType(dtypes.int32)
    raise KernelError(f"loop carries must be ints, bools, traced scalars or register arrays, got "
                      f"{type(x).__name__}", loc=loc)


def fori_loop(lower, upper, body, init_val, *, unroll=False):
    """`for i in range(lower, upper): carry = body(i, carry)`; returns the final carry.

    Bounds may be traced. The carry is a (nested tuple/list of) scalars or arrays
    whose types may not change across iterations. `unroll=True` asks the lowering
    to unroll when the trip count is static.
    """
    loc = current_user_loc()
    leaves, unflatten = _flatten(init_val)
    types = [_carry_type(x, loc) for x in leaves]
    with region([ScalarType(dtypes.int32)] + types) as r:
        out = body(r.args[0], unflatten(r.args[1:]))
        out_leaves, _ = _flatten(out)
        if len(out_leaves) != len(leaves):
            raise KernelError(f"fori_loop body returned {len(out_leaves)} carry values, expected {len(leaves)}",
                              loc=loc)
        for o, t in zip(out_leaves, types):
            if _carry_type(o, loc) != t:
                raise KernelError(f"fori_loop carry changed type from {t} to {_carry_type(o, loc)}", loc=loc)
        emit("yield", dict(values=out_leaves), {}, (), loc=loc)
    op = emit("fori_loop", dict(lower=lower, upper=upper, carries=leaves), {"unroll": bool(unroll)}, types, (r,), loc=loc)
    return unflatten(list(op.results))


@dataclass(frozen=True)
class WarpMesh:
    """The 4 warps of a warpgroup, named `axis_name` inside `core_map`."""
    axis_name: str = "warp"


def core_map(mesh):
    """Decorator: runs the body once per warp of the current warpgroup (Pallas `pl.core_map`).

    Only scalar work and single-lane operations (TMA copies, barrier operations,
    tcgen05 MMAs) are allowed inside; all warps synchronise at entry and exit.
    """
    loc = current_user_loc()
    if not isinstance(mesh, WarpMesh):
        raise KernelError(f"core_map takes a tg.WarpMesh, got {mesh!r}", loc=loc)

    def deco(body):
        st = _state()
        if not hasattr(st, "mesh_axes"):
            st.mesh_axes = []
        if st.mesh_axes:
            raise KernelError("core_map cannot be nested", loc=loc)
        st.mesh_axes.append(mesh.axis_name)
        try:
            with region() as r:
                body()
        finally:
            st.mesh_axes.pop()
        emit("core_map", (), {"axis": mesh.axis_name}, (), (r,), loc=loc)
        return None
    return deco


def run_scoped(body, *types, **kw_types):
    """Allocates scratch refs for the duration of `body(*refs, **refs)` and returns its result.

    Refs allocated here must not be used after `body` returns.
    """
    loc = current_user_loc()
    with region() as r:
        refs = [t.alloc() for t in types]
        kw = {k: t.alloc(k) for k, t in kw_types.items()}
        result = body(*refs, **kw)
    if result is not None:
        raise KernelError("run_scoped bodies must return None in tilegemm (results leave through refs)", loc=loc)
    emit("scope", (), {}, (), (r,), loc=loc)


@dataclass(frozen=True)
class NDLoopInfo:
    """Iteration info given to an `nd_loop` body: grid index, local step and local step count."""
    index: tuple
    local_index: object
    num_local_steps: object


def nd_loop(grid, *, collective_axes, init_carry=None):
    """Decorator: a persistent loop dealing the tiles of `grid` round-robin over blocks.

    Block b along `collective_axes` (of total size S) visits linear tiles b, b+S,
    b+2S, ...; the body receives an NDLoopInfo with the unravelled `index`. Built on
    fori_loop and scalar arithmetic, like Pallas `plgpu.nd_loop`.
    """
    loc = current_user_loc()
    axes = (collective_axes,) if isinstance(collective_axes, str) else tuple(collective_axes)
    if not axes:
        raise KernelError("nd_loop needs collective_axes: the grid or cluster axes whose blocks share the tiles",
                          loc=loc)
    grid = tuple(grid)

    def deco(body):
        # Linear block index along the collective axes, first axis major.
        block, size = None, 1
        for a in axes:
            n = axis_size(a)
            block = axis_index(a) if block is None else block * n + axis_index(a)
            size *= n
        total = 1
        for d in grid:
            total = total * d
        steps = (total + size - 1 - block) // size

        def step_body(step, carry):
            lin = step * size + block
            index, rest = [], lin
            for d in reversed(grid[1:]):
                index.append(rest % d)
                rest = rest // d
            index.append(rest)  # the outermost index needs no wrap: lin < prod(grid)
            info = NDLoopInfo(tuple(reversed(index)), step, steps)
            if init_carry is None:
                body(info)
                return None
            return body(info, carry=carry)
        return fori_loop(0, steps, step_body, init_carry)
    return deco


def planar_snake(lin_idx, shape, minor_dim, tile_width):
    """Maps a linear tile index to (m, n) so that consecutive tiles share operands in L2.

    The `minor_dim` axis (0 = m, 1 = n) is cut into bands of `tile_width` tiles;
    within a band the index runs fastest along the minor axis, and every other band
    walks the major axis backwards ("snake"), so the next band starts next to
    where the previous ended. A last, narrower band takes the remainder.
    """
    minor_size, major_size = shape[minor_dim], shape[1 - minor_dim]
    band_tiles = tile_width * major_size
    band = lin_idx // band_tiles
    full_bands = minor_size // tile_width
    last_width = minor_size - full_bands * tile_width
    in_band = lin_idx - band * band_tiles
    width = tile_width if last_width == 0 else select(band < full_bands, tile_width, last_width)
    minor = band * tile_width + in_band % width
    major_fwd = in_band // width
    major = select(band % 2 == 0, major_fwd, major_size - 1 - major_fwd)
    return (minor, major) if minor_dim == 0 else (major, minor)

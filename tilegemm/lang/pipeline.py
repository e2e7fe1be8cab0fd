"""Software pipelines over a sequential grid: `emit_pipeline` and `emit_pipeline_warp_specialized`.

Both follow Pallas Mosaic GPU (`plgpu.emit_pipeline`, `plgpu.BlockSpec`) and are
written with the ordinary primitives — SMEM stage buffers and mbarriers from
`run_scoped`, a `fori_loop`, `copy_gmem_to_smem`, `barrier_wait`/`barrier_arrive`
— so the traced graph shows exactly what a pipeline does; there is no separate
mechanism for the verifier, the interpreter or the lowering to know about.

    pipeline = tg.emit_pipeline(
        step,                                   # step(indices, a_smem, b_smem)
        grid=(tg.cdiv(k, tile_k),),
        in_specs=[tg.BlockSpec((tile_m, tile_k), lambda ki: (mi, ki), transforms=t),
                  tg.BlockSpec((tile_k, tile_n), lambda ki: (ki, ni), transforms=t)],
        max_concurrent_steps=3)
    pipeline(a_gmem, b_gmem)

Differences from Pallas:
- Inputs only (no `out_specs`): write results after the pipeline, e.g. with
  `copy_smem_to_gmem`.
- No carries: state lives in refs (an ACC or TMEM accumulator). In the
  warp-specialized variant, `compute_context(run)` calls `run(*extra)`, and
  `extra` is appended to the body's arguments (Pallas passes a carry instead).
- `delay_release` is an argument of the pipeline, not of each BlockSpec.
- Block i of a dimension starts at element i * size and may run past the array's
  edge (TMA reads zeros). A `None` block dimension is squeezed, as in Pallas: the
  index map gives the element index there and the SMEM blocks leave it out
  (`BlockSpec((None, tile_m, tile_k), lambda ki: (batch, mi, ki))`).
- The grid is static; it runs in row-major order, the last index fastest.
"""
from dataclasses import dataclass
from typing import Callable

from ..errors import KernelError
from .arch import DEFAULT_LIMITS, WARPGROUP_THREADS
from .control import axis_index, axis_size, fori_loop, run_scoped, when
from .ir import current_user_loc
from .primitives import barrier_arrive, barrier_wait, copy_gmem_to_smem, set_max_registers, wgmma_wait
from .scratch import SMEM, Barrier, ClusterBarrier
from .types import MemorySpace
from .values import Ref, Scalar, ds


@dataclass(frozen=True)
class BlockSpec:
    """The block of a GMEM array each pipeline step reads, and the layout of its SMEM stage buffers.

    `index_map(*indices)` returns one block index per dimension of the array;
    the block starts at `block_index * block_shape[d]`. A `None` dimension is
    squeezed: its index is the element's, and the SMEM block drops it (a batch
    dimension: `BlockSpec((None, 64, 64), lambda ki: (b, mi, ki))`). `transforms` lay out the
    stage buffers (e.g. the MMA swizzle); `collective_axes` multicasts each block
    to every block of the cluster along those axes (warp-specialized pipeline only).
    """
    block_shape: tuple
    index_map: Callable
    transforms: tuple = ()
    collective_axes: tuple = ()

    def __post_init__(self):
        loc = current_user_loc()
        shape = tuple(self.block_shape)
        sized = [d for d in shape if d is not None]
        if not sized or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in sized):
            raise KernelError(f"BlockSpec block_shape must be a tuple of positive ints and None (a squeezed "
                              f"dimension), with at least one int; got {self.block_shape!r}", loc=loc)
        if not callable(self.index_map):
            raise KernelError("BlockSpec index_map must be a function of the pipeline indices, e.g. "
                              "lambda ki: (mi, ki)", loc=loc)
        axes = self.collective_axes
        object.__setattr__(self, "block_shape", shape)
        object.__setattr__(self, "transforms", tuple(self.transforms))
        object.__setattr__(self, "collective_axes", (axes,) if isinstance(axes, str) else tuple(axes or ()))

    def block(self, gmem_ref, indices):
        """The view of `gmem_ref` that the pipeline step at `indices` reads."""
        starts = self.index_map(*indices)
        starts = tuple(starts) if isinstance(starts, (tuple, list)) else (starts,)
        if len(starts) != len(self.block_shape):
            raise KernelError(f"BlockSpec index_map returned {len(starts)} block indices for a "
                              f"{len(self.block_shape)}-d block_shape {self.block_shape}", loc=current_user_loc())
        return gmem_ref.at[tuple(ds(i * size, size) for i, size in zip(starts, self.copied_shape))]

    @property
    def copied_shape(self):
        """The box each TMA copy moves: block_shape with its squeezed dimensions of size 1."""
        return tuple(1 if d is None else d for d in self.block_shape)

    def squeezed(self, stage):
        """The view of a stage buffer (of copied_shape) the body receives: without the squeezed dimensions."""
        if None not in self.block_shape:
            return stage
        return stage.at[tuple(0 if d is None else slice(None) for d in self.block_shape)]


class _Schedule:
    """What both pipelines share: the checked configuration, the stage buffers and the copies of one step."""

    def __init__(self, grid, in_specs, max_concurrent_steps, delay_release, loc):
        grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
        if not grid or not all(isinstance(g, int) and not isinstance(g, bool) and g > 0 for g in grid):
            runtime = ("; a trip count known only at run time (a Scalar) takes a loop of your own: tg.fori_loop or "
                       "tg.while_loop over the steps, with tg.copy_gmem_to_smem and barriers"
                       if any(isinstance(g, Scalar) for g in grid) else "")
            raise KernelError(f"pipeline grid must be a tuple of positive static ints, got {grid!r}{runtime}", loc=loc)
        in_specs = tuple(in_specs)
        if not in_specs or not all(isinstance(s, BlockSpec) for s in in_specs):
            raise KernelError("pipeline in_specs must be a non-empty list of tg.BlockSpec", loc=loc)
        if not isinstance(max_concurrent_steps, int) or max_concurrent_steps < 1:
            raise KernelError(f"max_concurrent_steps must be a static int >= 1, got {max_concurrent_steps!r}",
                              loc=loc)
        if not isinstance(delay_release, int) or not 0 <= delay_release < max_concurrent_steps:
            raise KernelError(f"delay_release={delay_release!r} must be a static int in [0, max_concurrent_steps="
                              f"{max_concurrent_steps}): a stage held for {delay_release} extra steps leaves "
                              f"{max_concurrent_steps} - {delay_release} stages to prefetch into", loc=loc)
        self.grid = grid
        self.in_specs = in_specs
        self.delay_release = delay_release
        self.num_steps = 1
        for g in grid:
            self.num_steps *= g
        self.slots = min(max_concurrent_steps, self.num_steps)
        # Stages are refilled inside the loop only when the loop is longer than the ring.
        self.refills = self.num_steps > self.slots

    def check_refs(self, gmem_refs, loc):
        if len(gmem_refs) != len(self.in_specs):
            raise KernelError(f"the pipeline has {len(self.in_specs)} in_specs but was called with "
                              f"{len(gmem_refs)} refs", loc=loc)
        for i, (ref, spec) in enumerate(zip(gmem_refs, self.in_specs)):
            if not isinstance(ref, Ref) or ref.space != MemorySpace.GMEM:
                raise KernelError(f"pipeline argument {i} must be a GMEM ref (a kernel input or a view of one)",
                                  loc=loc)
            if len(ref.shape) != len(spec.block_shape):
                raise KernelError(f"pipeline argument {i} has shape {tuple(ref.shape)} but its BlockSpec block "
                                  f"{spec.block_shape} has {len(spec.block_shape)} dimensions", loc=loc)

    def buffers(self, gmem_refs):
        """One SMEM ring of `slots` stage buffers per input."""
        return [SMEM((self.slots, *spec.copied_shape), ref.dtype, transforms=spec.transforms)
                for ref, spec in zip(gmem_refs, self.in_specs)]

    def blocks(self, buffers, slot):
        """The SMEM blocks of stage `slot` the body receives (squeezed dimensions left out)."""
        return [spec.squeezed(buf.at[slot]) for buf, spec in zip(buffers, self.in_specs)]

    def indices(self, step):
        """The grid indices of linear step `step` (static or traced), the last index fastest."""
        index, rest = [], step
        for g in reversed(self.grid[1:]):
            index.append(rest % g)
            rest = rest // g
        index.append(rest)
        return tuple(reversed(index))

    def fetch(self, gmem_refs, buffers, ready, step, slot):
        """Starts the TMA copies of step `step` into stage `slot`; each is one arrival on `ready[slot]`."""
        indices = self.indices(step)
        for ref, buf, spec in zip(gmem_refs, buffers, self.in_specs):
            copy_gmem_to_smem(spec.block(ref, indices), buf.at[slot], ready.at[slot],
                              collective_axes=spec.collective_axes or None)


def run_body(body, *args):
    """Calls a pipeline body, which must return None: tilegemm pipelines carry no values between steps."""
    if body(*args) is not None:
        raise KernelError("a pipeline body returns None in tilegemm (there are no carries): keep state that "
                          "lives across steps in refs, e.g. a tg.ACC or tg.TMEM accumulator", loc=current_user_loc())


def emit_pipeline(body, *, grid, in_specs, max_concurrent_steps=2, delay_release=0):
    """Returns `pipeline(*gmem_refs)`, which runs `body(indices, *smem_blocks)` for every step of `grid`.

    One thread does everything: it fills `max_concurrent_steps` SMEM stages with
    TMA, then at each step waits for its stage, runs `body`, and refills the
    stage that step `step - delay_release` used with the step
    `max_concurrent_steps` after that one. `body` must be done reading its blocks
    when it returns — or, for asynchronous readers (`wgmma`, `tcgen05_mma`), by
    the end of the step `delay_release` steps later: e.g. `wgmma_wait(1)` with
    `delay_release=1`.
    """
    loc = current_user_loc()
    schedule = _Schedule(grid, in_specs, max_concurrent_steps, delay_release, loc)
    for spec in schedule.in_specs:
        if spec.collective_axes:
            raise KernelError("BlockSpec collective_axes (multicast) needs cluster-wide release barriers: use "
                              "tg.emit_pipeline_warp_specialized", loc=loc)

    def pipeline(*gmem_refs):
        schedule.check_refs(gmem_refs, current_user_loc())
        slots, d = schedule.slots, schedule.delay_release

        def scoped(*refs):
            *buffers, ready = refs
            for step in range(slots):
                schedule.fetch(gmem_refs, buffers, ready, step, step)

            def step_body(step, _):
                slot = step % slots
                barrier_wait(ready.at[slot])
                run_body(body, schedule.indices(step), *schedule.blocks(buffers, slot))
                if schedule.refills:
                    fetch_step = step + (slots - d)
                    refill = fetch_step < schedule.num_steps
                    if d:
                        refill = refill & (step >= d)

                    @when(refill)
                    def _():  # the stage of step `step - d` is free again
                        schedule.fetch(gmem_refs, buffers, ready, fetch_step, fetch_step % slots)
            fori_loop(0, schedule.num_steps, step_body, None)

        run_scoped(scoped, *schedule.buffers(gmem_refs),
                   Barrier(num_arrivals=len(schedule.in_specs), num_barriers=slots))
    return pipeline


def compute_registers(num_threads, num_compute, memory_registers, limits=DEFAULT_LIMITS):
    """Registers per CUDA thread each compute warpgroup can take after the memory one drops to `memory_registers`."""
    launch = min(limits.max_registers_per_thread, limits.registers_per_sm // (WARPGROUP_THREADS * num_threads))
    pool = launch // 8 * 8 * num_threads
    return min(256, (pool - memory_registers) // num_compute // 8 * 8)


def emit_pipeline_warp_specialized(body, *, grid, in_specs, num_compute_wgs, wg_axis, max_concurrent_steps=2,
                                   delay_release=0, memory_thread_idx=None, memory_registers=40,
                                   compute_context=None):
    """Returns `pipeline(*gmem_refs)`: one memory warpgroup feeds stages to `num_compute_wgs` compute warpgroups.

    The kernel needs `num_threads=num_compute_wgs + 1` along `wg_axis`; the
    memory thread is `memory_thread_idx` (default: the last). It issues the TMA
    copies, waiting on a `consumed` barrier before refilling a stage; every
    compute thread runs `body(indices, *smem_blocks, *extra)` for every step and
    then arrives on `consumed` for the step `delay_release` steps back (so `body`
    must be done reading by then: `wgmma_wait(0)`, or `wgmma_wait(1)` with
    `delay_release=1`; the last `delay_release` steps are released after a
    `wgmma_wait(0)`). Before returning, the memory thread waits until every stage
    is consumed, so the pipeline may run again, e.g. once per tile of an nd_loop.
    With multicast BlockSpecs `consumed` is a ClusterBarrier, since a refill
    writes into every block of the cluster.

    `compute_context(run)`, if given, runs only in the compute threads and must
    call `run(*extra)` once, where the loop should go: allocate per-thread state
    (an ACC) around it and write results after it. `memory_registers` (None: no
    change) is what the memory thread keeps with `set_max_registers`; the
    compute threads take an equal share of the rest.
    """
    loc = current_user_loc()
    schedule = _Schedule(grid, in_specs, max_concurrent_steps, delay_release, loc)
    if not isinstance(num_compute_wgs, int) or num_compute_wgs < 1:
        raise KernelError(f"num_compute_wgs must be a static int >= 1, got {num_compute_wgs!r}", loc=loc)
    memory_idx = num_compute_wgs if memory_thread_idx is None else memory_thread_idx
    if memory_idx not in range(num_compute_wgs + 1):
        raise KernelError(f"memory_thread_idx={memory_thread_idx!r} must be in [0, {num_compute_wgs}]", loc=loc)
    axes = tuple(dict.fromkeys(a for spec in schedule.in_specs for a in spec.collective_axes))

    def pipeline(*gmem_refs):
        call_loc = current_user_loc()
        schedule.check_refs(gmem_refs, call_loc)
        if axis_size(wg_axis) != num_compute_wgs + 1:
            raise KernelError(f"a warp-specialized pipeline with num_compute_wgs={num_compute_wgs} needs "
                              f"num_threads={num_compute_wgs + 1} along {wg_axis!r}, the kernel has "
                              f"{axis_size(wg_axis)}", loc=call_loc)
        slots, d, num_steps = schedule.slots, schedule.delay_release, schedule.num_steps
        consumed_spec = (ClusterBarrier(collective_axes=axes, num_arrivals=num_compute_wgs, num_barriers=slots)
                         if axes else Barrier(num_arrivals=num_compute_wgs, num_barriers=slots))

        def scoped(*refs):
            *buffers, ready, consumed = refs
            wg = axis_index(wg_axis)

            @when(wg == memory_idx)
            def _memory():
                if memory_registers is not None:
                    set_max_registers(memory_registers, action="decrease")

                def fetch_step(step, _):
                    slot = step % slots
                    if schedule.refills:
                        @when(step >= slots)
                        def _():  # every compute thread is done with the step `slots` back
                            barrier_wait(consumed.at[slot])
                    schedule.fetch(gmem_refs, buffers, ready, step, slot)
                fori_loop(0, num_steps, fetch_step, None)
                # Drain: wait until the last steps are consumed too, so that a next run of this
                # pipeline (e.g. the next tile of an nd_loop) may refill every stage at once.
                for step in range(num_steps - slots, num_steps):
                    barrier_wait(consumed.at[step % slots])

            @when(wg != memory_idx)
            def _compute():
                if memory_registers is not None:
                    regs = compute_registers(num_compute_wgs + 1, num_compute_wgs, memory_registers)
                    set_max_registers(regs, action="increase")

                runs = []

                def run(*extra):
                    runs.append(current_user_loc())

                    def compute_step(step, _):
                        slot = step % slots
                        barrier_wait(ready.at[slot])
                        run_body(body, schedule.indices(step), *schedule.blocks(buffers, slot), *extra)
                        if d:
                            @when(step >= d)
                            def _():  # the body retired the step `d` back (e.g. wgmma_wait(d))
                                barrier_arrive(consumed.at[(step - d) % slots])
                        else:
                            barrier_arrive(consumed.at[slot])
                    fori_loop(0, num_steps, compute_step, None)
                    if d:  # release the last `d` steps once their WGMMAs retire
                        wgmma_wait(0)
                        for step in range(max(0, num_steps - d), num_steps):
                            barrier_arrive(consumed.at[step % slots])

                if compute_context is None:
                    run()
                else:
                    compute_context(run)
                if len(runs) != 1:
                    raise KernelError(f"compute_context must call its `run` argument exactly once (where the "
                                      f"pipelined loop goes); it called it {len(runs)} times", loc=call_loc,
                                      related=[("called at", where) for where in runs])

        run_scoped(scoped, *schedule.buffers(gmem_refs),
                   Barrier(num_arrivals=len(schedule.in_specs), num_barriers=slots), consumed_spec)
    return pipeline

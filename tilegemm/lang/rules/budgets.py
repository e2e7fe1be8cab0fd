"""Per-block resource budgets: threads, shared memory, tensor memory and accumulator registers.

Each is a sum over the kernel's allocations (scoped ones included) compared
with `ctx.limits`; errors point at the largest allocation and list the others.
Tensor memory is also budgeted per SM for kernels with clusters: the blocks
that can be resident on one SM at once (by their shared memory and threads)
must fit in its 512 columns together. Otherwise a block's tcgen05.alloc waits
for another block to free its columns, and that block may be waiting for a
peer of its cluster that is itself stuck in tcgen05.alloc on another SM: a
deadlock. (Blocks without a cluster peer only queue: each holder finishes.)
"""
import math

from ...errors import KernelError
from ..analysis import live_accumulators, registers, tmem_columns
from ..arch import WARPGROUP_THREADS, resident_blocks, tmem_allocation_columns
from ..storage import graph_storage
from ..tensorcore import WGMMA
from ..types import MemorySpace
from ..verify import graph_rule, rule

SHOWN = 3  # allocations listed in a budget error


def kib(nbytes):
    """'227 KiB', '64.5 KiB', or '32 bytes' below 1 KiB."""
    return f"{round(nbytes / 1024, 1):g} KiB" if nbytes >= 1024 else f"{nbytes} bytes"


def allocs_in(graph, *spaces):
    """Every alloc op of the graph (nested scopes included) whose ref lives in one of `spaces`."""
    return [op for op in graph.walk() if op.kind == "alloc" and op.result.space in spaces]


def largest_first(allocs, size):
    """`allocs` sorted by `size(op)`, largest first (program order among equals)."""
    return sorted(allocs, key=size, reverse=True)


@graph_rule
def threads_per_block(graph, ctx):
    """num_threads warpgroups of 128 CUDA threads must fit in one block (1024 threads = 8 warpgroups)."""
    n = graph.config["num_threads"]
    limit = ctx.limits.max_threads_per_block
    if n * WARPGROUP_THREADS > limit:
        raise KernelError(f"num_threads={n} asks for {n} warpgroups = {n * WARPGROUP_THREADS} CUDA threads per "
                          f"block; a block has at most {limit} threads, i.e. at most "
                          f"{limit // WARPGROUP_THREADS} warpgroups", loc=graph.loc)


@graph_rule
def shared_memory_budget(graph, ctx):
    """The block's shared storage (lang/storage.py: mbarriers, then 1024-aligned buffers) fits the per-block limit."""
    total = graph_storage(graph).total
    allocs = allocs_in(graph, MemorySpace.SMEM, MemorySpace.BARRIER)
    limit = ctx.limits.smem_per_block
    if total <= limit:
        return
    biggest = largest_first(allocs, lambda op: op.result.type.nbytes)[:SHOWN]
    raise KernelError(
        f"this kernel needs {kib(total)} of shared memory per block, over the {kib(limit)} a block may use on "
        f"{ctx.limits.devices}; use fewer pipeline stages or smaller tiles. Largest allocations:",
        loc=biggest[0].loc,
        related=[(f"{kib(op.result.type.nbytes)} {op.result.type} at", op.loc) for op in biggest])


@rule("alloc")
def tmem_alloc_shape(op, ctx):
    """A TMEM ref is (lanes, columns) with all 128 lanes: tilegemm's tcgen05 MMAs have M=128 per block."""
    if op.result.space != MemorySpace.TMEM:
        return
    t = op.result.type
    lanes = ctx.limits.tmem_lanes
    if len(t.shape) != 2 or t.shape[0] != lanes:
        raise KernelError(f"{t}: tensor memory is allocated as (lanes, columns) with all {lanes} lanes, e.g. "
                          f"tg.TMEM(({lanes}, 256), tg.float32); tilegemm's tcgen05 accumulators have {lanes} "
                          "rows per block (an M=64 one would be spread over the four 32-lane quarters, a layout "
                          "tilegemm does not model)", loc=op.loc)


@graph_rule
def tensor_memory_budget(graph, ctx):
    """The TMEM of every block resident on an SM at once fits in the SM's 512 columns (see the module docstring)."""
    allocs = allocs_in(graph, MemorySpace.TMEM)
    if not allocs:
        return
    total = sum(tmem_columns(op.result.type) for op in allocs)
    limit = ctx.limits.tmem_columns
    biggest = largest_first(allocs, lambda op: tmem_columns(op.result.type))[:SHOWN]
    related = [(f"{tmem_columns(op.result.type)} columns {op.result.type} at", op.loc) for op in biggest]
    if total > limit:
        raise KernelError(
            f"this kernel allocates {total} columns of tensor memory per block, over the {limit} columns of an "
            "SM's TMEM (collective allocations count per block); use a smaller N tile or fewer accumulator "
            "buffers. Largest allocations:", loc=biggest[0].loc, related=related)
    if math.prod(graph.config["cluster"]) <= 1:
        return
    allocated = tmem_allocation_columns(total)
    smem = graph_storage(graph).total
    threads = graph.config["num_threads"] * WARPGROUP_THREADS
    resident = resident_blocks(smem, threads, ctx.limits)
    if allocated * resident <= limit:
        return
    raise KernelError(
        f"{resident} blocks of this kernel fit on one SM at once (by their {kib(smem)} of shared memory and "
        f"{threads} threads), and each allocates {allocated} columns of tensor memory ({total} used, rounded up "
        f"to the power of two tcgen05.alloc takes): {resident * allocated} columns, over the {limit} of an SM, so "
        "a block's tcgen05.alloc could wait for columns held by a block that waits for a cluster peer stuck in "
        f"tcgen05.alloc itself: a deadlock. {_fewer_columns(limit // resident)}use more shared memory per block "
        "(e.g. more pipeline stages) so that fewer blocks share an SM. Largest allocations:", loc=biggest[0].loc,
        related=related)


def _fewer_columns(share):
    """'Allocate at most N columns per block, or ' for the largest allocation that fits `share` columns, if any."""
    fit = 1 << (share.bit_length() - 1) if share else 0
    return f"Allocate at most {fit} columns per block, or " if tmem_allocation_columns(fit) == fit else "Instead, "


@graph_rule
def accumulator_registers(graph, ctx):
    """ACC accumulators live in the registers of one warpgroup: at most 255 per CUDA thread (a lower bound)."""
    allocs = live_accumulators(graph.body)
    regs = registers(sum(op.result.type.nbytes for op in allocs))
    limit = ctx.limits.max_registers_per_thread
    if regs <= limit:
        return
    biggest = largest_first(allocs, lambda op: op.result.type.nbytes)
    rows = biggest[0].result.shape[0]
    if rows > WGMMA.m:
        half = (rows // 2,) + tuple(biggest[0].result.shape[1:])
        remedy = f"split M over two consumer warpgroups (each with tg.ACC({half})) or use a smaller tile"
    else:  # already one WGMMA's 64 rows: only N or the number of accumulators can shrink
        remedy = f"use fewer accumulators or a narrower N tile (a WGMMA accumulator has {WGMMA.m} rows)"
    raise KernelError(
        f"the ACC accumulators live at the same time need {regs} registers per CUDA thread (each of the 128 "
        f"threads of the warpgroup holds 1/128 of every accumulator), more than the {limit} a thread can have; "
        f"{remedy}", loc=biggest[0].loc,
        related=[(f"{registers(op.result.type.nbytes)} registers {op.result.type} at", op.loc)
                 for op in biggest[1:SHOWN]])

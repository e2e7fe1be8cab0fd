"""Tensor-core MMA legality: WGMMA (Hopper) and tcgen05 (Blackwell) shapes, dtypes and 2-CTA rules.

Shapes, operand types and accumulators come from the instruction table (lang/tensorcore.py).
The tcgen05 instructions of one kernel all use the same CTA group (1-CTA or 2-CTA).
"""
from ...errors import KernelError
from .. import dtypes
from ..analysis import alloc_of
from ..tensorcore import TCGEN05, WGMMA
from ..types import MemorySpace
from ..verify import graph_rule, rule


def nearby(x, step, lo=None, hi=None):
    """Legal values near `x` that are multiples of `step` within [lo, hi] ('176 or 184'), for messages."""
    lo = step if lo is None else lo
    if hi is not None and x > hi:
        return f"{hi}"
    below = max(x // step * step, lo)
    above = below + step if hi is None else min(below + step, hi)
    return str(below) if below == above or x < lo else f"{below} or {above}"


def check_dtypes(what, instruction, acc, a, b, loc):
    """Operand types the instruction takes together (one type, or two of a kind: fp8); the accumulator dtype as
    both allow."""
    if not instruction.takes(a.dtype, b.dtype):
        raise KernelError(
            f"{what} operands are {dtypes.name(a.dtype)} and {dtypes.name(b.dtype)}; the tensor core needs "
            f"A and B {instruction.pairs_in_words()} (convert with .astype or store them as such)", loc=loc)
    legal = instruction.accumulator_dtypes(a.dtype, b.dtype)
    if acc.dtype not in legal:
        names = " or ".join(dtypes.name(d) for d in legal)
        operands = " x ".join(dict.fromkeys(dtypes.name(d) for d in (a.dtype, b.dtype)))
        raise KernelError(f"{what} accumulates {operands} products into a "
                          f"{dtypes.name(acc.dtype)} accumulator; legal accumulators: {names}", loc=loc)


def check_k(what, instruction, k, dtype, loc):
    """The tile's K is a whole number of instruction K steps."""
    step = instruction.k(dtype)
    if k % step:
        raise KernelError(f"{what} K is {k}, but one instruction consumes K={step} of {dtypes.name(dtype)}: the "
                          f"tile K must be a multiple of {step} (e.g. {nearby(k, step)})", loc=loc)


def check_a_space(what, instruction, a, loc):
    """A lives where the instruction reads it from (tilegemm lowers shared-memory A only)."""
    space = getattr(a, "space", "registers")
    if space not in instruction.a_spaces:
        where = "a register array" if space == "registers" else f"a {space.upper()} ref"
        raise KernelError(f"{what} A operand is {where}; tilegemm lowers {instruction.name} with A in "
                          f"{' or '.join(s.upper() for s in instruction.a_spaces)}: store A into an SMEM buffer "
                          "(with the MMA swizzle, tg.mma_transforms) and pass the buffer", loc=loc)


@rule("wgmma")
def wgmma_shape_and_dtypes(op, ctx):
    """WGMMA: acc M a multiple of 64, N a multiple of 8 in [8, 256], K a whole number of instructions (16
    16-bit or 32 fp8 elements), operand types from the table."""
    acc, a, b = op.arg("acc"), op.arg("a"), op.arg("b")
    m, n = acc.shape
    rows, step = WGMMA.m, WGMMA.n_step()
    if m % rows:
        raise KernelError(f"wgmma accumulator has M={m} rows; WGMMA computes {rows} rows per instruction, so M "
                          f"must be a multiple of {rows} (e.g. {nearby(m, rows)})", loc=op.loc)
    if n % step or not step <= n <= WGMMA.max_n:
        raise KernelError(f"wgmma N={n} is not a WGMMA shape: N must be a multiple of {step} between {step} and "
                          f"{WGMMA.max_n}, e.g. {nearby(n, step, hi=WGMMA.max_n)}", loc=op.loc)
    check_a_space("wgmma", WGMMA, a, op.loc)
    check_dtypes("wgmma", WGMMA, acc, a, b, op.loc)
    check_k("wgmma", WGMMA, a.shape[1], a.dtype, op.loc)


@rule("tcgen05_mma")
def tcgen05_shape_and_dtypes(op, ctx):
    """tcgen05: per-block M = 128, N in steps the mode allows up to 256, K a whole number of instructions,
    operand types (16-bit or fp8) from the table, f32 acc."""
    acc, a, b = op.arg("acc"), op.arg("a"), op.arg("b")
    axis = op.attrs["collective_axis"]
    two_cta = axis is not None
    if not len(acc.shape) == len(a.shape) == len(b.shape) == 2:
        raise KernelError(f"tcgen05_mma operands must be 2-D, got acc {tuple(acc.shape)}, a {tuple(a.shape)}, "
                          f"b {tuple(b.shape)}", loc=op.loc)
    (m, n), (am, ak), (bk, bn) = acc.shape, a.shape, b.shape
    b_n = n // 2 if two_cta else n
    if (am, ak, bn) != (m, bk, b_n):
        pair = " (2-CTA: each block holds half of B's N columns)" if two_cta else ""
        raise KernelError(f"tcgen05_mma shapes do not fit: acc {tuple(acc.shape)} += a {tuple(a.shape)} @ b "
                          f"{tuple(b.shape)}; expected a ({m}, K) and b (K, {b_n}){pair}", loc=op.loc)
    lanes = TCGEN05.m
    if m != lanes:
        pair = f" (the 2-CTA MMA then covers {2 * m} rows)" if two_cta else ""
        m64 = (" (the hardware's M=64 spreads the accumulator over the four 32-lane quarters of TMEM, a layout "
               "tilegemm does not model)" if m == lanes // 2 else "")
        raise KernelError(f"tcgen05_mma accumulator has M={m} rows per block{pair}; tilegemm's tcgen05 MMAs have "
                          f"{lanes} rows per block, one per TMEM lane (a 2-CTA pair: {2 * lanes}){m64}", loc=op.loc)
    check_a_space("tcgen05_mma", TCGEN05, a, op.loc)
    step = TCGEN05.n_step(two_cta)
    if n % step or not step <= n <= TCGEN05.max_n:
        mode = "2-CTA" if two_cta else "1-CTA"
        raise KernelError(f"tcgen05_mma N={n} is not a tcgen05 shape: with M={m} per block ({mode}) N must be a "
                          f"multiple of {step} between {step} and {TCGEN05.max_n}, e.g. "
                          f"{nearby(n, step, hi=TCGEN05.max_n)}", loc=op.loc)
    check_dtypes("tcgen05_mma", TCGEN05, acc, a, b, op.loc)
    check_k("tcgen05_mma", TCGEN05, ak, a.dtype, op.loc)
    check_collective(op, acc, axis, ctx)


def check_collective(op, acc, axis, ctx):
    """A 2-CTA MMA names a cluster axis of size 2 and accumulates into TMEM allocated collective=True."""
    alloc = alloc_of(acc)
    related = [("the accumulator is allocated at", alloc.loc)] if alloc is not None else []
    if axis is None:
        if acc.type.collective:
            raise KernelError("tcgen05_mma writes a TMEM accumulator allocated with collective=True (for 2-CTA "
                              "MMAs) but gives no collective_axis; pass collective_axis=<the cluster axis of the "
                              "pair> or allocate the TMEM with collective=False", loc=op.loc, related=related)
        return
    check_pair_axis("tcgen05_mma", axis, op.loc, ctx)
    if not acc.type.collective:
        raise KernelError(f"tcgen05_mma with collective_axis={axis!r} spans a 2-CTA pair, so its accumulator must "
                          "be allocated with tg.TMEM(..., collective=True)", loc=op.loc, related=related)


def check_pair_axis(what, axis, loc, ctx):
    """`axis` must be a cluster axis with exactly 2 blocks (the CTA pair of a 2-CTA MMA)."""
    config = ctx.graph.config
    sizes = dict(zip(config["cluster_names"], config["cluster"]))
    if sizes.get(axis) != 2:
        have = ", ".join(f"{k}={v}" for k, v in sizes.items()) or "none (no cluster)"
        raise KernelError(f"{what} collective_axis={axis!r} must name a cluster axis of size 2 (the CTA pair); "
                          f"this kernel's cluster axes: {have}. Declare e.g. cluster=(2,), "
                          f"cluster_names=({axis!r},)", loc=loc)


@rule("tcgen05_commit_arrive")
def tcgen05_commit_pair_axis(op, ctx):
    """tcgen05_commit_arrive's collective_axis, like the MMA's, names the size-2 cluster axis of the pair."""
    if op.attrs["collective_axis"] is not None:
        check_pair_axis("tcgen05_commit_arrive", op.attrs["collective_axis"], op.loc, ctx)


def cta_group(op):
    """2 for a 2-CTA tcgen05 instruction (or collective TMEM), 1 for a 1-CTA one, None for other ops."""
    if op.kind in ("tcgen05_mma", "tcgen05_commit_arrive"):
        return 2 if op.attrs["collective_axis"] is not None else 1
    if op.kind == "alloc" and op.result.space == MemorySpace.TMEM:
        return 2 if op.result.type.collective else 1
    return None


@graph_rule
def one_cta_group_per_kernel(graph, ctx):
    """TMEM allocations, tcgen05 MMAs and commits of one kernel are all 1-CTA or all 2-CTA."""
    first = None
    for op in graph.walk():
        group = cta_group(op)
        if group is None:
            continue
        if first is None:
            first = op, group
        elif group != first[1]:
            what = "collective (2-CTA)" if group == 2 else "1-CTA"
            other = "collective (2-CTA)" if first[1] == 2 else "1-CTA"
            raise KernelError(
                f"this {op.kind} is {what}, but the {first[0].kind} at {first[0].loc} is {other}: the tcgen05 "
                "instructions of a kernel (TMEM allocation, MMAs, commits) all use one CTA group. Make them all "
                "collective (collective_axis=<the pair's cluster axis>, tg.TMEM(..., collective=True)) or none",
                loc=op.loc, related=[(f"the {other} {first[0].kind} is at", first[0].loc)])

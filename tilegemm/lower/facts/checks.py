"""Semantic checks of a compiled kernel against its graph, on the CPU: `check_kernel(ptx, graph)` -> findings.

Each check reads facts off the PTX (`facts.KernelFacts`) and compares them with
what the graph says (`expected`):

* mbarrier-init: every mbarrier of every tg.Barrier is initialised with the
  arrivals that complete its phase (num_arrivals, times the blocks of a
  ClusterBarrier, times 4 when each warp of a warpgroup arrives).
* barrier-wait: every mbarrier wait (its first try_wait and the retries of
  its loop, the timed ones of a debug build's bounded wait included) tests
  one barrier with one parity; that barrier is one the graph's barrier_wait
  ops wait on (or the 2-CTA pair's TMEM dealloc barrier the lowering adds),
  and only warps that wait on it in the graph reach the wait (read off the
  control flow for every warp of every block of the cluster, where the
  graph's conditions say which warps wait).
* expect-tx: every `mbarrier.arrive.expect_tx` names a barrier that copies
  land on and expects the bytes of one of those copies (both halves of a
  2-CTA copy); every copy's bytes are expected somewhere.
* tma-forms: the TMA loads signalling each barrier are multicast, 2-CTA or
  plain exactly as the graph's copies onto that barrier are, and every TMA
  load and store has the dimensions of the GMEM array it copies (an
  extent-1 dimension, as of a single-row A, included), or for a load the
  fewer CuTe may coalesce them into (`tma_ranks`).
* multicast-mask: for every block of the cluster, the mask of each multicast
  TMA load and tcgen05 commit is the blocks along the copy's or MMA's cluster
  axes (evaluated from the PTX with that block's cluster coordinates).
* mma: every group of MMA instructions (one op's K steps, and 64-row blocks
  of a wgmma) matches an MMA of the graph: tcgen05 instruction descriptor
  (M, N, D/A/B types, no negation or sparsity, A and B K- or MN-major as the
  graph reads them) or the wgmma shape, types and transposes (set for
  MN-major operands); the shared-memory descriptors' swizzle, SBO, LBO
  (MN-major), base offset and version; each instruction's start at the
  canonical layout's offset of its first element (K-major and MN-major tiles
  advance differently along K); the A and B starts inside the op's A and B
  buffers (evaluated for a loop's first iteration, facts.FIRST, for some
  warpgroup); the TMEM accumulator column in the op's TMEM ref; and every
  graph MMA has instructions.
* wait-group: the `wgmma.wait_group` and `cp.async.bulk.wait_group[.read]`
  counts are those of the graph's wgmma_wait and wait_smem_to_gmem.
* tmem-alloc: a block allocates the smallest legal number of TMEM columns that
  holds its tg.TMEM refs.

Not checked: which phase a wait's parity stands for (the PTX keeps phases in
loop-carried registers; with those at their first iteration's values or 0 a
parity comes out 0 or 1); that every barrier the graph waits on is waited on
(NVVM drops the waits a shape makes unreachable); values the PTX computes from
run-time data in ways the evaluator does not follow (it follows constants, mov
chains, integer arithmetic and special registers); which thread or branch
executes an instruction; the TMA descriptors' boxes (they live in the host
code, not the PTX).
"""
import functools
from dataclasses import dataclass

from ...lang import dtypes
from ...lang.arch import MBARRIER_BYTES, WARPGROUP_THREADS, WARPS_PER_WARPGROUP, tmem_allocation_columns
from ...lang.tensorcore import WGMMA
from ...lang.types import MemorySpace
from . import expected as ex
from .descriptors import DTYPE, ITYPE, KIND, TCGEN05_VERSION
from .facts import FIRST, STRICT, KernelFacts


WARP_THREADS = WARPGROUP_THREADS // WARPS_PER_WARPGROUP


@dataclass(frozen=True)
class Finding:
    """One way the compiled code disagrees with the graph (or breaks a hardware rule): `check` names the rule."""
    check: str
    message: str

    def __str__(self):
        return f"[{self.check}] {self.message}"


def facts_of(ptx):
    return ptx if isinstance(ptx, KernelFacts) else KernelFacts(ptx)


def check_kernel(ptx, graph):
    """Findings of every semantic check of the compiled kernel (PTX text or KernelFacts) against `graph`."""
    facts = facts_of(ptx)
    findings = []
    for check in (check_barrier_inits, check_barrier_waits, check_expect_tx, check_tma_forms, check_multicast_masks,
                  check_mmas, check_waits, check_tmem_allocation, check_dependent_launch):
        findings += check(facts, graph)
    return findings


# ----------------------------------------------------------------------------- barriers and copies

def barrier_arrays(graph):
    """{id(barrier alloc result): BarrierArray}."""
    return {id(op.result): b for op, b in zip(ex.allocs(graph, MemorySpace.BARRIER), ex.storage(graph).barriers)}


def array_at(arrays, offset):
    return next((a for a in arrays if a.holds(offset)), None)


def check_barrier_inits(facts, graph):
    findings = []
    for arr in barrier_arrays(graph).values():
        for i in range(arr.num_barriers):
            offset = arr.offset + MBARRIER_BYTES * i
            counts = sorted({init.count for init in facts.inits if init.offset == offset}, key=str)
            where = f"{arr.name}[{i}] ({arr.loc}, byte {offset} of SharedStorage)"
            if not counts:
                findings.append(Finding("mbarrier-init", f"{where} is never initialised by an mbarrier.init"))
            elif counts != [arr.init_count]:
                findings.append(Finding("mbarrier-init", f"{where} is initialised with arrival count(s) {counts}; "
                                                         f"the graph completes a phase after {arr.init_count}"))
    return findings


def check_barrier_waits(facts, graph):
    arrays = barrier_arrays(graph)
    waiting = ex.waiting_warps(graph)
    pair_barrier = ex.storage(graph).pair_barrier
    findings = []
    for wait in facts.barrier_waits:
        tested = {(t.offset, t.parity) for t in wait.tries}
        if any(None in t for t in tested):
            findings.append(Finding("barrier-wait", f"PTX {wait.ins}: the barrier or parity it tests is not derivable"))
            continue
        if len(tested) > 1:
            findings.append(Finding("barrier-wait", f"PTX {wait.ins}: its tries test (byte, parity) {sorted(tested)}; "
                                                    "a wait retries the barrier and parity it tried first"))
        offset = wait.tries[0].offset
        key, arr = next(((k, a) for k, a in arrays.items() if a.holds(offset)), (None, None))
        if arr is None:
            if offset != pair_barrier:
                findings.append(Finding("barrier-wait", f"PTX {wait.ins}: waits on byte {offset} of SharedStorage, "
                                                        "where no tg.Barrier lies"))
        elif key not in waiting:
            findings.append(Finding("barrier-wait", f"PTX {wait.ins}: waits on {arr.name} ({arr.loc}), which no "
                                                    "barrier_wait of the graph waits on"))
        elif waiting[key] is not None:
            extra = sorted(reaching_warps(facts, wait.ins, graph) - waiting[key])
            if extra:
                findings.append(Finding("barrier-wait", f"PTX {wait.ins}: warp(s) {extra} wait on {arr.name} "
                                                        f"({arr.loc}); in the graph, warps {sorted(waiting[key])} do"))
    return findings


def reaching_warps(facts, ins, graph):
    """The warps of a block that can reach `ins`, in some block of the cluster."""
    blocks = list(ex.cluster_positions(graph))
    return {w for w in range(graph.config["num_threads"] * WARPS_PER_WARPGROUP)
            if any(facts.program.reaches(ins, cluster_env(coords, rank).at(tid=WARP_THREADS * w))
                   for coords, rank in blocks)}


def check_expect_tx(facts, graph):
    arrays = barrier_arrays(graph)
    brought = {id(arrays[key]): nbytes for key, nbytes in ex.expected_tx(graph).items()}   # by id(BarrierArray)
    findings, expected = [], set()
    for e in facts.expects:
        arr = array_at(arrays.values(), e.offset)
        if arr is None:
            findings.append(Finding("expect-tx", f"PTX {e.ins}: expects bytes on byte {e.offset} of SharedStorage, "
                                                 "where no tg.Barrier lies"))
            continue
        allowed = brought.get(id(arr), set())
        if e.nbytes is None:
            findings.append(Finding("expect-tx", f"PTX {e.ins}: the byte count on {arr.name} is not a constant"))
        elif e.nbytes not in allowed:
            findings.append(Finding("expect-tx", f"PTX {e.ins}: expects {e.nbytes} bytes on {arr.name} ({arr.loc}); "
                                                 f"the copies landing there bring {sorted(allowed) or 'none'}"))
        expected.add((id(arr), e.nbytes))
    for arr in arrays.values():
        for n in sorted(brought.get(id(arr), ())):
            if (id(arr), n) not in expected:
                findings.append(Finding("expect-tx", f"copies onto {arr.name} ({arr.loc}) bring {n} bytes but no "
                                                     "mbarrier.arrive.expect_tx expects them"))
    return findings


def load_form(multicast, cta_group, rank):
    return f"{rank}-D " + ("2-CTA" if cta_group == 2 else "multicast" if multicast else "plain")


def dims(ranks):
    return " and ".join(f"{r}-D" for r in sorted(ranks)) or "no"


def array_rank(gmem):
    """Dimensions of the GMEM array a copy's view is taken from: those of its TMA tensor (extent-1 ones too)."""
    return len(ex.root_ref(gmem).type.shape)


def tma_ranks(gmem, smem):
    """The dimensions a TMA copy between the GMEM view `gmem` and the SMEM `smem` may have in the PTX: its array's
    (array_rank), or fewer where CuTe coalesces innermost dimensions that the box spans whole into the next one
    (their elements one contiguous run on both sides, so only with an unswizzled SMEM side): e.g. a staged
    scale_b box of 8 x 4 float32 from a [Kb, 4] array is one 1-D copy of 32."""
    shape, box = ex.root_ref(gmem).type.shape, gmem.type.shape
    ranks = {len(shape)}
    if len(box) != len(shape) or ex.root_ref(smem).type.transforms:
        return ranks
    rank = len(shape)
    while rank > 1 and box[rank - 1] == shape[rank - 1]:
        rank -= 1
        ranks.add(rank)
    return ranks


def check_tma_forms(facts, graph):
    arrays = barrier_arrays(graph)
    want = {}   # (barrier, form at the array's rank) -> the forms a copy of that kind may take in the PTX
    for op in ex.ops(graph, "copy_gmem_to_smem"):
        axes = op.attrs["collective_axes"]
        pair = op.attrs["partitioned_axis"] is not None
        multicast = not pair and bool(axes) and ex.collective_size(graph, axes) > 1
        name = arrays[id(ex.root_ref(op.arg("barrier")))].name
        form = load_form(multicast, 2 if pair else None, array_rank(op.arg("src")))
        want.setdefault((name, form), set()).update(
            (name, load_form(multicast, 2 if pair else None, r)) for r in tma_ranks(op.arg("src"), op.arg("dst")))
    have = set()
    for t in facts.tma:
        if not t.load:
            continue
        offset = facts.offset(t.barrier, ins=t.ins)
        arr = array_at(arrays.values(), offset)
        have.add((arr.name if arr else f"byte {offset}", load_form(t.multicast, t.cta_group, t.rank)))
    findings = [Finding("tma-forms", f"the graph's copies onto {name} are {form} TMA loads; the PTX has none")
                for (name, form), forms in sorted(want.items()) if not forms & have]
    allowed = set().union(*want.values())
    findings += [Finding("tma-forms", f"the PTX has {form} TMA loads signalling {name}, which no copy of the "
                                      "graph is") for name, form in sorted(have - allowed)]
    stores = {array_rank(op.arg("dst")) for op in ex.ops(graph, "copy_smem_to_gmem")}
    stored = {t.rank for t in facts.tma if not t.load}
    if stores != stored:
        findings.append(Finding("tma-forms", f"the graph's TMA stores write {dims(stores)} arrays; the PTX has "
                                             f"{dims(stored)} TMA stores"))
    return findings


def cluster_env(coords, rank):
    x, y, z = coords
    return STRICT.at(cluster_x=x, cluster_y=y, cluster_z=z, cluster_rank=rank, tid=0)


def check_multicast_masks(facts, graph):
    axes = ex.multicast_axes(graph)
    sites = {"tma": [(t.ins, t.mask) for t in facts.tma if t.multicast],
             "commit": [(c.ins, c.mask) for c in facts.commits if c.multicast]}
    what = {"tma": "multicast TMA load", "commit": "multicast tcgen05.commit"}
    findings = []
    for kind in ("tma", "commit"):
        if bool(axes[kind]) != bool(sites[kind]):
            findings.append(Finding("multicast-mask", f"the graph has {len(axes[kind])} {what[kind]}(s); the PTX has "
                                                      f"{len(sites[kind])}"))
        for coords, rank in ex.cluster_positions(graph):
            allowed = {ex.multicast_mask(graph, a, coords) for a in axes[kind]}
            for ins, mask in sites[kind]:
                value = facts.value(mask, cluster_env(coords, rank), ins)
                if value is None:
                    findings.append(Finding("multicast-mask", f"PTX {ins}: the mask is not derivable for block "
                                                              f"{coords} of the cluster"))
                elif value not in allowed:
                    findings.append(Finding("multicast-mask", f"PTX {ins}: block {coords} of the cluster uses mask "
                                                              f"{value:#06b}; the graph's cluster axes give "
                                                              f"{', '.join(f'{m:#06b}' for m in sorted(allowed))}"))
    return findings


# ----------------------------------------------------------------------------- MMAs

def operand_mismatches(name, operand, steps, tcgen05):
    """How the descriptors of one operand over a group's instructions differ from its canonical layout."""
    if any(d is None for d in steps):
        return [f"{name} descriptor not derivable"]
    out = []
    first = steps[0]
    if not operand.buffer.holds(first.start):
        out.append(f"{name} starts at byte {first.start}, outside {operand.buffer.name} "
                   f"(bytes {operand.buffer.offset}..{operand.buffer.offset + operand.buffer.nbytes - 1})")
    want = dict(swizzle=operand.swizzle, sbo=operand.sbo, base_offset=0)
    if operand.lbo is not None:
        want["lbo"] = operand.lbo
    if tcgen05:
        want.update(version=TCGEN05_VERSION, lbo_mode=0)
    for field, value in want.items():
        got = {getattr(d, field) for d in steps}
        if got != {value}:
            out.append(f"{name} {field} {sorted(got)} (want {value})")
    starts = tuple(d.start - first.start for d in steps)
    if starts != operand.starts[:len(starts)]:
        out.append(f"{name} instructions start at +{list(starts)} bytes (want +{list(operand.starts)})")
    return out


def tcgen05_mismatches(group, mma):
    out = []
    if len(group.steps) != mma.steps:
        out.append(f"{len(group.steps)} instructions (want {mma.steps})")
    if group.cta_group != mma.cta_group:
        out.append(f"cta_group::{group.cta_group} (want {mma.cta_group})")
    if group.kind != KIND.get(mma.a_dtype):
        out.append(f"kind::{group.kind} (want kind::{KIND.get(mma.a_dtype)})")
    d = group.idesc
    if d is None:
        out.append("instruction descriptor not a constant")
    else:
        want = dict(m=mma.m, n=mma.n, d_type=DTYPE.get(mma.acc_dtype), a_type=ITYPE.get(mma.a_dtype),
                    b_type=ITYPE.get(mma.b_dtype), a_major_mn=not mma.a.k_major, b_major_mn=not mma.b.k_major,
                    negate_a=False, negate_b=False, sparse=False, saturate=False, max_shift=0)
        out += [f"idesc {k}={getattr(d, k)} (want {v})" for k, v in want.items() if getattr(d, k) != v]
    if group.tmem_column is None or not mma.tmem[0] <= group.tmem_column <= mma.tmem[1]:
        out.append(f"accumulator at TMEM column {group.tmem_column} (want {mma.tmem[0]}..{mma.tmem[1]})")
    out += operand_mismatches("A", mma.a, [s.a for s in group.steps], True)
    out += operand_mismatches("B", mma.b, [s.b for s in group.steps], True)
    return out


def wgmma_mismatches(facts, group, mma, *, warpgroups):
    out = []
    want = dict(m=mma.m, n=mma.n, k=WGMMA.k(mma.a_dtype), d_type=dtypes.name(mma.acc_dtype),
                a_type=dtypes.name(mma.a_dtype),
                b_type=dtypes.name(mma.b_dtype), trans_a=0 if mma.a.k_major else 1, trans_b=0 if mma.b.k_major else 1)
    out += [f"{k}={getattr(group, k)} (want {v})" for k, v in want.items() if getattr(group, k) != v]
    if len(group.steps) != mma.steps:
        out.append(f"{len(group.steps)} instructions (want {mma.steps})")
    # Which rows of A a warpgroup reads may depend on the warpgroup: judge by the one that matches best.
    best = None
    for wg in range(warpgroups):
        steps = [facts.wgmma_step(s.ins, FIRST.at(tid=128 * wg)) for s in group.steps]
        diff = (operand_mismatches("A", mma.a, [s.a for s in steps], False)
                + operand_mismatches("B", mma.b, [s.b for s in steps], False))
        if best is None or len(diff) < len(best):
            best = diff
    return out + (best or [])


def check_mmas(facts, graph):
    mmas = ex.expected_mmas(graph)
    findings, used = [], set()
    warpgroups = graph.config["num_threads"]
    groups = [(g, "tcgen05_mma", tcgen05_mismatches) for g in facts.tcgen05_groups]
    groups += [(g, "wgmma", functools.partial(wgmma_mismatches, facts, warpgroups=warpgroups))
               for g in facts.wgmma_groups]
    for group, kind, mismatches in groups:
        candidates = [(mismatches(group, m), m) for m in mmas if m.op.kind == kind]
        matched = [m for diff, m in candidates if not diff]
        used.update(id(m.op) for m in matched)
        if not matched:
            closest = min(candidates, key=lambda c: len(c[0]), default=None)
            detail = (f"; closest is {closest[1].op.loc}: {'; '.join(closest[0])}" if closest
                      else f"; the graph has no {kind}")
            findings.append(Finding("mma", f"PTX {group.steps[0].ins.line}: the {len(group.steps)} MMA "
                                           f"instruction(s) from here match no MMA of the graph{detail}"))
    for m in mmas:
        if id(m.op) not in used:
            findings.append(Finding("mma", f"{m.op.loc}: no group of MMA instructions in the PTX implements this "
                                           f"{m.op.kind}"))
    return findings


# ----------------------------------------------------------------------------- waits and TMEM

def check_waits(facts, graph):
    want = ex.expected_waits(graph)
    have = {(w.kind, w.n, w.read) for w in facts.waits}
    names = {"wgmma": "wgmma.wait_group", "bulk": "cp.async.bulk.wait_group"}

    def show(w):
        kind, n, read = w
        return f"{names[kind]}{'.read' if read else ''} {n}"
    findings = [Finding("wait-group", f"the graph waits with {show(w)}; the PTX never does")
                for w in sorted(want - have)]
    findings += [Finding("wait-group", f"the PTX waits with {show(w)}, which no wait of the graph is")
                 for w in sorted(have - want)]
    return findings


def check_tmem_allocation(facts, graph):
    used = ex.tmem_used_columns(graph)
    if not used:
        return [Finding("tmem-alloc", f"PTX {a.ins}: allocates TMEM, which the graph does not use")
                for a in facts.allocs]
    want = tmem_allocation_columns(used)
    got = [a.columns for a in facts.allocs]
    if got != [want]:
        return [Finding("tmem-alloc", f"the graph's TMEM refs use {used} columns, so a block allocates {want}; the "
                                      f"PTX allocates {got or 'none'}")]
    return []


# ----------------------------------------------------------------------------- dependent launch

def check_dependent_launch(facts, graph):
    """A dependent launch (tg.kernel's dependent_launch) waits for the previous kernel (griddepcontrol.wait) before
    any thread touches global memory; any other kernel never waits."""
    program = facts.program
    waits = program.find("griddepcontrol.wait")
    if not graph.config["dependent_launch"]:
        return [Finding("dependent-launch", "the PTX waits for the previous kernel (griddepcontrol.wait), which only "
                                            "a kernel with dependent_launch=True does")] if waits else []
    if not waits:
        return [Finding("dependent-launch", "the kernel is a dependent launch but its PTX never waits for the "
                                            "previous kernel (griddepcontrol.wait)")]
    return [Finding("dependent-launch", f"PTX {ins} touches global memory before the kernel waits for the previous "
                                        "one (griddepcontrol.wait): under a dependent launch it may race with it")
            for ins in program.before_first("griddepcontrol.wait") if "global" in ins.parts]

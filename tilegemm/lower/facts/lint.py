"""A lint of Blackwell (sm_100a) kernels: the tcgen05 and TMEM rules a kernel must keep, read off PTX and SASS.

`lint_sm100(ptx, sass, graph=None)` returns Findings for:

* cta-group: every tcgen05 instruction (and every 2-CTA TMA load) of a kernel
  uses one `cta_group`; the SASS agrees (UTCHMMA, UTCBAR and the TMEM
  allocation carry .2CTA exactly when the PTX's cta_group is 2).
* elect: every tcgen05.mma and tcgen05.commit is issued by one thread: it is
  guarded by the predicate of an `elect.sync` (directly, or by a branch over
  it on the negated predicate) with no label in between.
* tmem-lanes: every tcgen05.ld addresses its warp's lane quarter: warp w reads
  lanes 32 * (w % 4) onwards (the address's lane field, evaluated for every
  warp of the block that can reach the load, with run-time values such as the
  TMEM base at 0).
* tmem-dealloc: tcgen05.dealloc frees the columns and uses the cta_group of
  the tcgen05.alloc, and no TMEM access lies between the last block-wide or
  cluster-wide barrier before it and it.
* named-barrier: each named barrier id (evaluated for every warp that can
  reach the barrier instruction) is used with one thread count.
* pair-barrier: a 2-CTA TMA load signals the leader's mbarrier: its barrier
  address has the peer bit (bit 24, CUTLASS's Sm100MmaPeerBitMask) cleared.
* with a graph, the semantic checks of `checks.py` for the MMAs (instruction
  and shared-memory descriptors: M, N, major-ness, types, swizzle, strides,
  K steps) and the TMEM allocation.

Which warps reach an instruction is read off the control flow: a branch whose
predicate is derivable for the warp (its role, from %tid.x) is followed one
way, any other both ways. What is not checked: anything the evaluator cannot
derive (reported as such); the dealloc's barrier is looked for in program
order, not along every path.
"""
import re

from ...lang.arch import WARPGROUP_THREADS
from . import checks
from .checks import Finding, facts_of
from .facts import FIRST, STRICT
from .ptx import Label

PEER_BIT = 1 << 24
TMEM_ACCESS = ("tcgen05.ld", "tcgen05.st", "tcgen05.mma", "tcgen05.commit", "tcgen05.cp", "tcgen05.shift")
# SASS of tcgen05.mma, tcgen05.commit and tcgen05.alloc: their .2CTA form is the PTX cta_group::2.
SASS_CTA_GROUP = re.compile(r"\b(?:UTCHMMA|UTCBAR|UTCATOMSWS(?:\.2CTA)?\.FIND)[\w.]*")


def lint_sm100(ptx, sass=None, graph=None):
    """Findings of the Blackwell lint over one kernel's PTX (text or KernelFacts), its SASS and, if given, graph."""
    facts = facts_of(ptx)
    threads = facts.program.reqntid
    if threads is None and graph is not None:
        threads = graph.config["num_threads"] * WARPGROUP_THREADS
    findings = check_cta_group(facts, sass) + check_elected(facts) + check_tmem_lanes(facts, threads)
    findings += check_dealloc(facts, threads) + check_named_barriers(facts, threads) + check_pair_barriers(facts)
    if graph is not None:
        findings += checks.check_mmas(facts, graph) + checks.check_tmem_allocation(facts, graph)
    return findings


def tcgen05_cta_groups(facts):
    return {i.modifier("cta_group") for i in facts.program.find("tcgen05") if i.modifier("cta_group")}


def check_cta_group(facts, sass):
    groups = tcgen05_cta_groups(facts) | {str(t.cta_group) for t in facts.tma if t.cta_group}
    findings = []
    if len(groups) > 1:
        findings.append(Finding("cta-group", f"the kernel mixes cta_group::{' and cta_group::'.join(sorted(groups))}"))
    if sass is not None and len(groups) == 1:
        pair = groups == {"2"}
        for ins in sorted(set(SASS_CTA_GROUP.findall(sass))):
            if (".2CTA" in ins) != pair:
                findings.append(Finding("cta-group", f"SASS {ins} disagrees with the PTX's cta_group::{min(groups)}"))
    return findings


# ----------------------------------------------------------------------------- one thread issues MMAs and commits

def elect_predicate(program, pred, at):
    """True when the predicate register `pred`, read at item `at`, is the one an elect.sync defines."""
    ins = program.reaching_definition(pred, at)
    return ins is not None and ins.opcode.startswith("elect.sync") and ins.operands[0].split("|")[-1] == pred


def negated_elect(program, pred, at):
    ins = program.reaching_definition(pred, at)
    return ins is not None and ins.opcode == "not.pred" and elect_predicate(program, ins.operands[1], ins.index)


def is_elected(program, ins):
    """True when `ins` runs only in the thread an elect.sync picked (see the module docstring)."""
    if ins.guard and not ins.guard.startswith("!") and elect_predicate(program, ins.guard, ins.index):
        return True
    for item in reversed(program.items[:ins.index]):
        if isinstance(item, Label):
            return False
        if item.opcode.startswith("bra"):
            if item.guard is None:
                return False
            if item.guard.startswith("!") and elect_predicate(program, item.guard[1:], item.index):
                return True
            if negated_elect(program, item.guard, item.index):
                return True
    return False


def check_elected(facts):
    p = facts.program
    return [Finding("elect", f"PTX {ins}: not issued under an elect.sync (every thread that reaches it issues it)")
            for ins in p.find("tcgen05.mma") + p.find("tcgen05.commit") if not is_elected(p, ins)]


# ----------------------------------------------------------------------------- TMEM

def check_tmem_lanes(facts, threads):
    if not facts.tmem_loads:
        return []
    if threads is None:
        return [Finding("tmem-lanes", "the block size is unknown (no .reqntid and no graph): lanes not checked")]
    findings = []
    for load in facts.tmem_loads:
        for warp in range(threads // 32):
            if not facts.program.reaches(load.ins, STRICT.at(tid=32 * warp)):
                continue
            quarter = 32 * (warp % 4)
            lanes = set()
            for lane in (0, 31):
                env = FIRST.at(tid=32 * warp + lane)
                value = facts.offset(load.address, env, load.ins)
                lanes.add(None if value is None else value >> 16)
            if lanes != {quarter}:
                findings.append(Finding("tmem-lanes", f"PTX {load.ins}: warp {warp} addresses TMEM lane(s) "
                                                      f"{sorted(lanes, key=str)}; it may only access lanes "
                                                      f"{quarter}..{quarter + 31}"))
                break
    return findings


def is_block_barrier(facts, ins, threads):
    if ins.opcode.startswith("barrier.cluster.wait"):
        return True
    if not re.match(r"(bar|barrier)\.sync", ins.opcode) and ins.opcode not in ("bar.sync", "barrier.sync"):
        return False
    count = facts.value(ins.operands[1], ins=ins) if len(ins.operands) > 1 else threads
    return count == threads or (facts.value(ins.operands[0], ins=ins) == 0 and len(ins.operands) == 1)


def check_dealloc(facts, threads):
    findings = []
    allocs = {(a.cta_group, a.columns) for a in facts.allocs}
    for d in facts.deallocs:
        if allocs != {(d.cta_group, d.columns)}:
            findings.append(Finding("tmem-dealloc", f"PTX {d.ins}: frees {d.columns} columns with cta_group::"
                                                    f"{d.cta_group}; the kernel allocates "
                                                    f"{sorted(allocs, key=str) or 'none'} (cta_group, columns)"))
        for item in reversed(facts.program.items[:d.ins.index]):
            if isinstance(item, Label):
                continue
            if is_block_barrier(facts, item, threads):
                break
            if item.opcode.startswith(TMEM_ACCESS):
                findings.append(Finding("tmem-dealloc", f"PTX {d.ins}: follows {item.opcode} (line {item.line}) "
                                                        "without a block or cluster barrier in between"))
                break
        else:
            findings.append(Finding("tmem-dealloc", f"PTX {d.ins}: no block or cluster barrier precedes it"))
    return findings


# ----------------------------------------------------------------------------- named barriers

def check_named_barriers(facts, threads):
    counts, sites = {}, {}
    findings = []
    for nb in facts.named_barriers:
        count = nb.threads if nb.threads is not None else threads
        ids = set()
        for warp in range(max(1, (threads or 32) // 32)):
            env = STRICT.at(tid=32 * warp)
            if facts.program.reaches(nb.ins, env):
                ids.add(facts.value(nb.barrier_id, env, nb.ins))
        if None in ids:
            findings.append(Finding("named-barrier", f"PTX {nb.ins}: the barrier id is not derivable"))
            continue
        for i in ids:
            counts.setdefault(i, set()).add(count)
            sites.setdefault(i, []).append(nb.ins.line)
    for i, c in sorted(counts.items()):
        if len(c) > 1:
            findings.append(Finding("named-barrier", f"barrier {i} is used with thread counts {sorted(c, key=str)} "
                                                     f"(PTX lines {sorted(set(sites[i]))})"))
    return findings


# ----------------------------------------------------------------------------- 2-CTA loads

def check_pair_barriers(facts):
    findings = []
    odd_block = FIRST.at()
    odd_block.symbols["dynamic_smem"] = PEER_BIT
    for t in facts.tma:
        if t.load and t.cta_group == 2:
            value = facts.offset(t.barrier, odd_block, t.ins)
            if value is None or value & PEER_BIT:
                findings.append(Finding("pair-barrier", f"PTX {t.ins}: the barrier address keeps the peer bit, so "
                                                        "the odd block's half would signal its own barrier instead "
                                                        "of the leader's"))
    return findings

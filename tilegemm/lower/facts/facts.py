"""Facts of a compiled kernel read off its PTX: barriers and waits on them, TMA copies, MMAs and their descriptors,
TMEM, wait groups.

`KernelFacts(ptx)` collects, per instruction, what the checks compare with the
graph and with NVIDIA's kernels. Values are derived with `ptx.Program.value`
in two environments:

* `STRICT`: nothing run-time is known, so only values that are constant for
  every thread and block come out (instruction descriptors, tx bytes, init
  counts, the masks of one-axis clusters); anything else is None.
* `FIRST`: thread 0 of block 0, a register a loop carries at its value
  entering the loop (where one definition precedes it:
  `ptx.Program.entry_definition`), every other run-time leaf (phase bits,
  loaded values, the TMEM base address) taken as 0 and the dynamic shared
  memory at address 0. Shared-memory addresses then come out as offsets into
  the SharedStorage struct at the stage of each ring a loop's first iteration
  uses, which is enough to tell which barrier or buffer an instruction names.
  Counters taken at one iteration keep the values derived from them
  consistent: where the compiler keeps `step % stages` as a counter wrapped by
  a conditional subtract, counters all taken as 0 named stage -1 (the
  block-scaled kernel with staged scales).

Facts that depend on the thread or the block (multicast masks of larger
clusters, TMEM lanes, named-barrier ids, which warps reach a wait) are
evaluated by the checks with `Env.at(...)` over the threads and blocks that
matter.
"""
import re
from dataclasses import dataclass

from .descriptors import decode_tcgen05_instr, decode_tcgen05_smem, decode_wgmma_smem
from .ptx import Env, Instruction, Program, Unknown, address

STRICT = Env()
FIRST = Env(special={"%tid.x": 0, "%cluster_ctarank": 0, "%cluster_ctaid.x": 0, "%cluster_ctaid.y": 0,
                     "%cluster_ctaid.z": 0}, opaque=0)


def derive(fn, *args):
    """fn(*args), or None when the value is not derivable."""
    try:
        return fn(*args)
    except Unknown:
        return None


@dataclass(frozen=True)
class MbarrierInit:
    ins: Instruction
    offset: int          # in SharedStorage (FIRST)
    count: int           # STRICT


@dataclass(frozen=True)
class ExpectTx:
    ins: Instruction
    offset: int          # the barrier, in SharedStorage (FIRST)
    nbytes: int          # STRICT


@dataclass(frozen=True)
class BarrierTry:
    """One `mbarrier.try_wait` / `mbarrier.test_wait`: the mbarrier and parity it tests."""
    ins: Instruction
    offset: int          # the barrier, in SharedStorage (FIRST)
    parity: int          # FIRST; None for a wait on a phase state rather than a parity


@dataclass(frozen=True)
class BarrierWait:
    """One wait on an mbarrier: its first try and every try on the path where all of them fail (its loop: the
    retry of a plain wait, the timed retries of a bounded one), first first."""
    tries: tuple

    @property
    def ins(self):
        return self.tries[0].ins


@dataclass(frozen=True)
class TmaCopy:
    """A `cp.async.bulk.tensor` load (global -> shared) or store (shared -> global)."""
    ins: Instruction
    load: bool
    rank: int
    cta_group: int       # None: no .cta_group modifier
    multicast: bool
    mask: str            # the multicast mask operand (None when not multicast)
    barrier: str         # the mbarrier operand (loads)


@dataclass(frozen=True)
class Commit:
    """A `tcgen05.commit`: one arrival on an mbarrier (of several blocks when multicast) once prior MMAs finish."""
    ins: Instruction
    cta_group: int
    multicast: bool
    mask: str
    barrier: str


@dataclass(frozen=True)
class MmaStep:
    """One tensor-core MMA instruction (one K step of an MMA op, of one 64-row block for a wgmma): its
    descriptors at FIRST."""
    ins: Instruction
    a: object            # SmemDescriptor or None
    b: object


@dataclass(frozen=True)
class Tcgen05Group:
    """Consecutive tcgen05.mma instructions issued between commits: one MMA op's K steps."""
    steps: tuple
    cta_group: int
    kind: str
    idesc: object        # InstrDescriptor (STRICT), None when not a constant
    idesc_first: object  # InstrDescriptor at FIRST: run-time fields (e.g. a tiled MMA's negate flags) at 0
    tmem_column: int     # of the accumulator (FIRST), None if not derivable


_WGMMA_TRANSPOSABLE = ("f16", "bf16")   # PTX A types of the wgmma forms with imm-trans-a/b operands


@dataclass(frozen=True)
class WgmmaGroup:
    """The wgmma.mma_async instructions between a wgmma.fence and a wgmma.commit_group."""
    steps: tuple
    m: int
    n: int
    k: int
    d_type: str
    a_type: str
    b_type: str
    trans_a: int
    trans_b: int


@dataclass(frozen=True)
class TmemAlloc:
    ins: Instruction
    cta_group: int
    columns: int         # STRICT


@dataclass(frozen=True)
class TmemLoad:
    ins: Instruction
    address: str         # the TMEM address operand: lane in the high 16 bits, column in the low 16


@dataclass(frozen=True)
class NamedBarrier:
    ins: Instruction
    barrier_id: str      # operand (constant or register)
    threads: int         # STRICT; None: all threads of the block


@dataclass(frozen=True)
class WaitGroup:
    ins: Instruction
    kind: str            # "wgmma" or "bulk"
    n: int
    read: bool


BARRIER_TRIES = ("mbarrier.try_wait", "mbarrier.test_wait")


def cta_group(ins):
    group = ins.modifier("cta_group")
    return int(group) if group else None


class KernelFacts:
    """Everything the checks read from one kernel's PTX."""

    def __init__(self, ptx):
        self.program = p = Program(ptx)
        self.ptx = ptx
        self.inits = [MbarrierInit(i, self.offset(i.operands[0], FIRST, i), self.value(i.operands[1], STRICT, i))
                      for i in p.find("mbarrier.init")]
        self.expects = [ExpectTx(i, self.offset(i.operands[1], FIRST, i), self.value(i.operands[2], STRICT, i))
                        for i in p.instructions if i.opcode.startswith("mbarrier.arrive.expect_tx")]
        self.barrier_waits = self._barrier_waits()
        self.tma = [self._tma(i) for i in p.find("cp.async.bulk.tensor")]
        self.commits = [self._commit(i) for i in p.find("tcgen05.commit")]
        self.tcgen05_groups = self._tcgen05_groups()
        self.wgmma_groups = self._wgmma_groups()
        self.allocs = [TmemAlloc(i, cta_group(i), self.value(i.operands[1], STRICT, i))
                       for i in p.find("tcgen05.alloc")]
        self.deallocs = [TmemAlloc(i, cta_group(i), self.value(i.operands[1], STRICT, i))
                         for i in p.find("tcgen05.dealloc")]
        self.tmem_loads = [TmemLoad(i, i.operands[1]) for i in p.find("tcgen05.ld")]
        self.named_barriers = [self._named_barrier(i) for i in p.instructions
                               if re.match(r"(bar|barrier)\.(sync|arrive|red)", i.opcode)
                               and not i.opcode.startswith("barrier.cluster")]
        self.waits = [WaitGroup(i, "wgmma", int(i.operands[0]), False) for i in p.find("wgmma.wait_group")] + [
            WaitGroup(i, "bulk", int(i.operands[0]), i.has("read")) for i in p.find("cp.async.bulk.wait_group")]

    # ------------------------------------------------------------------ readers

    @staticmethod
    def _tma(ins):
        load = ".global" in ins.opcode and ins.opcode.index(".global") > ins.opcode.index(".shared")
        multicast = ins.has("multicast::cluster")
        ops = ins.operands
        if load:
            return TmaCopy(ins, True, _rank(ins), cta_group(ins), multicast, ops[3] if multicast else None, ops[2])
        return TmaCopy(ins, False, _rank(ins), cta_group(ins), False, None, None)

    @staticmethod
    def _commit(ins):
        multicast = ins.has("multicast::cluster")
        return Commit(ins, cta_group(ins), multicast, ins.operands[1] if multicast else None, ins.operands[0])

    def _try(self, ins):
        parity = self.value(ins.operands[2], FIRST, ins) if ins.has("parity") else None
        return BarrierTry(ins, self.offset(ins.operands[1], FIRST, ins), parity)

    def _barrier_waits(self):
        """Every BarrierWait, in program order of their first tries."""
        tries = [i for i in self.program.instructions if i.opcode.startswith(BARRIER_TRIES)]
        failing = Env(special={t.operands[0]: 0 for t in tries})      # every try finds its phase incomplete
        waits, seen = [], set()
        for first in tries:
            if first.index not in seen:
                retries = [i for i in self.program.after(first, failing) if i.opcode.startswith(BARRIER_TRIES)]
                seen.update(i.index for i in retries)
                ordered = [first] + sorted((i for i in retries if i is not first), key=lambda i: i.index)
                waits.append(BarrierWait(tuple(self._try(i) for i in ordered)))
        return waits

    def _groups(self, member, boundary):
        """Runs of `member` instructions not separated by a `boundary` instruction."""
        groups, current = [], []
        for ins in self.program.instructions:
            if member(ins):
                current.append(ins)
            elif boundary(ins) and current:
                groups.append(current)
                current = []
        if current:
            groups.append(current)
        return groups

    def _descriptor(self, decode, ins, operand, env=FIRST):
        value = self.value(ins.operands[operand], env, ins)
        return None if value is None else decode(value)

    def _tcgen05_groups(self):
        groups = []
        for run in self._groups(lambda i: i.opcode.startswith("tcgen05.mma"),
                                lambda i: i.opcode.startswith(("tcgen05.commit", "mbarrier.try_wait"))):
            first = run[0]
            steps = tuple(MmaStep(i, self._descriptor(decode_tcgen05_smem, i, 1),
                                  self._descriptor(decode_tcgen05_smem, i, 2)) for i in run)
            column = self.offset(first.operands[0], FIRST, first)
            groups.append(Tcgen05Group(steps, cta_group(first), first.modifier("kind"), self._idesc(run, STRICT),
                                       self._idesc(run, FIRST), None if column is None else column & 0xFFFF))
        return groups

    def _idesc(self, run, env):
        """The instruction descriptor the MMAs of `run` share, or None when it is not one derivable value."""
        values = {self.value(i.operands[3], env, i) for i in run}
        return decode_tcgen05_instr(values.pop()) if len(values) == 1 and None not in values else None

    def _wgmma_groups(self):
        groups = []
        for run in self._groups(lambda i: i.opcode.startswith("wgmma.mma_async"),
                                lambda i: i.opcode.startswith(("wgmma.commit_group", "wgmma.fence"))):
            m = re.search(r"\.m(\d+)n(\d+)k(\d+)\.(\w+)\.(\w+)\.(\w+)", run[0].opcode)
            steps = tuple(self.wgmma_step(i) for i in run)
            # Only the 16-bit forms carry imm-trans-a/b; the others (fp8 among them) read both operands K-major.
            trans = run[0].operands[-2:] if m.group(5) in _WGMMA_TRANSPOSABLE else (0, 0)
            groups.append(WgmmaGroup(steps, int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4),
                                     m.group(5), m.group(6), int(trans[0]), int(trans[1])))
        return groups

    def wgmma_step(self, ins, env=FIRST):
        """The MmaStep of a wgmma.mma_async for one thread (its descriptors may depend on the warpgroup)."""
        return MmaStep(ins, self._descriptor(decode_wgmma_smem, ins, 1, env),
                       self._descriptor(decode_wgmma_smem, ins, 2, env))

    # ------------------------------------------------------------------ values for one thread or block

    def offset(self, operand, env=FIRST, ins=None):
        """A shared-memory address operand (of instruction `ins`) as an offset into SharedStorage, or None."""
        at = None if ins is None else ins.index
        if address(operand) is not None:
            return derive(self.program.address_value, operand, env, at)
        return derive(self.program.value, operand, env, at)

    def _named_barrier(self, ins):
        """The NamedBarrier of a bar/barrier instruction; a reduction (bar.red) names its result first and its
        predicate last, around the id and thread count."""
        operands = ins.operands[1:-1] if re.match(r"(bar|barrier)\.red", ins.opcode) else ins.operands
        return NamedBarrier(ins, operands[0], self.value(operands[1], STRICT, ins) if len(operands) > 1 else None)

    def value(self, operand, env=STRICT, ins=None):
        """An operand (of instruction `ins`) as an integer for `env`, or None when it is not derivable."""
        return derive(self.program.value, operand, env, None if ins is None else ins.index)


def _rank(ins):
    m = re.search(r"\.(\d)d\b", ins.opcode)
    return int(m.group(1)) if m else None

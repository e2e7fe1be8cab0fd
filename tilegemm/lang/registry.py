"""The op registry: every op kind of the graph IR is declared once, and every stage registers against it.

An `OpDef` (declared in lang/opdefs.py) says what an op is: its named operands,
attributes and regions, its effects (which memory it reads or writes, through
which proxy, and which asynchronous engine completes the access), whether it is
warpgroup-wide array work, and where it runs: each architecture either lowers
it or declares it "unsupported here" with the reason. The stages attach their
part of the op to the same record:

* the verifier: rules for the op kind (`lang/verify.py`, `@rule(kind, ...)`);
* the interpreter: its handler (`interpret/registry.py`, `@handler(kind)`);
* the lowering: one rule per architecture (`lower/rules.py`, `@lowering(kind, arch, ...)`);
* the performance model: what the op contributes to it (`model/from_graph.py`, `model_term(kind, ...)`).

tests/lang/test_registry.py asserts that every op kind has an interpreter
handler and, on every architecture, a lowering rule or a declared reason why
not. Adding a primitive is walked through in docs/adding-a-primitive.md.
"""
from dataclasses import dataclass, field

ARCHS = ("sm_90a", "sm_100a")   # the architectures tilegemm lowers to; the first is the default target

READ, WRITE, ARRIVE = "read", "write", "arrive"
GENERIC, ASYNC = "generic", "async"   # the memory proxy of an access: ordinary loads/stores, or TMA / tensor cores


@dataclass(frozen=True)
class Engine:
    """An asynchronous unit that completes accesses after the op issuing them returns, and how a thread learns
    that it did (`completes`: the hint a race report gives)."""
    name: str
    completes: str


ENGINES = {engine.name: engine for engine in (
    Engine("tma_load", "A TMA load is visible only to threads that waited (tg.barrier_wait) for the barrier phase "
                       "it completes."),
    Engine("tma_store", "A TMA store reads shared memory until tg.wait_smem_to_gmem(n, wait_read_only=True) in the "
                        "issuing thread covers its group."),
    Engine("wgmma", "A wgmma reads its operands and writes its accumulator until tg.wgmma_wait(n) in the issuing "
                    "warpgroup retires it."),
    Engine("tcgen05", "A tcgen05_mma is complete only for threads that waited for a barrier its completion arrives "
                      "on (its barrier argument or a later tcgen05_commit_arrive)."),
    Engine("tmem_load", "async_load_tmem reads TMEM until tg.wait_load_tmem() in the issuing thread."),
)}


@dataclass(frozen=True)
class Effect:
    """One thing an op does to memory through one of its operands: READ or WRITE it, or ARRIVE on it (a barrier).

    `engine` names the Engine that completes the access (None: it is done when the op returns); `proxy` is
    GENERIC for ordinary loads and stores, ASYNC for TMA and the tensor cores, which see ordinary shared-memory
    stores only after a tg.commit_smem()."""
    operand: str
    access: str
    engine: str = None
    proxy: str = GENERIC

    @property
    def writes(self):
        return self.access == WRITE

    @property
    def synchronous(self):
        return self.engine is None


def reads(operand, engine=None, proxy=GENERIC):
    return Effect(operand, READ, engine, proxy)


def writes(operand, engine=None, proxy=GENERIC):
    return Effect(operand, WRITE, engine, proxy)


def arrives(operand, engine=None):
    return Effect(operand, ARRIVE, engine)


@dataclass(frozen=True)
class Operand:
    """One operand slot: `name`, and whether it may be left out (`optional`) or takes the rest (`variadic`)."""
    name: str
    optional: bool = False
    variadic: bool = False

    @classmethod
    def parse(cls, text):
        """'src', 'barrier?' (optional, trailing) or '*starts' (the rest)."""
        if text.startswith("*"):
            return cls(text[1:], variadic=True)
        if text.endswith("?"):
            return cls(text[:-1], optional=True)
        return cls(text)


@dataclass(eq=False)
class OpDef:
    """One op kind: what it is (declared in lang/opdefs.py) and what each stage registered for it."""
    kind: str
    doc: str
    operands: tuple = ()
    attrs: tuple = ()
    regions: int = 0
    effects: tuple = ()
    retires: str = None         # the Engine whose pending accesses this op waits for (wgmma_wait, ...)
    warpgroup_wide: bool = False   # array work of the whole warpgroup: not inside a WarpMesh core_map
    view: bool = False          # its result is a window of its `ref` operand's memory (no data moves)
    pure: bool = False          # no effect beyond its results: code for an unused result may be dropped
    unsupported: dict = field(default_factory=dict)   # arch -> reason, or fn(op) -> reason or None
    rules: list = field(default_factory=list)          # verifier rules fn(op, ctx)
    interpreter: object = None                          # interpret.registry.Handler
    lowerings: dict = field(default_factory=dict)      # arch -> fn(emitter, op)
    model_terms: dict = field(default_factory=dict)    # term name -> value or fn, for model/from_graph.py

    def __post_init__(self):
        self.operands = tuple(Operand.parse(o) for o in self.operands)
        for i, slot in enumerate(self.operands):
            if (slot.optional or slot.variadic) and i != len(self.operands) - 1:
                raise ValueError(f"{self.kind}: only the last operand may be optional or variadic")
        names = [o.name for o in self.operands] + list(self.attrs)
        for effect in self.effects:
            if effect.operand not in names:
                raise ValueError(f"{self.kind}: effect on unknown operand {effect.operand!r}")
            if effect.engine is not None and effect.engine not in ENGINES:
                raise ValueError(f"{self.kind}: unknown engine {effect.engine!r}")

    # ------------------------------------------------------------------ operands by name

    def operand_slot(self, name):
        for i, slot in enumerate(self.operands):
            if slot.name == name:
                return i, slot
        raise KeyError(f"{self.kind} has no operand {name!r}; its operands: "
                       f"{', '.join(o.name for o in self.operands)}")

    def arg(self, op, name):
        """Operand `name` of `op` (None for an optional one left out; a tuple for the variadic one)."""
        i, slot = self.operand_slot(name)
        if slot.variadic:
            return tuple(op.operands[i:])
        return op.operands[i] if i < len(op.operands) else None

    def bind(self, named):
        """The positional operand tuple for operands given by name (leaving trailing optionals out)."""
        values = []
        for slot in self.operands:
            value = named.pop(slot.name, None)
            if slot.variadic:
                values.extend(value or ())
            elif value is None and not slot.optional:
                raise TypeError(f"{self.kind} needs its operand {slot.name!r}")
            elif value is not None:
                values.append(value)
        return tuple(values)

    def effect(self, operand):
        """The effect this op declares on `operand` (None if it declares none)."""
        return next((e for e in self.effects if e.operand == operand), None)

    def arrival(self, op):
        """The barrier ref `op` arrives on (through an ARRIVE effect), or None."""
        return next((self.arg(op, e.operand) for e in self.effects if e.access == ARRIVE), None)

    # ------------------------------------------------------------------ architectures

    def unsupported_reason(self, op, arch):
        """Why `op` cannot be lowered for `arch` as this op kind declares it, or None if it can."""
        reason = self.unsupported.get(arch)
        return reason(op) if callable(reason) else reason


OPS = {}   # kind -> OpDef


def define(kind, doc, **fields):
    """Declares op kind `kind` (lang/opdefs.py) and returns its OpDef."""
    if kind in OPS:
        raise ValueError(f"op kind {kind!r} is declared twice")
    OPS[kind] = OpDef(kind, doc, **fields)
    return OPS[kind]


def opdef(op_or_kind):
    """The OpDef of an op or an op kind."""
    kind = op_or_kind if isinstance(op_or_kind, str) else op_or_kind.kind
    return OPS[kind]


def kinds_where(predicate):
    """The op kinds whose OpDef satisfies `predicate`."""
    return tuple(kind for kind, d in OPS.items() if predicate(d))


def unsupported_reason(op, arch):
    """Why `op` cannot be lowered for `arch`: its kind's declared reason, or a missing lowering rule."""
    d = opdef(op)
    reason = d.unsupported_reason(op, arch)
    if reason is None and arch not in d.lowerings:
        reason = f"the {arch} lowering has no rule for {op.kind}"
    return reason


def infer_arch(graph):
    """The architecture a kernel targets when it names none: the first of ARCHS lowering every op it uses
    (tcgen05 MMAs and TMEM imply sm_100a), else the one refusing the fewest of its ops (the verifier then
    says why)."""
    ops = list(graph.walk())
    refusals = {arch: sum(unsupported_reason(op, arch) is not None for op in ops) for arch in ARCHS}
    return min(ARCHS, key=lambda arch: (refusals[arch], ARCHS.index(arch)))

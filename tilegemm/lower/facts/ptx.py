"""PTX as data: the instructions of a kernel and the values of its registers.

`Program(ptx)` parses the PTX that NVVM writes (one statement per line, inline
asm blocks included) into labels and `Instruction`s, and records which
instructions define each register. `Program.value(operand, env)` folds a
register's definition chain to an integer: constants, `mov` chains, integer
arithmetic, 64-bit packs and unpacks, predicates and selects. Special
registers (`%tid.x`, `%cluster_ctaid.x`, ...), the dynamic shared-memory
symbol and registers with several or unreadable definitions (loop-carried
values, loads) are leaves the caller's `Env` supplies; a leaf it does not
supply raises `Unknown`. This is how the checks derive run-time values (a
multicast mask shifted by the block's rank, a descriptor built in registers)
for a given thread and block. A register NVVM defines more than once is read
from its last definition earlier in the same basic block, when there is one.

`Program.reaches(ins, env)` and `Program.after(ins, env)` follow the control
flow for one thread: a branch whose predicate `env` determines (a warp's role,
from %tid.x; a wait's try that failed) goes one way, any other both ways.
"""
import re
from dataclasses import dataclass, field


class Unknown(Exception):
    """A value depends on something the environment does not supply."""


@dataclass(frozen=True)
class Instruction:
    """One PTX instruction: `opcode` with its dotted modifiers, raw `operands`, optional `guard` predicate;
    `scope` numbers the `{ }` block it is in (inline asm blocks have their own labels)."""
    index: int
    line: int
    opcode: str
    operands: tuple
    guard: str = None
    scope: int = 0

    @property
    def parts(self):
        return self.opcode.split(".")

    def has(self, modifier):
        """True when `modifier` (e.g. "cta_group::2", "multicast::cluster") is one of the opcode's parts."""
        return modifier in self.parts

    def modifier(self, prefix):
        """The value of a `prefix::value` modifier (e.g. "cta_group" -> "2"), or None."""
        for p in self.parts:
            if p.startswith(prefix + "::"):
                return p[len(prefix) + 2:]
        return None

    def __str__(self):
        guard = f"@{self.guard} " if self.guard else ""
        operands = ", ".join("{...}" if o.startswith("{") and len(o) > 40 else o for o in self.operands)
        return f"line {self.line}: {guard}{self.opcode} {operands}"


@dataclass(frozen=True)
class Label:
    index: int
    line: int
    name: str
    scope: int = 0


@dataclass(frozen=True)
class Address:
    """A `[base+offset]` memory operand: `base` a register, symbol or None; `offset` an int."""
    base: str
    offset: int


@dataclass
class Env:
    """What the leaves of a value are for one thread of one block.

    `special`: special registers by name (e.g. {"%tid.x": 0}); `symbols`: addresses of
    named variables (the dynamic shared memory is at 0 by default, so shared addresses
    come out as offsets into it); `opaque`: the value given to a register whose
    definition cannot be followed (None: such a register raises Unknown). Where `opaque`
    is set, a register a loop carries is read as it enters the loop (`entry_definition`):
    the first iteration's value, consistent with the other registers the loop carries.
    """
    special: dict = field(default_factory=dict)
    symbols: dict = field(default_factory=dict)
    opaque: int = None

    def at(self, **special):
        """A copy with some special registers set, e.g. env.at(tid=130) sets %tid.x."""
        names = {"tid": "%tid.x", "cluster_rank": "%cluster_ctarank", "cluster_x": "%cluster_ctaid.x",
                 "cluster_y": "%cluster_ctaid.y", "cluster_z": "%cluster_ctaid.z"}
        update = {names.get(k, k): v for k, v in special.items()}
        return Env({**self.special, **update}, dict(self.symbols), self.opaque)


DYNAMIC_SMEM = re.compile(r"__dynamic_shmem__\d+")

_LABEL = re.compile(r"^([$A-Za-z_][\w$]*):\s*(.*)$")
_GUARD = re.compile(r"^@(!?%?\w+)\s+(.*)$")
_INT = re.compile(r"^-?(?:0[xX][0-9a-fA-F]+|\d+)[uU]?$")

# Instructions whose first operand is not a destination (as opcode prefixes).
_NO_DESTINATION = tuple(p + "." for p in (
                   "st", "red", "cp", "bar", "barrier", "fence", "membar", "bra", "ret", "exit", "setmaxnreg",
                   "prefetch", "trap", "tensormap", "griddepcontrol", "nanosleep", "stmatrix", "wgmma.fence",
                   "wgmma.commit_group", "wgmma.wait_group", "mbarrier.init", "mbarrier.expect_tx",
                   "tcgen05.mma", "tcgen05.commit", "tcgen05.alloc", "tcgen05.dealloc",
                   "tcgen05.relinquish_alloc_permit",
                   "tcgen05.fence", "tcgen05.wait", "tcgen05.cp", "tcgen05.shift", "tcgen05.st", "pragma"))


def split_operands(text):
    """Splits an operand list at the commas outside brackets and braces."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return tuple(out)


def parse_int(text):
    text = text.rstrip("uU")
    return int(text, 16) if text.lower().lstrip("-").startswith("0x") else int(text)


def is_int(text):
    return bool(_INT.match(text))


def vector(operand):
    """The registers of a `{%a, %b}` operand."""
    return split_operands(operand.strip()[1:-1])


def address(operand):
    """The Address of a `[base]`, `[base+off]` or `[off]` operand (None if it is not one)."""
    text = operand.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    inner = text[1:-1].strip()
    if "," in inner:           # a tensor operand such as [%rd9, {%r42, %r11}]
        return None
    m = re.match(r"^(.*?)\s*([+-])\s*(-?(?:0[xX][0-9a-fA-F]+|\d+))$", inner)
    if m:
        sign = -1 if m.group(2) == "-" else 1
        return Address(m.group(1).strip(), sign * parse_int(m.group(3)))
    if is_int(inner):
        return Address(None, parse_int(inner))
    return Address(inner, 0)


def _width(opcode):
    m = re.search(r"\.[bus](8|16|32|64)\b", opcode)
    return int(m.group(1)) if m else 64


def _signed(opcode):
    return bool(re.search(r"\.s(8|16|32|64)\b", opcode))


def _wrap(value, bits, signed=False):
    value &= (1 << bits) - 1
    if signed and value >> (bits - 1):
        value -= 1 << bits
    return value


class Program:
    """The parsed PTX of one module: `entries` (kernel names), `items` (Labels and Instructions in order)."""

    def __init__(self, ptx):
        self.text = ptx
        self.entries = []
        self.items = []
        self.defs = {}          # register -> [Instruction defining it]
        self.reqntid = None
        self.parents = {0: None}  # scope -> enclosing scope
        self.labels = {}        # (scope, name) -> Label
        self._parse(ptx)
        self._blocks = self._basic_blocks()
        self._block_start = {i: first for first, (last, _) in self._blocks.items() for i in range(first, last + 1)}

    # ------------------------------------------------------------------ parsing

    def _parse(self, ptx):
        in_params = False
        self._scope = 0
        for number, raw in enumerate(ptx.splitlines(), start=1):
            text = re.sub(r"//.*$", "", raw).strip()
            if text == "{":
                inner = len(self.parents)
                self.parents[inner] = self._scope
                self._scope = inner
                continue
            if text == "}":
                self._scope = self.parents[self._scope] or 0
                continue
            if not text:
                continue
            if in_params:
                in_params = ")" not in text
                continue
            m = _LABEL.match(text)
            if m and not text.startswith("."):
                label = Label(len(self.items), number, m.group(1), self._scope)
                self.items.append(label)
                self.labels[(self._scope, label.name)] = label
                text = m.group(2).strip()
                if not text:
                    continue
            if text.startswith("."):
                entry = re.search(r"\.entry\s+([\w$]+)", text)
                if entry:
                    self.entries.append(entry.group(1))
                    in_params = "(" in text and ")" not in text
                reqntid = re.match(r"\.reqntid\s+(\d+)", text)
                if reqntid:
                    self.reqntid = int(reqntid.group(1))
                continue
            for statement in filter(None, (s.strip() for s in text.split(";"))):
                self._add_instruction(number, statement)

    def _add_instruction(self, number, statement):
        guard = None
        m = _GUARD.match(statement)
        if m:
            guard, statement = m.group(1), m.group(2)
        opcode, _, rest = statement.partition(" ")
        if not opcode or opcode in ("{", "}"):
            return
        ins = Instruction(len(self.items), number, opcode, split_operands(rest.strip()), guard, self._scope)
        self.items.append(ins)
        for reg in self._destinations(ins):
            self.defs.setdefault(reg, []).append(ins)

    @staticmethod
    def _destinations(ins):
        if not ins.operands or (ins.opcode + ".").startswith(_NO_DESTINATION):
            return []
        first = ins.operands[0]
        if first.startswith("{"):
            return [r for r in vector(first) if r.startswith("%")]
        return [r for r in first.split("|") if r.startswith("%")]

    # ------------------------------------------------------------------ queries

    @property
    def instructions(self):
        return [i for i in self.items if isinstance(i, Instruction)]

    def find(self, prefix):
        """Instructions whose opcode is `prefix` or starts with `prefix.`."""
        return [i for i in self.instructions if i.opcode == prefix or i.opcode.startswith(prefix + ".")]

    # ------------------------------------------------------------------ control flow

    def target(self, branch):
        """The Label a `bra` jumps to (looked up in its `{ }` block, then the enclosing ones)."""
        scope = branch.scope
        while scope is not None:
            label = self.labels.get((scope, branch.operands[0]))
            if label is not None:
                return label
            scope = self.parents[scope]
        return None

    def _basic_blocks(self):
        """{first item index: (last item index, successor first indices)} of the straight-line runs."""
        starts = {0}
        for item in self.items:
            if isinstance(item, Label):
                starts.add(item.index)
            elif item.opcode.startswith(("bra", "ret", "exit")):
                starts.add(item.index + 1)
        starts = sorted(i for i in starts if i < len(self.items))
        blocks = {}
        for first, nxt in zip(starts, starts[1:] + [len(self.items)]):
            last = self.items[nxt - 1]
            succ = []
            if isinstance(last, Instruction) and last.opcode.startswith("bra"):
                label = self.target(last)
                succ.append(None if label is None else label.index)
                if last.guard is not None and nxt < len(self.items):
                    succ.append(nxt)
            elif not (isinstance(last, Instruction) and last.opcode.startswith(("ret", "exit"))):
                if nxt < len(self.items):
                    succ.append(nxt)
            blocks[first] = (nxt - 1, succ)
        return blocks

    def _successors(self, first, env):
        """The blocks (first item indices) a thread of `env` may go to from the block starting at `first`: a branch
        whose predicate `env` determines goes one way, any other both ways."""
        last, succ = self._blocks[first]
        branch = self.items[last]
        if isinstance(branch, Instruction) and branch.guard is not None and len(succ) == 2:
            try:
                taken = bool(self.value(branch.guard.lstrip("!"), env)) != branch.guard.startswith("!")
                return [succ[0] if taken else succ[1]]
            except Unknown:
                pass
        return succ

    def _blocks_from(self, starts, env):
        """The blocks (first item indices) reachable from `starts` (included) for the thread of `env`."""
        seen, todo = set(), list(starts)
        while todo:
            first = todo.pop()
            if first in seen or first is None:
                continue
            seen.add(first)
            yield first
            todo.extend(self._successors(first, env))

    def reaches(self, ins, env):
        """False when no path from the kernel's start reaches `ins` for the thread of `env`."""
        return any(first <= ins.index <= self._blocks[first][0] for first in self._blocks_from([0], env))

    def before_first(self, opcode):
        """The instructions some thread may execute before it executes an unguarded `opcode` (any thread: no branch
        is resolved)."""
        seen, todo, found = set(), [0], []
        while todo:
            first = todo.pop()
            if first is None or first in seen:
                continue
            seen.add(first)
            last, successors = self._blocks[first]
            for item in self.items[first:last + 1]:
                if isinstance(item, Instruction):
                    if item.opcode == opcode and item.guard is None:
                        break
                    found.append(item)
            else:
                todo.extend(successors)
        return found

    def after(self, ins, env):
        """The instructions the thread of `env` may execute after `ins` (each once, in no particular order)."""
        first = self._block_start[ins.index]
        items = self.items[ins.index + 1:self._blocks[first][0] + 1]
        for block in self._blocks_from(self._successors(first, env), env):
            items += self.items[block:self._blocks[block][0] + 1]
        return list({i.index: i for i in items if isinstance(i, Instruction)}.values())

    # ------------------------------------------------------------------ values

    def value(self, operand, env, at=None):
        """The integer value of an operand (register, immediate, symbol) for `env`; raises Unknown.

        `at`: the index of the instruction reading it, which lets a register defined more than
        once be read from its last definition before `at` in the same basic block.
        """
        return self._value(operand.strip(), env, {}, at)

    def address_value(self, operand, env, at=None):
        """The address a `[base+offset]` operand names, for `env`; raises Unknown."""
        addr = address(operand)
        if addr is None:
            raise Unknown(f"{operand} is not an address")
        base = 0 if addr.base is None else self._value(addr.base, env, {}, at)
        return base + addr.offset

    def reaching_definition(self, reg, at):
        """The instruction whose value of `reg` the instruction at index `at` reads, when the PTX says so
        statically: the only definition, or the last one before `at` in the same basic block."""
        defs = self.defs.get(reg, [])
        if len(defs) == 1:
            return defs[0]
        if at is None:
            return None
        start = self._block_start[at]
        local = [d for d in defs if start <= d.index < at]
        return local[-1] if local else None

    def entry_definition(self, reg, at):
        """The definition of `reg` that the instruction at index `at` reads on its first pass, when only one lies
        before `at`'s basic block: the value a loop carries as it enters the loop (the others redefine it
        further down the loop). None where that is not the case or `at` is not known."""
        if at is None:
            return None
        before = [d for d in self.defs.get(reg, []) if d.index < self._block_start[at]]
        return before[0] if len(before) == 1 else None

    def _value(self, operand, env, memo, at):
        if is_int(operand):
            return parse_int(operand)
        if operand in env.special:
            return env.special[operand]
        if DYNAMIC_SMEM.fullmatch(operand):
            return env.symbols.get("dynamic_smem", 0)
        if operand in env.symbols:
            return env.symbols[operand]
        if operand.startswith("%") and operand.split(".")[0] in ("%tid", "%ntid", "%ctaid", "%nctaid", "%laneid",
                                                                "%warpid", "%cluster_ctaid", "%cluster_ctarank",
                                                                "%clusterid", "%cluster_nctarank", "%nclusterid"):
            raise Unknown(f"special register {operand}")
        if not operand.startswith("%"):
            raise Unknown(f"operand {operand}")
        ins = self.reaching_definition(operand, at)
        if ins is None and env.opaque is not None:
            ins = self.entry_definition(operand, at)
        key = (operand, None if ins is None else ins.index)
        if key in memo:
            if memo[key] is None:
                raise Unknown(f"{operand} is defined through itself")
            return memo[key]
        memo[key] = None
        try:
            result = self._evaluate(ins, operand, env, memo) if ins is not None else self._opaque(operand, env)
        except Unknown:
            if env.opaque is None:
                raise
            result = env.opaque
        memo[key] = result
        return result

    def _opaque(self, reg, env):
        if env.opaque is None:
            raise Unknown(f"{reg} has {len(self.defs.get(reg, []))} definitions")
        return env.opaque

    def _evaluate(self, ins, reg, env, memo):
        op = ins.parts[0]
        srcs = ins.operands[1:]
        bits = _width(ins.opcode)
        signed = _signed(ins.opcode)

        def v(x):
            return self._value(x, env, memo, ins.index)

        if op == "mov":
            dst, src = ins.operands[0], srcs[0]
            if dst.startswith("{"):                    # unpack: mov.b64 {%lo, %hi}, %rd
                regs = vector(dst)
                half = bits // len(regs)
                return (v(src) >> (half * regs.index(reg))) & ((1 << half) - 1)
            if src.startswith("{"):                    # pack: mov.b64 %rd, {%lo, %hi}
                regs = vector(src)
                half = bits // len(regs)
                return sum((v(r) & ((1 << half) - 1)) << (half * i) for i, r in enumerate(regs))
            return _wrap(v(src), bits, signed)
        if op in ("cvt", "cvta"):
            if any(p.startswith("f") and p[1:].isdigit() for p in ins.parts[1:]) or "rn" in ins.parts:
                raise Unknown(f"floating-point conversion at {ins}")
            return _wrap(v(srcs[-1]), bits, signed)
        if op == "shfl":                               # shfl.sync.idx %d, %src, 0, 31, -1: lane 0's value
            if srcs[1:3] != ("0", "31") or "idx" not in ins.parts:
                raise Unknown(f"shuffle at {ins}")
            tid = env.special.get("%tid.x")
            lane0 = env if tid is None else env.at(tid=tid - tid % 32)
            return self._value(srcs[0], lane0, {}, ins.index)
        if op == "setp":
            a, b = v(srcs[0]), v(srcs[1])
            a, b = _wrap(a, bits, signed), _wrap(b, bits, signed)
            cmp = ins.parts[1]
            table = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b,
                     "lo": a < b, "ls": a <= b, "hi": a > b, "hs": a >= b}
            if cmp not in table:
                raise Unknown(f"comparison at {ins}")
            return int(table[cmp])
        if op == "selp":
            return v(srcs[0]) if v(srcs[2]) else v(srcs[1])
        if op == "not":
            if ins.opcode == "not.pred":
                return int(not v(srcs[0]))
            return _wrap(~v(srcs[0]), bits, signed)
        if op == "neg":
            return _wrap(-v(srcs[0]), bits, signed)
        binary = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "and": lambda a, b: a & b,
                  "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b, "min": min, "max": max}
        if op in binary:
            if ins.opcode.endswith(".pred"):
                return int(binary[op](bool(v(srcs[0])), bool(v(srcs[1]))))
            return _wrap(binary[op](v(srcs[0]), v(srcs[1])), bits, signed)
        if op == "shl":
            return _wrap(v(srcs[0]) << v(srcs[1]), bits, signed)
        if op == "shr":
            a = _wrap(v(srcs[0]), bits, signed)
            return _wrap(a >> v(srcs[1]), bits, signed)
        if op == "mul" and "hi" in ins.parts:          # the high half: how compilers divide by a constant
            a, b = _wrap(v(srcs[0]), bits, signed), _wrap(v(srcs[1]), bits, signed)
            return _wrap((a * b) >> bits, bits, signed)
        if op == "mul" and ("lo" in ins.parts or "wide" in ins.parts):
            a, b = _wrap(v(srcs[0]), bits, signed), _wrap(v(srcs[1]), bits, signed)
            return _wrap(a * b, 2 * bits if "wide" in ins.parts else bits, signed)
        if op == "mad" and "lo" in ins.parts:
            a, b = _wrap(v(srcs[0]), bits, signed), _wrap(v(srcs[1]), bits, signed)
            return _wrap(a * b + v(srcs[2]), bits, signed)
        if op in ("div", "rem") and not ins.opcode.endswith(("f32", "f64")):
            a, b = _wrap(v(srcs[0]), bits, signed), _wrap(v(srcs[1]), bits, signed)
            if b == 0:
                raise Unknown(f"division by zero at {ins}")
            q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
            return _wrap(q if op == "div" else a - q * b, bits, signed)
        raise Unknown(f"{reg} is defined by {ins.opcode}")

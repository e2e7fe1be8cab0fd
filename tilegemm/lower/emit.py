"""The graph walker: turns a verified graph into the source of one CuTe DSL module.

`KernelEmitter` visits the graph's ops in order and, for each, runs the lowering
rule its kind registered for the target architecture (rules.py, against the op
registry), writing Python for the `@cute.kernel` body and collecting what the
`@cute.jit` host function must build (GMEM tensors, TMA descriptors) as kernel
parameters. Scalars, control flow, shared memory and barriers live here; what
both architectures share is in `memory.py` (TMA, views, clusters), `arrays.py`
(register arrays) and `simt.py` (CUDA cores); Hopper's tensor cores in
`sm90.py`, Blackwell's (tcgen05, TMEM, 2-CTA) in `sm100.py`. `Sm90Emitter` and
`Sm100Emitter` combine the common machinery with their architecture's.
"""
import ast
import builtins
import linecache

from ..lang.analysis import root_ref
from ..lang.types import ArrayType, MemorySpace, ScalarType
from ..lang.arch import WARPGROUP_THREADS as WARPGROUP
from ..lang.storage import graph_storage
from . import cute_names as cn
from .arrays import ArrayOps
from .branching import BranchingOps
from .distribution import Uniform, array_distributions
from .elementwise import ElementwiseOps
from .generated import GeneratedKernel, LaunchDims, Param
from .memory import MemoryOps
from .printing import PrintOps
from .plan import barrier_plans, buffer_uses, loop_index_starts, nonnegative, resolve_view, unsupported, use_counts
from .rules import BOTH, SM90, lowering
from .simt import SimtOps
from .sm90 import Sm90Ops
from .sm100 import SM100_IMPORTS, SM100_NAMES, Sm100Ops
from .smem import SmemBuffer
from .source import Names, SourceWriter

MODULE_NAMES = ("cutlass", "cute", "cuda", "cpasync", "warpgroup", "OperandMajorMode", "sm90_helpers", "tgd",
                "TensorMap", "tgtma",
                "SharedStorage", "storage", "tidx", "warp", "warpgroup_idx", "warp_in_warpgroup",
                "thread_in_warpgroup", "float", "index", "k_block")
_BINOPS = {"add": "+", "sub": "-", "mul": "*", "div": "//", "rem": "%", "lt": "<", "le": "<=", "gt": ">",
           "ge": ">=", "eq": "==", "ne": "!=", "and": "&", "or": "|", "xor": "^"}
_INLINE = ("binop", "select")


def identity_operand(kind, a, b):
    """The operand a binop of `kind` leaves unchanged when the other is its identity element (x + 0, x * 1, ...),
    or None. Only traced values qualify: an expression on literals keeps its literal type."""
    identities = {"add": ((0, 1), (0, 0)), "mul": ((1, 1), (1, 0)), "sub": ((0, 1),), "div": ((1, 1),)}
    for identity, position in identities.get(kind, ()):
        element, other = (b, a) if position == 1 else (a, b)
        if isinstance(element, int) and not isinstance(element, bool) and element == identity \
                and not isinstance(other, (int, float, bool)):
            return other
    return None


def offset_of(x, uses):
    """(y, c) when `x` is the sum y + c (or difference y - c) of a traced value and an int that nothing but one
    binop reads, else (x, 0): a chain of such offsets is folded into one, (y + 128) - 1 into y + 127."""
    p = getattr(x, "producer", None)
    if p is None or p.kind != "binop" or p.attrs["op"] not in ("add", "sub") or uses.get(id(x), 0) > 1:
        return x, 0
    y, c = p.operands
    if not isinstance(c, int) or isinstance(c, bool) or isinstance(y, (int, float, bool)):
        return x, 0
    inner, offset = offset_of(y, uses)
    return inner, offset + (c if p.attrs["op"] == "add" else -c)


def unparenthesised(text):
    """`text` without the parentheses around the whole of it, if it has them."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and i < len(text) - 1:
            return text   # "(a) + (b)": the first parenthesis closes early
    return text[1:-1]


def assigned_names(graph):
    """id(value) -> name, for the value a plain assignment `name = ...` of the kernel's source binds: the last
    scalar or array result recorded on that line, in each run of consecutive ops from it."""
    names = {}

    def visit(region):
        run = []
        for op in region.ops + [None]:
            if op is not None and run and op.loc == run[-1].loc:
                run.append(op)
                continue
            if run:
                target = _assignment_target(run[-1].loc)
                results = [r for o in run for r in o.results if isinstance(r.type, (ScalarType, ArrayType))]
                if target is not None and results:
                    names[id(results[-1])] = target
            run = [op] if op is not None else []
        for op in region.ops:
            for r in op.regions:
                visit(r)

    visit(graph.body)
    return names


def _assignment_target(loc):
    """The variable a source line `name = expression` assigns (None for any other line)."""
    if loc is None:
        return None
    text = linecache.getline(loc.file, loc.line).strip()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    stmt = tree.body[0] if len(tree.body) == 1 else None
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        name = stmt.targets[0].id
        return None if name in dir(builtins) else name
    return None


class Barriers:
    """An mbarrier array in SharedStorage and the per-thread phase bits of the implicit-phase waits."""

    def __init__(self, name, spec, plan, loc):
        self.name, self.spec, self.plan, self.loc = name, spec, plan, loc
        self.phase = f"{name}_phase"


class KernelEmitter(MemoryOps, ArrayOps, SimtOps, ElementwiseOps, PrintOps, BranchingOps):
    """Generates the CuTe DSL module for one graph; `generate()` returns a GeneratedKernel. The machinery both
    architectures share; an architecture's emitter (below) adds its own."""

    BACKEND = None
    MODULE_NAMES = MODULE_NAMES
    IMPORTS = ()

    def __init__(self, graph, arch, barrier_timeout=None):
        self.graph, self.arch = graph, arch
        self.barrier_timeout = barrier_timeout   # seconds: barrier waits give up and report (tilegemm.debug)
        self.hang_waits = []    # what each bounded wait waits for, by its code - 1
        self.names = Names(self.MODULE_NAMES)
        self.buffer_uses = buffer_uses(graph)
        self.barrier_plans = barrier_plans(graph)
        self.dists = array_distributions(graph)
        self.uses = use_counts(graph)
        self.loop_starts = loop_index_starts(graph)
        self.expr = {}          # id(scalar or array value) -> source expression
        self.user_names = assigned_names(graph)   # id(value) -> the user's variable it was assigned to
        self.pure_names = set()   # variables of side-effect-free values: the module drops those never read
        self.buffers = {}       # id(SMEM alloc result) -> SmemBuffer
        self.barriers = {}      # id(barrier alloc result) -> Barriers
        self.ref_names = {}     # id(param or alloc result) -> readable name
        self.kernel_params = []
        self.constants = {}     # host Int32 parameter name -> the value every launch passes
        self.host = SourceWriter()
        self.prologue = SourceWriter()
        self.w = SourceWriter()
        self.features = set()
        self.core_map_depth = 0
        self.last_loc = None
        self.axis_vars = {}
        self.kernel_name = self.names.fresh(graph.name)
        self.names.used.add(f"{self.kernel_name}_kernel")
        self.init_memory()

    # ------------------------------------------------------------------ module

    def generate(self):
        """Walks the graph and returns the complete module as a GeneratedKernel."""
        cfg = self.graph.config
        if len(cfg["grid"]) > 3 or len(cfg["cluster"]) > 3:
            raise unsupported(self.graph, f"a grid of {len(cfg['grid'])} axes or a cluster of {len(cfg['cluster'])}",
                              "use at most 3 grid axes and 3 cluster axes (CUDA's x, y, z)")
        self.name_refs()
        self.declare_scratch()
        self.emit_region(self.graph.body)
        self.finish_kernel()
        params = tuple(Param(self.ref_names[id(v)], tuple(v.shape), v.dtype, is_output=i >= len(self.graph.inputs))
                       for i, v in enumerate(self.graph.params))
        return GeneratedKernel(source=self.module_source(), entry=self.kernel_name, params=params, arch=self.arch,
                               backend=self.BACKEND, features=tuple(sorted(self.features)), launch=self.launch_dims(),
                               constants=tuple(self.constants.items()),
                               hang_waits=tuple(self.hang_waits) if self.barrier_timeout is not None else None)

    def launch_dims(self):
        cfg = self.graph.config
        grid = list(cfg["grid"]) + [1] * (3 - len(cfg["grid"]))
        cluster = list(cfg["cluster"]) + [1] * (3 - len(cfg["cluster"]))
        return LaunchDims(grid=tuple(g * c for g, c in zip(grid, cluster)),
                          block=(WARPGROUP * cfg["num_threads"], 1, 1), cluster=tuple(cluster),
                          smem_bytes=graph_storage(self.graph).total, dependent=cfg["dependent_launch"])

    def module_source(self):
        g = self.graph
        m = SourceWriter()
        m.line(f'"""CuTe DSL source generated by tilegemm from kernel `{g.name}` ({g.loc}) for {self.arch}.')
        m.line("")
        m.line(f"Graph fingerprint {g.fingerprint()}. Regenerated from the kernel on every lowering: do not edit.")
        m.line(f"Launch: {self.launch_dims().describe()}.")
        m.line('"""')
        for imp in self.IMPORTS:
            m.line(imp)
        if "l2_promotion" in self.features:   # copies through descriptors of their own (tma_descriptors)
            m.line("from cutlass.experimental.cuda import TensorMap")
            m.line("from tilegemm.lower import tma_descriptors as tgtma")
        m.line("")
        self.write_storage(m)
        for buf in self.buffers.values():
            m.line("")
            m.line("")
            buf.layout_function(m)
        m.line("")
        m.line("")
        m.line("@cute.kernel")
        params = ", ".join(f"{n}: {a}" for n, a in self.kernel_params)
        self.w.drop_unread(self.pure_names)
        with m.block(f"def {self.kernel_name}_kernel({params}):"):
            m.line(f'"""The device code: one block runs {g.config["num_threads"]} warpgroup(s) of the body."""')
            m.extend(self.prologue)
            m.extend(self.w)
        m.line("")
        m.line("")
        m.line("@cute.jit")
        args = [f"{self.ref_names[id(p)]}_ptr: cute.Pointer" for p in g.params]
        args += ["hang_report_ptr: cute.Pointer"] if self.hang_waits else []
        args += [f"{name}: cutlass.Int32" for name in self.constants]
        with m.block(f"def {self.kernel_name}({', '.join(args)}, stream: cuda.CUstream):"):
            m.line('"""Host side: static-shape tensors over the raw pointers, TMA descriptors, launch."""')
            m.extend(self.host)
            d = self.launch_dims()
            args = ", ".join(n for n, _ in self.kernel_params)
            cluster = f", cluster={list(d.cluster)}" if d.cluster != (1, 1, 1) else ""
            pdl = ", use_pdl=True" if d.dependent else ""
            m.line(f"{self.kernel_name}_kernel({args}).launch(grid={list(d.grid)}, block={list(d.block)}"
                   f"{cluster}, stream=stream{pdl})")
        return m.text()

    def write_storage(self, m):
        if not self.has_storage():
            return
        m.line("")
        m.line("@cute.struct")
        with m.block("class SharedStorage:"):
            m.line('"""Shared memory of one block: mbarriers, then 1024-byte aligned buffers."""')
            for b in self.barriers.values():
                m.line(f"{b.name}: cute.struct.MemRange[cutlass.Int64, {b.spec.num_barriers}]",
                       f"{b.spec.num_barriers} mbarrier(s), {b.loc}")
            for name, declaration, comment in self.extra_storage_fields():
                m.line(f"{name}: {declaration}", comment)
            for buf in self.buffers.values():
                m.line(buf.field(), f"{buf.ref_type}, {buf.loc}")

    def has_storage(self):
        """True when the kernel needs a SharedStorage struct."""
        return bool(self.buffers or self.barriers or self.extra_storage_fields())

    def extra_storage_fields(self):
        """(name, declaration, comment) of the SharedStorage fields a back end adds after the barriers (the TMEM
        words of lang/storage.py)."""
        return []

    # ------------------------------------------------------------------ names and scratch

    def name_refs(self):
        """Readable names for kernel parameters and scratch refs: the body's own names, recorded when tracing."""
        n_in = len(self.graph.inputs)
        for i, v in enumerate(self.graph.params):
            self.ref_names[id(v)] = self.names.fresh(v.name_hint or (f"in{i}" if i < n_in else f"out{i - n_in}"))
            self.names.used.add(f"{self.ref_names[id(v)]}_ptr")
        self.names.used.update(("one", "hang_report", "hang_report_ptr"))
        default = {MemorySpace.ACC: "acc", MemorySpace.SMEM: "smem", MemorySpace.BARRIER: "barriers",
                   MemorySpace.TMEM: "tmem"}
        for op in self.graph.walk():
            if op.kind == "alloc":
                self.ref_names[id(op.result)] = self.names.fresh(op.attrs.get("name") or default[op.result.space])

    def declare_scratch(self):
        """SMEM tensors and barrier arrays for every alloc (scoped ones included) in the kernel prologue."""
        p = self.prologue
        p.line("tidx, _, _ = cute.arch.thread_idx()")
        p.line("warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())")
        p.line("warpgroup_idx = warp // 4", "the tilegemm thread: one warpgroup of 128 CUDA threads")
        p.line("warp_in_warpgroup = warp % 4")
        p.line("thread_in_warpgroup = tidx % 128")
        allocs = [op for op in self.graph.walk() if op.kind == "alloc"]
        for op in allocs:
            t, name = op.result.type, self.ref_names[id(op.result)]
            if t.space == MemorySpace.SMEM:
                self.buffers[id(op.result)] = SmemBuffer(name, t, self.buffer_uses[id(op.result)], op.loc)
            elif t.space == MemorySpace.BARRIER:
                self.barriers[id(op.result)] = Barriers(name, t.barrier, self.barrier_plans[id(op.result)], op.loc)
            elif t.space == MemorySpace.TMEM:
                self.declare_tmem(op)
        if not self.has_storage():
            return
        p.line("storage = cutlass.memory.SmemAllocator().allocate(SharedStorage)")
        for buf in self.buffers.values():
            p.line(f"{buf.name} = {buf.tensor_expr('storage')}")
        for b in self.barriers.values():
            p.line(f"{b.name} = storage.{b.name}.data_ptr()")
        if self.barriers:
            self.init_barriers()

    def init_barriers(self):
        p = self.prologue
        with p.block("if warp == 0:"):
            with p.block("with cute.arch.elect_one():"):
                for b in self.barriers.values():
                    peers = len(self.barrier_peers(b))
                    count = b.plan.hardware_count(b.spec.num_arrivals * peers)
                    why = (f" from each of {peers} blocks" if peers > 1 else "") + (
                        " (one arrival per warp)" if b.plan.per_warp else "")
                    with p.block(f"for index in cutlass.range_constexpr({b.spec.num_barriers}):"):
                        p.line(f"cute.arch.mbarrier_init({b.name} + index, {count})",
                               f"{b.spec.num_arrivals} arrival(s){why}")
        p.line("cute.arch.mbarrier_init_fence()")
        if self.cluster_size() > 1:
            p.line("cute.arch.cluster_arrive_relaxed()", "peers may signal our barriers only once they exist")
            p.line("cute.arch.cluster_wait()")
        else:
            p.line("cute.arch.sync_threads()")
        for b in self.barriers.values():
            if b.spec.num_barriers > 32:
                raise unsupported(None, f"{b.spec.num_barriers} barriers in one tg.Barrier ({b.loc})",
                                  "use at most 32 barriers per tg.Barrier")
            p.line(f"{b.phase} = cutlass.Int32(0)", f"bit i: parity of the next phase of {b.name}[i] to wait for")

    def cluster_size(self):
        n = 1
        for c in self.graph.config["cluster"]:
            n *= c
        return n

    def prefetch_tma_descriptors(self):
        """Kernel start: one thread prefetches every TMA descriptor (prefetch.tensormap), as CUTLASS kernels do,
        so that fetching them overlaps the set-up instead of delaying the first copies."""
        atoms = [name for name, kind in self.kernel_params
                 if kind == "cute.CopyAtom" and name not in self.promoted_descriptors]   # their copies use their own
        descriptors = list(self.promoted_descriptors.values())
        if not atoms and not descriptors:
            return
        w = SourceWriter()
        with w.block("if cute.arch.make_warp_uniform(cute.arch.warp_idx()) == 0:"):
            with w.block("with cute.arch.elect_one():"):
                for atom in atoms:
                    w.line(f"cpasync.prefetch_descriptor({atom})", "prefetch.tensormap")
                for desc in descriptors:
                    w.line(f"tgtma.prefetch_descriptor({desc})", "prefetch.tensormap")
        self.prologue.lines[:0] = w.lines

    def finish_kernel(self):
        self.prefetch_tma_descriptors()   # the body is written: every TMA descriptor is a kernel parameter now
        if self.graph.config["dependent_launch"]:
            self.prologue.line("cute.arch.griddepcontrol_wait()", "dependent launch: the previous kernel on the "
                               "stream has completed and its writes are visible before the body runs")
        if self.cluster_size() > 1:
            self.w.line("cute.arch.cluster_arrive()", "no block leaves while peers may still signal it")
            self.w.line("cute.arch.cluster_wait()")

    @lowering("launch_dependents", *BOTH)
    def op_launch_dependents(self, op):
        self.mark(op)
        self.w.line("cute.arch.griddepcontrol_launch_dependents()", "the next kernel, if a dependent launch, may "
                    "place its blocks now (this block's first call counts)")

    # ------------------------------------------------------------------ walking

    def emit_region(self, region):
        """Emits every op of `region` by the lowering rule its kind registered for this architecture."""
        for op in region.ops:
            op.opdef.lowerings[self.arch](self, op)

    def mark(self, op):
        """Writes a comment with the user's source line before the code of `op` (once per line)."""
        loc = op.loc
        if loc is None or loc == self.last_loc:
            return
        self.last_loc = loc
        text = linecache.getline(loc.file, loc.line).strip()
        self.w.comment(f"{loc}: {text}" if text else str(loc))

    def forget_loc(self):
        self.last_loc = None

    # ------------------------------------------------------------------ scalars

    def scalar(self, x):
        """Source of a scalar operand: a traced value's expression or a literal."""
        if isinstance(x, (bool, int, float)):
            return cn.literal(x)
        return self.expr[id(x)]

    def typed_scalar(self, x, typ):
        """Source of a scalar operand with the given cutlass type (literals are wrapped: a loop-carried
        variable must keep its type across iterations)."""
        return f"{typ}({self.scalar(x)})" if isinstance(x, (bool, int)) else self.scalar(x)

    def define(self, op, text, hint="t"):
        """Binds op's result to `text`: inlined (parenthesised) if used once, else assigned to a new variable."""
        value = op.result
        if op.kind in _INLINE and self.uses.get(id(value), 0) <= 1:
            self.expr[id(value)] = f"({text})"
            return
        self.mark(op)
        name = self.names.fresh(self.user_names.get(id(value), hint))
        self.w.line(f"{name} = {text}")
        self.expr[id(value)] = name
        self.pure_names.add(name)   # dropped from the module if nothing reads it

    @lowering("axis_index", *BOTH)
    def op_axis_index(self, op):
        self.expr[id(op.result)] = self.axis_var(op.attrs["axis"], op)

    def axis_var(self, axis, op):
        """The prologue variable holding this block's/thread's index along `axis`."""
        if axis in self.axis_vars:
            return self.axis_vars[axis]
        cfg = self.graph.config
        if axis in cfg["grid_names"]:
            i = cfg["grid_names"].index(axis)
            source = (f"cute.arch.cluster_idx()[{i}]" if cfg["cluster"] else f"cute.arch.block_idx()[{i}]")
        elif axis in cfg["cluster_names"]:
            source = f"cute.arch.block_in_cluster_idx()[{cfg['cluster_names'].index(axis)}]"
        elif axis == cfg["thread_name"]:
            source = "warpgroup_idx"
        else:
            return "warp_in_warpgroup"   # the WarpMesh axis of a core_map
        name = self.names.fresh(axis)
        self.prologue.line(f"{name} = {source}", f"axis {axis!r}")
        self.axis_vars[axis] = name
        return name

    @lowering("binop", *BOTH)
    def op_binop(self, op):
        kind = op.attrs["op"]
        same = identity_operand(kind, op.arg("a"), op.arg("b"))
        if same is not None:   # x + 0, x - 0, x * 1, 1 * x, x // 1: the code is x's
            self.bind_unchanged(op, self.scalar(same))
            return
        base, offset = offset_of(op.arg("a"), self.uses)
        b = op.arg("b")
        if offset and kind in ("add", "sub") and isinstance(b, int) and not isinstance(b, bool):
            offset += b if kind == "add" else -b   # (x + c1) - c2: x + (c1 - c2)
            if offset:
                self.define(op, f"{self.scalar(base)} {'+' if offset > 0 else '-'} {abs(offset)}")
            else:
                self.bind_unchanged(op, self.scalar(base))
            return
        a, b = (self.scalar(o) for o in op.operands)
        if kind in ("min", "max"):
            self.define(op, f"cutlass.{kind}({a}, {b})")
        elif kind == "div" and not all(nonnegative(o, self.loop_starts) for o in op.operands):
            # tilegemm divides toward zero; CuTe's // floors. a - a % b is a multiple of b (% truncates).
            self.define(op, f"({a} - {a} % {b}) // {b}")
        else:
            self.define(op, f"{a} {_BINOPS[kind]} {b}")

    def bind_unchanged(self, op, text):
        """Binds op's result to `text`, another value's code: the same variable, or the expression inlined if
        read once, else computed once into a variable."""
        if text.isidentifier() or self.uses.get(id(op.result), 0) <= 1:
            self.expr[id(op.result)] = text
        else:
            self.define(op, unparenthesised(text))

    @lowering("select", *BOTH)
    def op_select(self, op):
        cond, a, b = op.operands
        typ = cn.cutlass_type(op.result.type.dtype)
        self.define(op, f"{typ}({self.scalar(a)}) if {self.scalar(cond)} else {typ}({self.scalar(b)})")

    # ------------------------------------------------------------------ control flow

    @lowering("when", *BOTH)
    def op_when(self, op):
        self.mark(op)
        with self.w.block(f"if {self.scalar(op.operands[0])}:"):
            self.emit_region(op.regions[0])
        self.forget_loc()

    @lowering("yield", *BOTH)
    def op_yield(self, op):
        """A loop body's yield: its fori_loop assigns the carries after the body."""

    @lowering("scope", *BOTH)
    def op_scope(self, op):
        self.emit_region(op.regions[0])

    @lowering("core_map", *BOTH)
    def op_core_map(self, op):
        self.mark(op)
        self.w.comment("core_map: each of the 4 warps of the warpgroup runs this; they synchronise around it")
        self.warpgroup_sync()
        self.core_map_depth += 1
        self.emit_region(op.regions[0])
        self.core_map_depth -= 1
        self.warpgroup_sync()

    @lowering("fori_loop", *BOTH)
    def op_fori_loop(self, op):
        self.mark(op)
        body = op.regions[0]
        lo, hi = (self.scalar(x) for x in op.operands[:2])
        carries = []
        for init, arg in zip(op.operands[2:], body.args[1:]):
            carries.append(self.loop_carry(init, arg))
        index = self.names.fresh("i")
        self.expr[id(body.args[0])] = index
        static = all(isinstance(x, int) for x in op.operands[:2])
        header = (f"for {index} in cutlass.range_constexpr({lo}, {hi}):" if op.attrs["unroll"] and static else
                  f"for {index} in cutlass.range({lo}, {hi}, unroll=1):")
        with self.w.block(header):
            self.emit_region(body)
            self.assign_carries(carries, body.ops[-1].operands)
        self.forget_loc()
        for (kind, name, _), result in zip(carries, op.results):
            self.expr[id(result)] = name if kind == "scalar" else f"{name}.load()"

    def loop_carry(self, init, arg):
        """Declares the variable carrying `arg` across iterations; returns (kind, name, cutlass type)."""
        typ = cn.cutlass_type(arg.type.dtype)
        if isinstance(arg.type, ScalarType) or isinstance(self.dists.get(id(arg)), Uniform):   # a 0-d array is
            name = self.names.fresh("carry")                                                   # one value too
            self.w.line(f"{name} = {typ}({self.scalar(init)})")
            self.expr[id(arg)] = name
            return "scalar", name, typ
        name = self.names.fresh("carry")
        self.w.line(f"{name} = cute.make_rmem_tensor({self.fragment_shape(arg)}, {cn.cutlass_type(arg.type.dtype)})")
        self.w.line(f"{name}.store({self.array(init)})")
        self.expr[id(arg)] = f"{name}.load()"
        return "array", name, typ

    def assign_carries(self, carries, values):
        scalars = [(n, self.typed_scalar(v, typ)) for (k, n, typ), v in zip(carries, values) if k == "scalar"]
        if scalars:
            self.w.line(f"{', '.join(n for n, _ in scalars)} = {', '.join(e for _, e in scalars)}")
        arrays = [(n, v) for (k, n, _), v in zip(carries, values) if k == "array"]
        temps = []
        for n, v in arrays:
            t = self.names.fresh("next")
            self.w.line(f"{t} = {self.array(v)}")
            temps.append((n, t))
        for n, t in temps:
            self.w.line(f"{n}.store({t})")

    # ------------------------------------------------------------------ refs and barriers

    def ref_name(self, ref):
        return self.ref_names[id(root_ref(ref))]

    def index_sum(self, terms):
        parts = [self.scalar(t) for t in terms]
        return " + ".join(parts) if parts else "0"

    def barrier_ptr(self, ref):
        """(Barriers, index source) of the single mbarrier `ref` names."""
        view = resolve_view(ref)
        bars = self.barriers[id(view.root)]
        (sel,) = view.dims
        return bars, self.index_sum(sel.terms)

    @lowering("barrier_wait", SM90)
    def op_barrier_wait(self, op):
        self.barrier_wait(op)

    def barrier_wait(self, op):
        """An mbarrier wait with the parity `op` names, or the next implicit one (tracked per thread)."""
        self.mark(op)
        bars, i = self.barrier_ptr(op.operands[0])
        if op.arg("phase") is not None:
            self.wait(op, bars, i, f"{bars.name} + {i}", f"cutlass.Int32({self.scalar(op.arg('phase'))})")
            return
        if i == "0":
            self.wait(op, bars, i, bars.name, f"{bars.phase} & 1")
            self.w.line(f"{bars.phase} = {bars.phase} ^ 1")
            return
        self.wait(op, bars, i, f"{bars.name} + {i}", f"({bars.phase} >> ({i})) & 1")
        self.w.line(f"{bars.phase} = {bars.phase} ^ (cutlass.Int32(1) << ({i}))")

    def wait(self, op, bars, index, pointer, parity):
        """Writes an mbarrier wait; with a barrier timeout, one that gives up, reports `op` and traps."""
        if self.barrier_timeout is None:
            self.w.line(f"cute.arch.mbarrier_wait({pointer}, {parity})")
            return
        if not self.hang_waits:
            self.host.line("hang_report = hang_report_ptr", "host-visible words a hung barrier wait reports into")
            self.kernel_params.append(("hang_report", "cute.Pointer"))
        text = linecache.getline(op.loc.file, op.loc.line).strip() if op.loc else ""
        self.hang_waits.append(f"barrier {bars.name}[{index}] waited for at {op.loc}" + (f": {text}" if text else ""))
        self.w.line(f"tgd.mbarrier_wait_bounded({pointer}, {parity}, hang_report, {len(self.hang_waits)}, "
                    f"{int(self.barrier_timeout * 1e9)})", f"gives up after {self.barrier_timeout} s (debug)")

    @lowering("barrier_arrive", SM90)
    def op_barrier_arrive(self, op):
        self.barrier_arrive(op)

    def barrier_arrive(self, op):
        """One arrival of the warpgroup (one per warp when the barrier counts warps) or of this warp."""
        self.mark(op)
        bars, i = self.barrier_ptr(op.operands[0])
        arrivals = [f"cute.arch.mbarrier_arrive({bars.name} + {i}"
                    + ("" if peer is None else f", peer_cta_rank_in_cluster={peer}") + ")"
                    for peer in self.barrier_peers(bars)]
        if self.core_map_depth or bars.plan.per_warp:
            if not self.core_map_depth:
                self.w.comment("every warp arrives once (the barrier counts 4 arrivals per warpgroup arrival)")
            with self.w.block("with cute.arch.elect_one():"):
                for line in arrivals:
                    self.w.line(line)
            return
        self.warpgroup_sync()
        with self.w.block("if warp_in_warpgroup == 0:"):
            with self.w.block("with cute.arch.elect_one():"):
                for line in arrivals:
                    self.w.line(line)

    def barrier_peers(self, bars):
        """Cluster ranks whose copy of the barrier an arrival signals (None: this block's own)."""
        axes = bars.spec.collective_axes
        if not axes or self.collective_size(axes, None) == 1:
            return [None]
        self.features.add("cluster")
        return self.cluster_peer_ranks(axes)

    def warpgroup_sync(self):
        """Synchronises the 128 threads of this warpgroup (a named barrier, one id per warpgroup)."""
        self.w.line("cute.arch.barrier(barrier_id=1 + warpgroup_idx, number_of_threads=128)")

    # ------------------------------------------------------------------ scratch ops

    @lowering("alloc", *BOTH)
    def op_alloc(self, op):
        if op.result.space == MemorySpace.ACC:
            self.mark(op)
            self.declare_accumulator(op)

    @lowering("view", *BOTH)
    @lowering("transpose_ref", *BOTH)
    def op_view(self, op):
        """Views move no data: they are resolved where they are used (see plan.resolve_view)."""


class Sm90Emitter(Sm90Ops, KernelEmitter):
    """The Hopper emitter: WGMMA and register accumulators (sm90.py) over the common machinery."""

    BACKEND = "sm90"
    IMPORTS = ("import cuda.bindings.driver as cuda", "import cutlass", "import cutlass.cute as cute",
               "import cutlass.utils.hopper_helpers as sm90_helpers",
               "from cutlass.cute.nvgpu import OperandMajorMode, cpasync, warpgroup", "",
               "from tilegemm.lower import device as tgd")

    def __init__(self, graph, arch, barrier_timeout=None):
        super().__init__(graph, arch, barrier_timeout)
        self.init_sm90()


class Sm100Emitter(Sm100Ops, KernelEmitter):
    """The Blackwell emitter: tcgen05 MMAs, TMEM and 2-CTA copies (sm100.py) over the common machinery."""

    BACKEND = "sm100"
    MODULE_NAMES = MODULE_NAMES + SM100_NAMES
    IMPORTS = SM100_IMPORTS


EMITTERS = {"sm_90a": Sm90Emitter, "sm_100a": Sm100Emitter}


def generate(graph, arch, barrier_timeout=None):
    """The CuTe DSL module for `graph` on `arch` (a GeneratedKernel); with `barrier_timeout` (seconds), every
    barrier wait gives up after that long, reports which wait and traps (tilegemm.debug)."""
    if arch not in EMITTERS:
        targets = " and ".join(map(repr, EMITTERS))
        raise unsupported(None, f"lowering for {arch!r}", f"the CuTe DSL back ends target {targets}")
    return EMITTERS[arch](graph, arch, barrier_timeout).generate()


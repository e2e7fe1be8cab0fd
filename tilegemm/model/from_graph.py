"""`config_from_graph`: read a GemmConfig off a traced kernel, so the model budgets what was written.

The graph is read as a GEMM C[M,N] = A[M,K] @ B[K,N] with A and B its first
two inputs and C its first output (a batched graph: C [..., M, N], one GEMM per
leading index; a grouped one: B [G, K, N] stacks weights that tiles select at run
time, `graph_groups`, budgeted as one GEMM of C's shape; other inputs and outputs
are listed by `extra_params`, not modelled). A swap-AB kernel, whose MMA reads the
second input as its A (C^T = B^T A^T, `swapped`), is read in the MMA's frame:
A is then the second input, the shape (N, M, K) and the tiles C^T's.
What each field is read from:

- a_layout, b_layout: how A and B are stored ([M, K] or [K, M], [K, N] or
  [N, K]: model/layouts.py), from the major-ness of the MMA's operands (a
  transposed SMEM view reads a tile stored the other way round).
- tile_m, tile_k: the A block each K step reads (the SMEM destination of its
  TMA copy, which is the per-block half for 2-CTA copies), or the A view a
  SIMT kernel loads or multiplies; tile_n: the B block (the whole N extent
  the block's MMA produces, also when the 2-CTA copy splits it).
- stages: the A stage buffer's size over one stage; instruction: the MMA op
  (`dot` is lowered to CUDA-core FMAs); release_delay: the MMAs the issuing
  thread leaves in flight where it waits for one in its K loop (a
  `wgmma_wait(n)`, or a wait on the ring of barriers its tcgen05 MMAs arrive on).
- consumers: tile area over one warpgroup's accumulator (wgmma), at most all
  warpgroups but one; the rest of num_threads are producers. tcgen05 and SIMT
  kernels count every warpgroup.
  wgmma consumers whose live accumulators add up to a whole tile are ping-pong
  ones (acc_buffers = consumers); promotion: an accumulator only stores write
  (block scaling's promoted sum) beside the partials MMAs write, which share those registers.
- cluster, multicast, two_cta: the collective axes of the operand copies.
- persistent: fewer blocks are launched than there are output tiles.
- raster: a `tg.planar_snake` recognised in the scalar ops; otherwise the
  order the tile indices come in (launch order, or the nd_loop's row-major order).
- epilogue tile: the SMEM view stored to C by TMA; registers: setmaxnreg.
- the resources (SMEM bytes, barriers, accumulator registers, TMEM columns,
  threads) are measured on the graph's allocations, as the verifier counts them.
"""
import math

from ..lang import dtypes
from ..lang.analysis import live_accumulators, root_ref, tmem_columns
from ..lang.arch import WARPGROUP_THREADS
from ..lang.ir import Value
from ..lang.registry import opdef
from ..lang.storage import graph_storage
from ..lang.types import ArrayType, MemorySpace
from .config import GemmConfig, GraphResources, Promotion, Raster
from .layouts import graph_layouts, mn_dim, unstored
from .traffic import cdiv

REGISTER_BYTES = 4


def graph_shape(graph):
    """(M, N, K) of a GEMM graph in its MMA's frame: its first two inputs are A and B (the other way round where the
    MMA reads them so, `swapped`: (N, M, K) of C), stored as its MMA reads them (graph_layouts).

    A batched graph (C [..., M, N], A and B with the same leading dimensions) gives the shape of one GEMM of
    the batch; `graph_batch` counts them.
    """
    if len(graph.inputs) < 2 or len(graph.outputs) < 1 or any(len(x.shape) < 2 for x in _gemm_params(graph)):
        raise ValueError(f"kernel {graph.name} is not a GEMM: the model needs inputs A (M, K), B (K, N) and an "
                         "output C (M, N)")
    a, b, c = _gemm_params(graph)
    for which, x in (("A", a), ("B", b)):
        if tuple(x.shape[:-2]) != tuple(c.shape[:-2]) and not (which == "B" and graph_groups(graph) > 1):
            raise ValueError(f"kernel {graph.name}: {which} {tuple(x.shape)} and C {tuple(c.shape)} lead with "
                             "different batch dimensions; the model budgets batched GEMMs whose A, B and C all "
                             "carry the same ones (an operand shared by the batch is not modelled)")
    a_layout, b_layout = graph_layouts(graph, _instruction(list(graph.walk()))[1])
    (m, k), (n, k2) = unstored(a_layout, a.shape[-2:]), unstored(b_layout, b.shape[-2:])
    if k != k2:
        raise ValueError(f"kernel {graph.name}: A {a.shape} and B {b.shape} do not "
                         f"multiply; the model reads the first two inputs as A stored {a_layout!r} and B stored "
                         f"{b_layout!r} (model/layouts.py), as the kernel's MMA reads them")
    return m, n, k


def graph_batch(graph):
    """How many GEMMs a batched graph computes: the product of C's leading dimensions (1 for a plain GEMM)."""
    return math.prod(graph.outputs[0].shape[:-2])


def graph_groups(graph):
    """How many weights B stacks in a grouped GEMM (B [G, K, N] or [G, N, K] against A [M, K] and C [M, N]: each
    tile multiplies by the one an index read at run time selects, as a mixture of experts does); 1 otherwise."""
    a, b, c = _gemm_params(graph)
    return math.prod(b.shape[:-2]) if len(b.shape) > 2 and len(a.shape) == len(c.shape) == 2 else 1


def extra_params(graph):
    """The inputs and outputs besides A, B and C, as ('input' or 'output', index, param): the model does not
    count their bytes (a bias, a residual, a second output)."""
    return ([("input", i, x) for i, x in enumerate(graph.inputs) if i >= 2]
            + [("output", i, x) for i, x in enumerate(graph.outputs) if i >= 1])


def _gemm_params(graph):
    """(A, B, C): the first two inputs, in the order the MMA reads them (`swapped`), and the first output."""
    first, second, c = graph.inputs[0], graph.inputs[1], graph.outputs[0]
    return (second, first, c) if swapped(graph) else (first, second, c)


def swapped(graph):
    """True for a swap-AB kernel: its MMA's A operand is a buffer that copies of the second input fill (it computes
    C^T = B^T A^T, the first input's rows on the MMA's N side)."""
    if len(graph.inputs) < 2:
        return False
    ops = list(graph.walk())
    _, mma = _instruction(ops)
    a = mma.operands[0] if mma.kind == "dot" else mma.operands[1]
    if getattr(a, "space", None) != MemorySpace.SMEM:
        return False
    fills = {id(r.buffer) for r in _operand_reads(ops, graph.inputs[1]) if r.buffer is not None}
    return id(root_ref(a)) in fills


def config_from_graph(graph):
    """The GemmConfig a traced GEMM graph implements, with resources measured on the graph."""
    m, n, _ = graph_shape(graph)
    a, b, c = _gemm_params(graph)
    ops = list(graph.walk())
    instruction, mma = _instruction(ops)
    a_layout, b_layout = graph_layouts(graph, mma)
    a_reads, b_reads = _operand_reads(ops, a), _operand_reads(ops, b)
    if not a_reads or not b_reads:
        raise ValueError(f"kernel {graph.name} never reads {'A' if not a_reads else 'B'} (input "
                         f"{0 if not a_reads else 1}) by a TMA copy, a load or a dot; the model cannot find its tile")
    a_read, b_read = a_reads[0], b_reads[0]
    tile_m, tile_k = unstored(a_layout, a_read.block)
    tile_n = b_read.view.shape[-2:][mn_dim(b_layout)]  # the whole N extent, also when a 2-CTA copy splits it
    stages = math.prod(a_read.buffer.shape) // math.prod(a_read.stage_shape) if a_read.buffer is not None else 1

    num_threads = graph.config["num_threads"]
    consumers, consumer_split = num_threads, "m"
    if instruction == "wgmma":
        am, an = root_ref(mma.operands[0]).shape
        # one accumulator's share of the tile, at most the warpgroups beside the producer (a consumer of a
        # 256-row cooperative tile holds two 64-row accumulators)
        consumers = min(max(1, (tile_m * tile_n) // (am * an)), max(1, num_threads - 1))
        consumer_split = "n" if am == tile_m and an < tile_n else "m"
    cluster, multicast, two_cta = _cluster(graph, a_read, b_read)
    grid_blocks = math.prod(graph.config["grid"]) * cluster[0] * cluster[1]
    persistent = grid_blocks < graph_batch(graph) * cdiv(m, tile_m) * cdiv(n, tile_n)
    resources = _resources(ops, graph, a_reads + b_reads, instruction)
    promotion = _promotion(ops, graph.body)
    epilogue_tile = _epilogue_tile(ops, c)
    epilogue_tile = epilogue_tile[::-1] if epilogue_tile and a is graph.inputs[1] else epilogue_tile   # C^T's
    epilogue_bytes = math.prod(epilogue_tile) * dtypes.itemsize(c.dtype) if epilogue_tile else 0
    return GemmConfig(
        tile_m=tile_m, tile_n=tile_n, tile_k=tile_k, stages=stages,
        release_delay=min(_release_delay(graph.body, mma), stages - 1), instruction=instruction,
        consumers=consumers, producers=num_threads - consumers if instruction == "wgmma" else 0,
        consumer_split=consumer_split, cluster=cluster, multicast=multicast, two_cta=two_cta,
        persistent=persistent, grid_blocks=grid_blocks if persistent else None,
        raster=_raster(ops, graph, (a, a_layout), (b, b_layout), persistent, cdiv(cdiv(n, tile_n), cluster[1])),
        epilogue_tile=epilogue_tile,
        epilogue_buffers=max(1, resources.smem_other // epilogue_bytes) if epilogue_tile else 1,
        acc_buffers=_acc_buffers(instruction, resources, tile_m, tile_n, consumers, promotion),
        dtype=a.dtype, out_dtype=c.dtype, max_registers=_max_registers(ops), graph_resources=resources,
        a_layout=a_layout, b_layout=b_layout, promotion=promotion)


def _promotion(ops, body):
    """The Promotion of a kernel where some accumulator is written by stores alone, never by an MMA (the tile's
    own accumulator that a block-scaled kernel adds each K step's WGMMA partials into), else None: the
    MMA-written accumulators per such one, the K steps per wait for every WGMMA (`_drain_steps`), and whether
    the kernel loads from GMEM into registers (its scales; a staged kernel reads them from SMEM)."""
    mma_written = {id(root_ref(op.arg("acc"))) for op in ops if op.kind == "wgmma"}
    promoted = {id(root_ref(op.arg("ref"))) for op in ops
                if op.kind == "store" and op.arg("ref").space == MemorySpace.ACC} - mma_written
    if not promoted:
        return None
    gmem_scales = any(op.kind == "load" and root_ref(op.arg("ref")).space == MemorySpace.GMEM for op in ops)
    # accumulators sharing one partial (a 256-row block-scaled tile's) promote it in turn, as one partial does
    return Promotion(partials=max(1, len(mma_written) // len(promoted)), drain_steps=_drain_steps(body),
                     gmem_scales=gmem_scales)


def _drain_steps(region):
    """K steps per full drain in the innermost region issuing WGMMAs (the K loop): its waits that leave WGMMAs in
    flight (one a step) per wait that leaves none; 1 where every step drains; None if no region issues any."""
    for op in region.ops:
        for inner in op.regions:
            found = _drain_steps(inner)
            if found is not None:
                return found
    waits = [op.attrs["n"] for op in region.ops if op.kind == "wgmma_wait"]
    if not waits or not any(op.kind == "wgmma" for op in region.ops):
        return None
    return max(1, sum(n > 0 for n in waits) // max(1, waits.count(0)))


def _acc_buffers(instruction, resources, tile_m, tile_n, consumers, promotion):
    """Accumulators that let epilogues overlap MMAs: TMEM buffers, or ping-pong wgmma consumers (a promoting
    consumer's two accumulators are one tile's partial and promoted sums)."""
    if instruction == "tcgen05":
        return max(1, resources.tmem_columns // tile_n)
    mma_registers = resources.acc_registers // (1 + (promotion.partials if promotion else 0))
    whole_tile = mma_registers * WARPGROUP_THREADS >= tile_m * tile_n
    return consumers if instruction == "wgmma" and consumers > 1 and whole_tile else 1


def _cluster(graph, a_read, b_read):
    """((blocks along m, blocks along n), multicast, two_cta) from the collective axes of the operand copies:
    blocks sharing an A copy differ in n, blocks sharing (or splitting) a B copy differ in m."""
    sizes = graph.axis_sizes()
    total = math.prod(graph.config["cluster"])
    if total == 1:
        return (1, 1), False, False
    a_share = 1 if a_read.partitioned else math.prod(sizes[x] for x in a_read.collective)
    b_share = math.prod(sizes[x] for x in b_read.collective)
    multicast = any(r.collective and not r.partitioned for r in (a_read, b_read))
    return (max(b_share, total // a_share), a_share), multicast, a_read.partitioned or b_read.partitioned


def _resources(ops, graph, reads, instruction):
    """SMEM (operand stages, other, barriers), accumulator registers, TMEM columns and threads of the graph."""
    operand_buffers = {id(r.buffer) for r in reads if r.buffer is not None}
    smem = [op.result for op in ops if op.kind == "alloc" and op.result.space == MemorySpace.SMEM]
    allocs = [op.result.type for op in ops if op.kind == "alloc"]
    if instruction == "fma":
        acc_bytes = max(math.prod(op.results[0].type.shape) * REGISTER_BYTES for op in ops if op.kind == "dot")
    else:
        acc_bytes = sum(op.result.type.nbytes for op in live_accumulators(graph.body))
    smem_operand = sum(r.type.nbytes for r in smem if id(r) in operand_buffers)
    smem_other = sum(r.type.nbytes for r in smem if id(r) not in operand_buffers)
    smem_barriers = sum(t.nbytes for t in allocs if t.space == MemorySpace.BARRIER)
    return GraphResources(
        smem_operand=smem_operand, smem_other=smem_other, smem_barriers=smem_barriers,
        acc_registers=-(-acc_bytes // (REGISTER_BYTES * WARPGROUP_THREADS)),
        tmem_columns=sum(tmem_columns(t) for t in allocs if t.space == MemorySpace.TMEM),
        threads=graph.config["num_threads"] * WARPGROUP_THREADS,
        smem_padding=graph_storage(graph).total - smem_operand - smem_other - smem_barriers)


class _Read:
    """One read of an operand per K step: the GMEM block, the per-block part, and the SMEM buffer it fills."""

    def __init__(self, src, dst=None, op=None):
        self.view = src
        self.stage_shape = tuple(dst.shape) if dst is not None else tuple(src.shape)
        self.buffer = root_ref(dst) if dst is not None else None
        attrs = op.attrs if op is not None and op.kind == "copy_gmem_to_smem" else {}
        self.collective = tuple(attrs.get("collective_axes", ()))
        self.partitioned = attrs.get("partitioned_axis") is not None

    @property
    def block(self):
        """(rows, cols) this block keeps of the read (the SMEM destination: its half when partitioned)."""
        shape = self.stage_shape if len(self.stage_shape) == 2 else self.view.shape
        return tuple(shape[-2:]) if len(shape) >= 2 else (1, shape[-1])

    @property
    def area(self):
        return math.prod(self.view.shape)


# ----------------------------------------------------------------------------- the ops' model terms

def model_term(kind, **terms):
    """Registers what op kind `kind` contributes to the model (its OpDef's model_terms, lang/registry.py):
    `mma_path`, the instruction the budget tables for a kernel issuing it, in order of preference (a kernel with a
    wgmma and a dot is a wgmma kernel); `gmem_reads`, the operands through which it reads a GMEM input block per K
    step, and `smem_destination`, the operand holding the SMEM buffer a read fills."""
    opdef(kind).model_terms.update(terms)


model_term("wgmma", mma_path=(0, "wgmma"))
model_term("tcgen05_mma", mma_path=(0, "tcgen05"))
model_term("dot", mma_path=(1, "fma"), gmem_reads=("a", "b"))
model_term("copy_gmem_to_smem", gmem_reads=("src",), smem_destination="dst")
model_term("load", gmem_reads=("ref",))


def _operand_reads(ops, param):
    """Every per-K-step read of GMEM input `param`, largest block first."""
    reads = []
    for op in ops:
        terms = op.opdef.model_terms
        for x in (op.arg(name) for name in terms.get("gmem_reads", ())):
            if isinstance(x, Value) and not isinstance(x.type, ArrayType) and root_ref(x) is param:
                if "smem_destination" in terms:
                    reads.append(_Read(x, op.arg(terms["smem_destination"]), op))
                else:
                    reads.append(_Read(x, _smem_destination(ops, op) if op.kind == "load" else None))
    return sorted(reads, key=lambda r: -r.area)


def _smem_destination(ops, load):
    """The SMEM ref a SIMT kernel stores a loaded operand block into, if it does."""
    for op in ops:
        if op.kind == "store" and op.operands[1] is load.results[0] and op.operands[0].space == MemorySpace.SMEM:
            return op.operands[0]
    return None


def _instruction(ops):
    """The MMA path and its first op: wgmma, tcgen05_mma, or `dot` (lowered to CUDA-core FMAs)."""
    mmas = [op for op in ops if "mma_path" in op.opdef.model_terms]
    if not mmas:
        raise ValueError("the kernel has no wgmma, tcgen05_mma or dot: the model needs an MMA to budget")
    op = min(mmas, key=lambda o: o.opdef.model_terms["mma_path"][0])   # the first of the most preferred kind
    return op.opdef.model_terms["mma_path"][1], op


def _epilogue_tile(ops, c):
    """(rows, cols) of the SMEM tiles TMA-stored into C, or None when C is written from registers."""
    for op in ops:
        if op.kind == "copy_smem_to_gmem" and root_ref(op.operands[1]) is c:
            return tuple(op.operands[0].shape[-2:])
    return None


def _release_delay(region, mma):
    """How many MMAs the issuing thread leaves in flight where it waits for one in the region (the K loop)
    holding `mma`: n after a wgmma_wait(n); n - 1 after a wait on the ring of n barriers its tcgen05 MMAs
    arrive on (it waits for the oldest); 0 if it does not wait; None if `mma` is not inside `region`."""
    for i, op in enumerate(region.ops):
        if op is mma:
            return next((n for n in (_mma_wait(o, mma) for o in region.ops[i + 1:]) if n is not None), 0)
        for inner in op.regions:
            found = _release_delay(inner, mma)
            if found is not None:
                return found
    return None


def _mma_wait(op, mma):
    """The MMAs left in flight after `op` if it waits for the completion of `mma`'s kind of MMA, else None."""
    if op.kind == "wgmma_wait":
        return op.attrs["n"]
    if op.kind == "barrier_wait" and mma.kind == "tcgen05_mma" and mma.arg("barrier") is not None:
        ring = root_ref(mma.arg("barrier"))
        if root_ref(op.arg("barrier")) is ring:
            return ring.type.barrier.num_barriers - 1
    return None


def _max_registers(ops):
    """(consumer, producer) registers from setmaxnreg increase/decrease, or None."""
    counts = {op.attrs["action"]: op.attrs["n"] for op in ops if op.kind == "set_max_registers"}
    if "increase" not in counts:
        return None
    return counts["increase"], counts.get("decrease", counts["increase"])


# ----------------------------------------------------------------------------- rasterisation

def _raster(ops, graph, a, b, persistent, cluster_cols):
    """The tile order: a recognised planar_snake, else the order the tile indices are generated in.
    `a` and `b` are (input, layout): the offsets of their views along M and N follow the tiles."""
    row_offsets, col_offsets = (_mn_offsets(ops, param, layout) for param, layout in (a, b))
    for op in ops:
        snake = _snake_of(op)
        if snake is None:
            continue
        _, tile_width = snake
        if any(_depends_on(x, op.results[0]) for x in row_offsets):
            return Raster(minor_dim=1, tile_width=tile_width)
        if any(_depends_on(x, op.results[0]) for x in col_offsets):
            return Raster(minor_dim=0, tile_width=tile_width)
    if persistent:
        return Raster(minor_dim=1, tile_width=cluster_cols)   # nd_loop: the last index runs fastest
    grid_names = graph.config["grid_names"]
    m_axis, n_axis = (_grid_axis(offsets, grid_names) for offsets in (row_offsets, col_offsets))
    if m_axis is not None and m_axis > (n_axis or 0):
        return Raster(minor_dim=1, tile_width=cluster_cols)   # m from a later grid axis than n: n fastest
    return None


def _grid_axis(offsets, grid_names):
    """The index of the first grid axis any of the scalar `offsets` is computed from, or None."""
    return next((i for i, name in enumerate(grid_names) if any(_depends_on_axis(x, name) for x in offsets)), None)


def _mn_offsets(ops, param, layout):
    """The starts along M (A) or N (B) of every view of the GMEM input `param` stored in `layout`."""
    start = len(param.shape) - 1 + mn_dim(layout)  # view operands: the ref, then one start per dimension
    return [op.operands[start] for op in ops
            if op.kind == "view" and root_ref(op.operands[0]) is param and len(op.operands) > start]


def _snake_of(op):
    """(major size, tile width) if `op` is planar_snake's `select(band % 2 == 0, fwd, size - 1 - fwd)`,
    where band = lin // (tile width * major size)."""
    if op.kind != "select":
        return None
    cond, _, backward = op.operands
    eq = _binop(cond, "eq")
    if eq is None or eq.operands[1] != 0:
        return None
    rem = _binop(eq.operands[0], "rem")
    sub = _binop(backward, "sub")
    if rem is None or rem.operands[1] != 2 or sub is None or not isinstance(sub.operands[0], int):
        return None
    band = _binop(rem.operands[0], "div")
    if band is None or not isinstance(band.operands[1], int):
        return None
    major_size = sub.operands[0] + 1
    return major_size, max(1, band.operands[1] // major_size)


def _binop(x, kind):
    if isinstance(x, Value) and x.producer is not None and x.producer.kind == "binop" \
            and x.producer.attrs["op"] == kind:
        return x.producer
    return None


def _depends_on(x, value, seen=None):
    """True if scalar `x` is computed (through binop/select) from `value`."""
    seen = set() if seen is None else seen
    if x is value:
        return True
    if not isinstance(x, Value) or x.producer is None or id(x) in seen:
        return False
    seen.add(id(x))
    if x.producer.kind not in ("binop", "select"):
        return False
    return any(_depends_on(o, value, seen) for o in x.producer.operands)


def _depends_on_axis(x, axis, seen=None):
    """True if scalar `x` is computed from `tg.axis_index(axis)`."""
    seen = set() if seen is None else seen
    if not isinstance(x, Value) or x.producer is None or id(x) in seen:
        return False
    seen.add(id(x))
    op = x.producer
    if op.kind == "axis_index":
        return op.attrs["axis"] == axis
    if op.kind not in ("binop", "select"):
        return False
    return any(_depends_on_axis(o, axis, seen) for o in op.operands)

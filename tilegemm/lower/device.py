"""Device-side helpers that generated kernels call (CuTe DSL, traced inline into the kernel).

Each helper is one idea the generated code would otherwise spell out in a loop
nest: slicing a WGMMA accumulator, storing a register array with the array's
edge predicated off, a CUDA-core dot product, a cp.async tile copy.
"""
import cutlass
import cutlass.cute as cute
from cutlass._mlir import ir
from cutlass._mlir.dialects import llvm, vector
from cutlass.cute.nvgpu import cpasync
from cutlass.cutlass_dsl import dsl_user_op

from ..lang.arch import WARPGROUP_THREADS as WARPGROUP

HANG_REPORT_WORDS = 8  # int32 words of a hang report: claimed, wait code, block x/y/z, thread, parity, spare


def accumulator_slice(values, shape, start, size):
    """Rows start[0]:+size[0] and columns start[1]:+size[1] of an (M, N) WGMMA-accumulator array.

    A thread's fragment of an (M, N) accumulator is ((2, 2, N/8), M/64, 1): column
    pairs, rows 8 apart, groups of 8 columns, blocks of 64 rows. A slice of whole
    row blocks and column groups is a sub-fragment with the same structure, shaped as
    the MMA partitions a tile of its size (an 8-wide one without the unit group mode:
    ((2, 2), M/64, 1)), so that it combines elementwise with a fused epilogue's tiles.
    """
    m, n = shape
    frag = cute.make_rmem_tensor(values.shape, values.dtype)
    frag.store(values)
    offset = (start[1] // 8) * 4 + (start[0] // 64) * (n // 2)
    groups = size[1] // 8
    columns, column_strides = ((2, 2, groups), (1, 2, 4)) if groups > 1 else ((2, 2), (1, 2))
    layout = cute.make_layout((columns, size[0] // 64, 1), stride=(column_strides, n // 2, 0))
    return cute.make_tensor(frag.iterator + offset, layout).load()


@dsl_user_op
def to_bfloat16(values, *, loc=None, ip=None):
    """An f32 register array rounded to bf16 (to nearest even), two elements an instruction (cvt.rn.bf16x2.f32).

    CuTe DSL's `.to(cutlass.BFloat16)` converts one element at a time into 16-bit
    registers; in a 64x224 WGMMA tile's epilogue ptxas then serialized the
    kernel's WGMMAs (advisory C7514), where f16's paired conversion did not.
    """
    count = cute.size(values.shape)
    f32 = [vector.extract(values, [], [i], loc=loc, ip=ip) for i in range(count)]
    f32 += f32[-1:] * (count % 2)   # an odd last element is paired with itself
    words = [llvm.inline_asm(cutlass.Int32.mlir_type, [f32[i + 1], f32[i]], "cvt.rn.bf16x2.f32 $0, $1, $2;",
                             "=r,f,f", has_side_effects=False, is_align_stack=False,
                             asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip)
             for i in range(0, len(f32), 2)]   # the first of a pair in the word's low half, as arrays store it
    packed = vector.from_elements(ir.VectorType.get([len(words)], cutlass.Int32.mlir_type), words, loc=loc, ip=ip)
    bf16 = vector.bitcast(ir.VectorType.get([len(f32)], cutlass.BFloat16.mlir_type), packed, loc=loc, ip=ip)
    if count % 2:
        bf16 = vector.extract_strided_slice(ir.VectorType.get([count], cutlass.BFloat16.mlir_type), bf16, [0],
                                            [count], [1], loc=loc, ip=ip)
    return cute.TensorSSA(bf16, values.shape, cutlass.BFloat16)


@cute.jit
def _combine(a, b, kind: cutlass.Constexpr):
    """a + b, max(a, b) or min(a, b) for reduction `kind` ('sum', 'max', 'min')."""
    if cutlass.const_expr(kind == "sum"):
        return a + b
    if cutlass.const_expr(kind == "max"):
        return cutlass.max(a, b)
    return cutlass.min(a, b)


@cute.jit
def accumulator_row_reduce(values, n: cutlass.Constexpr, kind: cutlass.Constexpr):
    """Every element of an (M, n) WGMMA-accumulator fragment replaced by the `kind` reduction of its row.

    The fragment is ((2, 2, n/8), M/64, 1): element c + 2h + 4g + (n/2)b is column 8g + 2(t%4) + c of row
    64b + 16(warp) + t/4 + 8h for thread t of the warp, so a row's other columns are in the thread itself
    and in the three other threads of its quad (lanes xor 1 and 2).
    """
    frag = cute.make_rmem_tensor(values.shape, values.dtype)
    frag.store(values)
    per_block = n // 2
    for b in cutlass.range_constexpr(cute.size(frag) // per_block):
        for h in cutlass.range_constexpr(2):
            base = b * per_block + 2 * h
            r = frag[base]
            for e in cutlass.range_constexpr(1, per_block // 2):
                r = _combine(r, frag[base + (e % 2) + 4 * (e // 2)], kind)
            r = _combine(r, cute.arch.shuffle_sync_bfly(r, offset=1), kind)
            r = _combine(r, cute.arch.shuffle_sync_bfly(r, offset=2), kind)
            for e in cutlass.range_constexpr(per_block // 2):
                frag[base + (e % 2) + 4 * (e // 2)] = r
    return frag.load()


@cute.jit
def thread_row_reduce(values, kind: cutlass.Constexpr):
    """Every element of a fragment that holds one whole row (a 32x32b TMEM load) replaced by the row's reduction."""
    frag = cute.make_rmem_tensor(values.shape, values.dtype)
    frag.store(values)
    r = frag[0]
    for i in cutlass.range(1, cute.size(frag), unroll_full=True):
        r = _combine(r, frag[i], kind)
    for i in cutlass.range(cute.size(frag), unroll_full=True):
        frag[i] = r
    return frag.load()


def _inside(bounds, shape):
    """Whether a view of `shape` lies inside its array: its valid extents `bounds` are the whole shape."""
    inside = cutlass.Boolean(True)
    for valid, extent in zip(bounds, shape):
        inside = inside & (valid >= extent)
    return inside


@cute.jit
def store_predicated(values, dst, coords, bounds, shape: cutlass.Constexpr):
    """dst[i] = values[i] for every element whose coordinate is inside `bounds` (the array's edge): a view of
    `shape` inside the array is stored whole (vector stores), one that crosses the edge element by element."""
    if _inside(bounds, shape):
        dst.store(values)
    else:
        frag = cute.make_rmem_tensor(values.shape, values.dtype)
        frag.store(values)
        for i in cutlass.range(cute.size(frag), unroll_full=True):
            if cute.elem_less(coords[i], bounds):
                dst[i] = frag[i]


@cute.jit
def load_predicated(src, coords, bounds, shape: cutlass.Constexpr, dtype: cutlass.Constexpr):
    """This thread's elements of a view of `shape`, zero where their coordinate is outside `bounds` (the array's
    edge): read whole (vector loads) where the view lies inside the array, element by element where it crosses
    the edge."""
    regs = cute.make_rmem_tensor(src.layout.shape, dtype)
    if _inside(bounds, shape):
        regs.store(src.load())
    else:
        regs.fill(0)
        for e in cutlass.range(cute.size(regs), unroll_full=True):
            if cute.elem_less(coords[e], bounds):
                regs[e] = src[e]
    return regs.load()


@cute.jit
def load_broadcast(src, coords, bounds, dtype: cutlass.Constexpr):
    """This thread's elements of a view read broadcast over a larger array (`src` has zero strides along the
    dimensions it is broadcast over): each distinct element is read once, into one register that the broadcast
    elements share (make_layout_like keeps the zero strides); elements at or past `bounds` read zero."""
    regs = cute.make_rmem_tensor(cute.make_layout_like(src.layout), dtype)
    distinct, src_distinct, coords_distinct = cute.filter_zeros(regs), cute.filter_zeros(src), cute.filter_zeros(coords)
    for e in cutlass.range(cute.size(distinct), unroll_full=True):
        distinct[e] = dtype(0)
        if cute.elem_less(coords_distinct[e], bounds):
            distinct[e] = src_distinct[e]
    return regs.load()


@cute.jit
def simt_dot(acc, a, a_bounds, b, b_bounds, thread, rows: cutlass.Constexpr, cols: cutlass.Constexpr):
    """acc += a @ b with CUDA-core FMAs; thread (r, c) of a rows x cols grid owns acc rows r + i*rows, cols c + j*cols.

    Elements of `a` (M x K) and `b` (K x N) at or past `a_bounds` / `b_bounds` read as zero.
    """
    tr = thread // cols
    tc = thread % cols
    acc_type = acc.element_type
    a_reg = cute.make_rmem_tensor((cute.size(acc, mode=[0]),), acc_type)
    b_reg = cute.make_rmem_tensor((cute.size(acc, mode=[1]),), acc_type)
    for k in cutlass.range(cute.size(a, mode=[1]), unroll=4):
        for i in cutlass.range_constexpr(cute.size(a_reg)):
            r = tr + i * rows
            a_reg[i] = acc_type(0)
            if r < a_bounds[0]:
                if k < a_bounds[1]:
                    a_reg[i] = a[r, k].to(acc_type)
        for j in cutlass.range_constexpr(cute.size(b_reg)):
            c = tc + j * cols
            b_reg[j] = acc_type(0)
            if k < b_bounds[0]:
                if c < b_bounds[1]:
                    b_reg[j] = b[k, c].to(acc_type)
        for i in cutlass.range_constexpr(cute.size(a_reg)):
            for j in cutlass.range_constexpr(cute.size(b_reg)):
                acc[i, j] = acc[i, j] + a_reg[i] * b_reg[j]


@cute.jit
def load_simt(regs, src, bounds, thread, rows: cutlass.Constexpr, cols: cutlass.Constexpr):
    """Fills `regs` with this thread's elements of `src` in the tg.dot distribution (see simt_dot); elements at
    or past `bounds` read zero."""
    tr = thread // cols
    tc = thread % cols
    for i in cutlass.range_constexpr(cute.size(regs, mode=[0])):
        for j in cutlass.range_constexpr(cute.size(regs, mode=[1])):
            r = tr + i * rows
            c = tc + j * cols
            regs[i, j] = regs.element_type(0)
            if r < bounds[0]:
                if c < bounds[1]:
                    regs[i, j] = src[r, c]


@cute.jit
def store_simt(values, dst, bounds, thread, rows: cutlass.Constexpr, cols: cutlass.Constexpr):
    """Stores a tg.dot-distributed array (see simt_dot) into `dst`, dropping elements at or past `bounds`."""
    tr = thread // cols
    tc = thread % cols
    frag = cute.make_rmem_tensor(values.shape, values.dtype)
    frag.store(values)
    for i in cutlass.range_constexpr(cute.size(frag, mode=[0])):
        for j in cutlass.range_constexpr(cute.size(frag, mode=[1])):
            r = tr + i * rows
            c = tc + j * cols
            if r < bounds[0]:
                if c < bounds[1]:
                    dst[r, c] = frag[i, j]


@cute.jit
def copy_async(src, bounds, dst, thread, vec: cutlass.Constexpr):
    """dst[...] = src[...] for a (rows, cols) tile, by the 128 threads of a warpgroup, `vec` elements at a time.

    `dst` must have contiguous rows (an unswizzled SMEM buffer).
    Vectors of 4 bytes or more use cp.async (complete them with cp_async_wait_group);
    narrower ones use ordinary loads and stores. Vectors at or past `bounds` are
    zero-filled, matching TMA's out-of-bounds semantics.
    """
    rows = cute.size(dst, mode=[0])
    per_row = cute.size(dst, mode=[1]) // vec
    total = rows * per_row
    bits = vec * src.element_type.width
    atom = cute.make_copy_atom(cpasync.CopyG2SOp(), src.element_type, num_bits_per_copy=max(bits, 32))
    for n in cutlass.range_constexpr((total + WARPGROUP - 1) // WARPGROUP):
        idx = thread + n * WARPGROUP
        if idx < total:
            r = idx // per_row
            c = idx % per_row
            # Flat (vec,) tensors: cute.copy issues one instruction per atom-sized first mode.
            s = cute.make_tensor(cute.local_tile(src, (1, vec), (r, c)).iterator, cute.make_layout(vec))
            d = cute.make_tensor(cute.local_tile(dst, (1, vec), (r, c)).iterator, cute.make_layout(vec))
            inside = cutlass.Boolean(False)
            if r < bounds[0]:
                if c * vec < bounds[1]:
                    inside = cutlass.Boolean(True)
            if inside:
                if cutlass.const_expr(bits >= 32):
                    cute.copy(atom, s, d)
                else:
                    d.store(s.load())
            else:
                d.fill(0)


@dsl_user_op
def warpgroup_any(flag, barrier_id, *, loc=None, ip=None):
    """1 in every thread of the warpgroup if any of them passed a nonzero `flag`, else 0: its threads meet at named
    barrier `barrier_id`, which ORs their predicates (bar.red.or.pred)."""
    return cutlass.Int32(llvm.inline_asm(
        cutlass.Int32.mlir_type,
        [cutlass.Int32(flag).ir_value(loc=loc, ip=ip), cutlass.Int32(barrier_id).ir_value(loc=loc, ip=ip)],
        f"{{ .reg .pred p, q; setp.ne.s32 p, $1, 0; bar.red.or.pred q, $2, {WARPGROUP}, p; selp.s32 $0, 1, 0, q; }}",
        "=r,r,r", has_side_effects=True, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip))


@cute.jit
def count_arrival(counters, coord, inside, arrivals: cutlass.Constexpr, thread_in_warpgroup, barrier_id):
    """Whether this warpgroup's arrival at counters[coord] is the `arrivals`-th (which sets it back to 0), in all
    its threads. The threads meet first, so the add (acquire-release at GPU scope, as CUTLASS's split-K semaphore)
    releases every thread's earlier stores and acquires the earlier arrivals' for all of them."""
    cute.arch.barrier(barrier_id=barrier_id, number_of_threads=WARPGROUP)
    last = cutlass.Int32(0)
    if thread_in_warpgroup == 0:
        if inside:
            pointer = counters.iterator + cute.crd2idx(coord, counters.layout)
            if cute.arch.atomic_add(pointer, cutlass.Int32(1), sem="acq_rel", scope="gpu") == arrivals - 1:
                cute.arch.atomic_add(pointer, cutlass.Int32(-arrivals), sem="relaxed", scope="gpu")
                last = cutlass.Int32(1)
    return warpgroup_any(last, barrier_id) != 0


@dsl_user_op
def trap(*, loc=None, ip=None):
    """Aborts the whole grid (PTX `trap`): the launch fails and the host sees the error."""
    llvm.inline_asm(None, [], "trap;", "", has_side_effects=True, is_align_stack=False,
                    asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip)


@cute.jit
def mbarrier_wait_bounded(bar, parity, report_ptr, code: cutlass.Constexpr, timeout_ns: cutlass.Constexpr):
    """cute.arch.mbarrier_wait that gives up after `timeout_ns`: the first thread to give up writes `code` (which
    wait), its block, thread and the parity into the host-visible `report_ptr` words, then traps."""
    start = cute.arch.globaltimer()
    done = cute.arch.mbarrier_try_wait(bar, parity)
    while not done:
        if cute.arch.globaltimer() - start > timeout_ns:
            if cute.arch.atomic_add(report_ptr, cutlass.Int32(1), sem="relaxed", scope="sys") == 0:
                report = cute.make_tensor(report_ptr, cute.make_layout(HANG_REPORT_WORDS))
                bx, by, bz = cute.arch.block_idx()
                tx, _, _ = cute.arch.thread_idx()
                report[1] = cutlass.Int32(code)
                report[2] = cutlass.Int32(bx)
                report[3] = cutlass.Int32(by)
                report[4] = cutlass.Int32(bz)
                report[5] = cutlass.Int32(tx)
                report[6] = cutlass.Int32(parity)
                cute.arch.fence_acq_rel_sys()
            trap()
        done = cute.arch.mbarrier_try_wait(bar, parity)

"""Memory, synchronisation and compute primitives (the `plgpu.*` surface).

Each primitive checks what it can at trace time (kinds of refs, shapes, dtypes)
and records one op. Hardware legality (MMA shapes, swizzles, TMA limits, budgets)
is the verifier's job, so that every such error comes with the same context.
"""
from ..errors import KernelError
from .arch import L2_PROMOTION_BYTES
from . import dtypes
from .analysis import box_dims
from .ir import current_user_loc
from .tracer import emit
from .types import ArrayType, MemorySpace, ScalarType
from .values import Array, Ref, Scalar


def _axes(x):
    if x is None:
        return ()
    return (x,) if isinstance(x, str) else tuple(x)


def _need_ref(x, spaces, what, loc):
    if not isinstance(x, Ref) or x.space not in spaces:
        got = f"a {x.space.upper()} ref" if isinstance(x, Ref) else type(x).__name__
        want = " or ".join(s.upper() for s in spaces)
        raise KernelError(f"{what} must be a {want} ref, got {got}", loc=loc)


def single_barrier(barrier, what, loc):
    """Checks `barrier` names exactly one mbarrier (`bars.at[i]`, or an array of one)."""
    _need_ref(barrier, (MemorySpace.BARRIER,), what, loc)
    if barrier.shape not in ((), (1,)):
        raise KernelError(f"{what} must name one barrier; index the array of {barrier.shape[0]} "
                          f"with .at[i]", loc=loc)


# ----------------------------------------------------------------------------- data movement

def copy_gmem_to_smem(src, dst, barrier, *, collective_axes=None, partitioned_axis=None, l2_promotion=None):
    """Starts an asynchronous TMA copy GMEM -> SMEM that arrives on `barrier` with its byte count.

    Each copy is one arrival on `barrier` (declare `num_arrivals` = copies per phase).
    `src` may have dimensions of size 1 that `dst` drops (`x.at[tg.ds(b, 1), rows, cols]`
    into a (rows, cols) tile), as it may index them away (`x.at[b, rows, cols]`).
    `collective_axes` multicasts the tile to every block along those cluster axes.
    With `partitioned_axis=d` (2-CTA collective MMA) each block of the cluster pair
    loads its own half of `src` along dimension d into `dst`, and only the leader
    block's barrier tracks both halves (Pallas: `leader_tracked=CopyPartition.PARTITIONED(d)`).
    Elements of `src` outside the array are filled with zeros (TMA semantics).
    `l2_promotion=N` (64, 128 or 256 bytes) asks L2 to fetch N bytes for each miss of the copy (the tensor map's
    L2 promotion; DeepGEMM asks 256): a K-major tile's 128-byte rows then bring the next K step's with them.
    None leaves CuTe DSL's choice. A hint: what the copy delivers is the same; measure it (on an H100 the
    flagship's 256x128 block-scaled fp8 tiles ran 3-4% faster with 256 at K = 16384, its other tiles 1-14%
    slower, those tiles in pairs sharing A by multicast 3.5% slower: benchmarks/RESULTS.md, runs 228-231, 241).
    """
    loc = current_user_loc()
    if l2_promotion is not None and l2_promotion not in L2_PROMOTION_BYTES:
        raise KernelError(f"copy_gmem_to_smem: l2_promotion={l2_promotion!r}; a TMA load asks L2 to fetch one of "
                          f"{', '.join(map(str, L2_PROMOTION_BYTES))} bytes per miss, or None for CuTe DSL's "
                          "choice", loc=loc)
    _need_ref(src, (MemorySpace.GMEM,), "copy_gmem_to_smem source", loc)
    _need_ref(dst, (MemorySpace.SMEM,), "copy_gmem_to_smem destination", loc)
    single_barrier(barrier, "copy_gmem_to_smem barrier", loc)
    if src.dtype != dst.dtype:
        raise KernelError(f"copy_gmem_to_smem: source is {dtypes.name(src.dtype)} but destination is "
                          f"{dtypes.name(dst.dtype)}; TMA does not convert", loc=loc)
    axes = _axes(collective_axes)
    if partitioned_axis is None and box_dims(src.shape, dst.shape) is None:
        raise KernelError(f"copy_gmem_to_smem: source view {src.shape} and destination {dst.shape} differ (beyond "
                          "size-1 dimensions of the source, which the tile may drop)", loc=loc)
    if partitioned_axis is not None and not axes:
        raise KernelError("partitioned_axis needs collective_axes (the cluster axis the halves are split over)",
                          loc=loc)
    emit("copy_gmem_to_smem", dict(src=src, dst=dst, barrier=barrier),
         {"collective_axes": axes, "partitioned_axis": partitioned_axis, "l2_promotion": l2_promotion}, (), loc=loc)


def copy_smem_to_gmem(src, dst, *, commit_group=True):
    """Starts an asynchronous TMA store SMEM -> GMEM; out-of-bounds elements are clipped.

    Call `commit_smem()` after writing `src` with ordinary stores and before this.
    The store joins the current bulk group; `wait_smem_to_gmem(n)` waits for all
    but the `n` most recent groups.
    """
    loc = current_user_loc()
    _need_ref(src, (MemorySpace.SMEM,), "copy_smem_to_gmem source", loc)
    _need_ref(dst, (MemorySpace.GMEM,), "copy_smem_to_gmem destination", loc)
    if box_dims(dst.shape, src.shape) is None or src.dtype != dst.dtype:
        raise KernelError(f"copy_smem_to_gmem: source {src.type} and destination {dst.type} differ (beyond size-1 "
                          "dimensions of the destination, which the tile may drop)", loc=loc)
    emit("copy_smem_to_gmem", dict(src=src, dst=dst), {"commit_group": bool(commit_group)}, (), loc=loc)


def stmatrix(ref, value):
    """`ref[...] = value` with the stmatrix instruction: each warp stores 8x8 matrices of 16-bit elements.

    `value` is an f16 or bf16 array in the WGMMA accumulator layout (`acc[...]`, converted
    with `.astype`), `ref` an SMEM tile of its shape or a transposed view of one
    (`tg.transpose_ref(tile, (1, 0))`, stored by the .trans form: a swap-AB epilogue
    writing C^T's accumulator into C's rows): the epilogue's register-to-SMEM store, one
    instruction for four 8x8 matrices where `ref[...] = value` stores an element a thread.
    Hopper (sm_90a) only; a tilegemm extension (Pallas picks the store).
    """
    loc = current_user_loc()
    _need_ref(ref, (MemorySpace.SMEM,), "stmatrix destination", loc)
    if not isinstance(value, Array):
        raise KernelError(f"stmatrix stores a register array, got {type(value).__name__}", loc=loc)
    if tuple(value.shape) != tuple(ref.shape) or value.dtype != ref.dtype:
        raise KernelError(f"stmatrix: the array ({value.type}) and the destination ({ref.type}) must have one shape "
                          "and one dtype (convert the array with .astype first)", loc=loc)
    emit("stmatrix", dict(ref=ref, value=value), {}, (), loc=loc)


def commit_smem():
    """Makes this thread's ordinary SMEM writes visible to TMA and tensor cores (fence.proxy.async)."""
    emit("commit_smem")


def launch_dependents():
    """Lets the next kernel on the stream, if it is a dependent launch (tg.kernel's `dependent_launch`), start placing
    its blocks before this kernel's have exited. Only a hint of when: the dependent still waits for this whole kernel
    and its writes before its body runs, so where it is called changes speed, never results. Call it once a block has
    issued its last read of what the next kernel may write (its blocks then set up on the SMs this one frees)."""
    emit("launch_dependents")


def wait_smem_to_gmem(n, wait_read_only=False):
    """Waits until at most `n` bulk store groups are pending (only their SMEM reads if `wait_read_only`)."""
    if not isinstance(n, int) or n < 0:
        raise KernelError(f"wait_smem_to_gmem(n) needs a static n >= 0, got {n!r}", loc=current_user_loc())
    emit("wait_smem_to_gmem", (), {"n": n, "read_only": bool(wait_read_only)})


def async_load_tmem(src):
    """Starts loading a TMEM region into registers; use the result only after `wait_load_tmem()`."""
    loc = current_user_loc()
    _need_ref(src, (MemorySpace.TMEM,), "async_load_tmem source", loc)
    return emit("async_load_tmem", dict(src=src), {}, (ArrayType(src.shape, src.dtype),), loc=loc).result


def wait_load_tmem():
    """Waits for every `async_load_tmem` this thread started."""
    emit("wait_load_tmem")


# ----------------------------------------------------------------------------- synchronisation

def barrier_arrive(barrier):
    """Arrives once on `barrier` (a warpgroup arrives once; inside core_map, each warp does)."""
    loc = current_user_loc()
    single_barrier(barrier, "barrier_arrive", loc)
    emit("barrier_arrive", dict(barrier=barrier), {}, (), loc=loc)


def barrier_wait(barrier, phase=None):
    """Waits for the barrier's next phase to complete (mbarrier try_wait.parity).

    By default tilegemm tracks the phase parity per thread and barrier, as Pallas
    does: the k-th wait of a thread on a barrier waits for its k-th phase.
    `phase=p` (a static or traced int/bool) waits with an explicit parity instead:
    it returns once the barrier's in-progress phase has parity != p, exactly as the
    hardware does, so a wrong parity returns too early or hangs.
    """
    loc = current_user_loc()
    single_barrier(barrier, "barrier_wait", loc)
    if phase is not None and not isinstance(phase, (bool, int, Scalar)):
        raise KernelError(f"barrier_wait phase must be a parity (0/1, a bool, or a traced int), got {phase!r}",
                          loc=loc)
    emit("barrier_wait", dict(barrier=barrier, phase=phase), {}, (), loc=loc)


def count_arrival(counter, arrivals):
    """Counts this warpgroup's arrival at `counter` and returns a traced bool: True, in every thread of the
    warpgroup, for the `arrivals`-th arrival since the counter was 0, which sets it back to 0.

    `counter` is a 0-d view of an int32 kernel array updated in place (`input_output_aliases`) that the caller
    zeroes once: each launch leaves it at 0 again. The arrival is a release of the warpgroup's earlier GMEM stores
    and an acquire of the earlier arrivals' (GPU scope), so the last one to arrive reads what every other wrote
    before arriving: blocks hand partial results to the last of them without a second kernel or a wait (a split-K
    "last slice reduces" epilogue). Nothing waits, so blocks need not run at the same time. The interpreter
    race-checks the GMEM of a kernel that counts arrivals: a write after arriving, or a read of another block's
    write where this did not return True, is a RaceError. A tilegemm extension (Pallas GPU has semaphores that
    wait)."""
    loc = current_user_loc()
    _need_ref(counter, (MemorySpace.GMEM,), "count_arrival counter", loc)
    if counter.shape != () or counter.dtype != dtypes.int32:
        raise KernelError(f"count_arrival counts in one int32 element: index the counter array down to one "
                          f"element (counters.at[i]); got a {counter.type} view", loc=loc)
    if not isinstance(arrivals, int) or isinstance(arrivals, bool) or arrivals < 1:
        raise KernelError(f"count_arrival needs a static arrivals >= 1 (how many warpgroups arrive at the counter "
                          f"each launch), got {arrivals!r}", loc=loc)
    return emit("count_arrival", dict(counter=counter), {"arrivals": arrivals}, (ScalarType(dtypes.bool_),),
                loc=loc).result


def tcgen05_commit_arrive(barrier, collective_axis=None):
    """Arrives on `barrier` once every tcgen05 MMA issued so far by this thread has completed."""
    loc = current_user_loc()
    single_barrier(barrier, "tcgen05_commit_arrive barrier", loc)
    emit("tcgen05_commit_arrive", dict(barrier=barrier), {"collective_axis": collective_axis}, (), loc=loc)


def wgmma_wait(n):
    """Waits until at most `n` WGMMA groups issued by this warpgroup are still in flight."""
    if not isinstance(n, int) or n < 0:
        raise KernelError(f"wgmma_wait(n) needs a static n >= 0, got {n!r}", loc=current_user_loc())
    emit("wgmma_wait", (), {"n": n})


def set_max_registers(n, *, action):
    """Hopper register reallocation (setmaxnreg): `action` is 'increase' or 'decrease'.

    `n` (registers per thread) is a static int; the verifier checks it is one setmaxnreg accepts."""
    loc = current_user_loc()
    if action not in ("increase", "decrease"):
        raise KernelError(f"set_max_registers action must be 'increase' or 'decrease', got {action!r}", loc=loc)
    if not isinstance(n, int) or isinstance(n, bool):
        raise KernelError(f"set_max_registers needs a static int register count, got {n!r}", loc=loc)
    emit("set_max_registers", (), {"n": n, "action": action}, (), loc=loc)


# ----------------------------------------------------------------------------- compute

def wgmma(acc, a, b, *, accumulate=True):
    """Issues an asynchronous Hopper WGMMA: acc[M,N] += a[M,K] @ b[K,N].

    `acc` is an ACC ref, `b` an SMEM ref, `a` an SMEM ref or a register array.
    The MMA is in flight until `wgmma_wait`; reading `acc` or overwriting `a`/`b`
    before that is a race. `accumulate=False` (static) computes acc = a @ b, its
    old value unread (the instruction's scale-d input is 0): a fresh partial sum
    needs no zeroing first.
    """
    loc = current_user_loc()
    if not isinstance(accumulate, bool):
        raise KernelError(f"wgmma's accumulate= must be a static True or False, got {accumulate!r}", loc=loc)
    _need_ref(acc, (MemorySpace.ACC,), "wgmma accumulator", loc)
    if not isinstance(a, Array):
        _need_ref(a, (MemorySpace.SMEM,), "wgmma A operand", loc)
    _need_ref(b, (MemorySpace.SMEM,), "wgmma B operand", loc)
    _check_mma_shapes("wgmma", acc.shape, a.shape, b.shape, loc)
    emit("wgmma", dict(acc=acc, a=a, b=b), {"accumulate": accumulate}, (), loc=loc)


def tcgen05_mma(acc, a, b, barrier=None, *, accumulate=True, collective_axis=None):
    """Issues a Blackwell tcgen05 MMA: acc[M,N] (TMEM) (+)= a[M,K] @ b[K,N] (SMEM operands).

    `accumulate` (static or traced bool) selects += versus =. If `barrier` is given
    the tensor core arrives on it when this MMA completes (it must be declared with
    `orders_tensor_core=True`). With `collective_axis` the MMA spans the 2-CTA pair:
    operands are the cluster-wide halves and only the leader block issues it.
    """
    loc = current_user_loc()
    _need_ref(acc, (MemorySpace.TMEM,), "tcgen05_mma accumulator", loc)
    _need_ref(a, (MemorySpace.SMEM, MemorySpace.TMEM), "tcgen05_mma A operand", loc)
    _need_ref(b, (MemorySpace.SMEM,), "tcgen05_mma B operand", loc)
    if barrier is not None:
        single_barrier(barrier, "tcgen05_mma barrier", loc)
    if not isinstance(accumulate, (bool, Scalar)):
        raise KernelError(f"accumulate must be a bool or a traced bool, got {accumulate!r}", loc=loc)
    emit("tcgen05_mma", dict(acc=acc, a=a, b=b, accumulate=accumulate, barrier=barrier),
         {"collective_axis": collective_axis}, (), loc=loc)


def dot(a, b, acc=None):
    """acc + a @ b, with the instruction chosen when lowering (CUDA-core FMA, WGMMA or tcgen05).

    `a` [M,K] and `b` [K,N] may be GMEM or SMEM refs or register arrays; the result
    is an f32 register array (or `acc`'s dtype). This is Croqtile's "declare the
    shape, the compiler picks the instruction"; Pallas has no direct equivalent.
    """
    loc = current_user_loc()
    for x, what in ((a, "dot A operand"), (b, "dot B operand")):
        if isinstance(x, Ref):
            _need_ref(x, (MemorySpace.GMEM, MemorySpace.SMEM), what, loc)
        elif not isinstance(x, Array):
            raise KernelError(f"{what} must be a ref or a register array, got {type(x).__name__}", loc=loc)
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        raise KernelError(f"dot shapes {tuple(a.shape)} @ {tuple(b.shape)} do not multiply", loc=loc)
    if a.dtype != b.dtype:
        raise KernelError(f"dot operands must share a dtype, got {dtypes.name(a.dtype)} and "
                          f"{dtypes.name(b.dtype)}", loc=loc)
    out_shape = (a.shape[0], b.shape[1])
    out_dtype = dtypes.float32
    if acc is not None:
        if not isinstance(acc, Array) or tuple(acc.shape) != out_shape:
            raise KernelError(f"dot accumulator must be a register array of shape {out_shape}", loc=loc)
        out_dtype = acc.dtype
    return emit("dot", dict(a=a, b=b, acc=acc), {}, (ArrayType(out_shape, out_dtype),), loc=loc).result


mma = dot


def _check_mma_shapes(what, acc_shape, a_shape, b_shape, loc):
    if len(acc_shape) != 2 or len(a_shape) != 2 or len(b_shape) != 2:
        raise KernelError(f"{what} operands must be 2-D, got acc {acc_shape}, a {a_shape}, b {b_shape}", loc=loc)
    (m, n), (am, ak), (bk, bn) = acc_shape, a_shape, b_shape
    if (am, bn) != (m, n) or ak != bk:
        raise KernelError(f"{what} shapes do not multiply: acc {acc_shape} += a {a_shape} @ b {b_shape}", loc=loc)

"""tcgen05 fences around thread synchronisation, called by generated Blackwell kernels.

PTX `tcgen05.fence::before_thread_sync` orders a thread's earlier tcgen05
operations (TMEM loads, MMAs, allocation) before its next barrier arrival or
block sync; `tcgen05.fence::after_thread_sync` orders the tcgen05 operations
after a wait or sync behind it. CuTe DSL 4.8 exposes these only in its
experimental package, so they wrap the NVVM operation directly.
"""
from cutlass import dsl_user_op
from cutlass._mlir.dialects import nvvm


@dsl_user_op
def before_thread_sync(*, loc=None, ip=None):
    """tcgen05.fence::before_thread_sync (put it before an arrive, barrier or sync)."""
    nvvm.tcgen05_fence(nvvm.Tcgen05FenceKind.BEFORE_THREAD_SYNC, loc=loc, ip=ip)


@dsl_user_op
def after_thread_sync(*, loc=None, ip=None):
    """tcgen05.fence::after_thread_sync (put it after a wait, barrier or sync)."""
    nvvm.tcgen05_fence(nvvm.Tcgen05FenceKind.AFTER_THREAD_SYNC, loc=loc, ip=ip)

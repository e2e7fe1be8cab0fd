"""Hang reports: what a kernel compiled with bounded barrier waits (tilegemm.debug) tells the host when a wait
gives up.

Each GPU gets a few words of pinned host memory mapped into its address space.
The first thread whose wait gives up writes which wait (a code the compiled
kernel's `hang_waits` describes), its block, thread and parity there, then traps;
the trap ends the launch with an error, and the host, which can still read its
own memory, turns the report into a tg.HangError.
"""
import ctypes
import functools

from cuda.bindings import driver as cu

from ..errors import HangError
from .driver import CudaError, call

WORDS = 8   # claimed, wait code, block x, y, z, CUDA thread, parity, spare


class HangReport:
    """The report words of one GPU: `device_pointer` goes to the kernel, `words` are read by the host."""

    def __init__(self, device):
        device.activate()
        flags = cu.CU_MEMHOSTALLOC_DEVICEMAP | cu.CU_MEMHOSTALLOC_PORTABLE
        self.host_pointer = int(call(cu.cuMemHostAlloc, WORDS * 4, flags))
        self.device_pointer = int(call(cu.cuMemHostGetDevicePointer, self.host_pointer, 0))
        self.words = (ctypes.c_int32 * WORDS).from_address(self.host_pointer)

    def clear(self):
        ctypes.memset(self.host_pointer, 0, WORDS * 4)

    def check(self, compiled, stream, kernel_name):
        """Waits for the launch on `stream`; raises HangError if a barrier wait gave up (else any CUDA error)."""
        try:
            call(cu.cuStreamSynchronize, stream)
        except CudaError as e:
            if self.words[0]:
                raise HangError(self.describe(compiled, kernel_name)) from e
            raise

    def describe(self, compiled, kernel_name):
        _, code, bx, by, bz, thread, parity, _ = list(self.words)
        wait = compiled.hang_waits[code - 1] if 0 < code <= len(compiled.hang_waits) else f"wait #{code}"
        return (f"{kernel_name}: a barrier wait gave up after {compiled.meta.get('barrier_timeout')} s: {wait}; in "
                f"block ({bx}, {by}, {bz}), CUDA thread {thread} (warpgroup {thread // 128}), waiting for the phase "
                f"of parity {parity}. No arrival completed that phase: an arrival or a TMA copy is missing, or "
                "the barrier's count or expected bytes are too high. Run the kernel with interpret=True: the "
                "interpreter names every blocked wait and its line. The kernel trapped, so this process's CUDA "
                "context can no longer be used: restart the process.")


@functools.cache
def hang_report(device):
    """The HangReport of `device` (made once per process)."""
    return HangReport(device)


def run_compiled(compiled, pointers, stream, device, kernel_name):
    """Launches `compiled` on `pointers` and the int CUstream `stream`; a kernel compiled with bounded barrier
    waits also gets the GPU's hang report, and the launch is waited for so a hang raises HangError here."""
    if not compiled.hang_waits:
        compiled.launcher()(pointers, stream)
        return
    report = hang_report(device)
    report.clear()
    compiled.launcher()(pointers + [report.device_pointer], stream)
    report.check(compiled, stream, kernel_name)

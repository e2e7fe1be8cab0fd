"""The model's terms for GEMM designs beyond one output tile over the whole K: swap-AB, split-K and stream-K.

* swap-AB computes C^T = B^T A^T: its kernel is budgeted in the MMA's frame, the
  problem (N, M, K) with the tile's 64-row side over N (the config says so).
* split-K into S slices is budgeted as a batch of S GEMMs of K/S: each slice reads
  its own panels of A and B (no L2 sharing between slices) and writes an f32
  partial C, which is the batch's output traffic. Its second pass reads the S
  partial slices (`slice_rows` rows each) and writes C once, at the measured DRAM
  bandwidth, plus one more launch: `memory_pass_s`. Summed in the kernel by each
  tile's last slice (`in_kernel`), the partials are written and read back and C
  written, at the same bandwidth but with no launch: `fixup_s`.
* A stream-K tail of S slices runs the whole rounds of whole tiles at the budget's
  tile time, then the last round's tiles as S K slices each, dealt to every block,
  at the tile time of a problem of K/S: `stream_k_s`. Its second pass reads the
  partial tiles (written by the main kernel: counted here too) and writes the tail's
  tiles of C, plus one more launch.
* Decode (a memory-bound problem, M of a few tokens against a weight): what
  counts is the bytes the problem must move (A and B read once, C written once)
  per second, against the device's copy bandwidth: `DesignBudget.bandwidth_fraction`.
  The budget's DRAM bound is the whole device's; a design with fewer work units
  than SMs streams from only as many SMs, each taking in its tiles' operands no
  faster than one SM loads from L2 (`DeviceSpec.sm_load_bw`): `streaming_s`.
"""
import math
from dataclasses import dataclass, replace

from ..lang import dtypes
from .budget import Budget, budget
from .devices import get_device
from .traffic import cdiv

PARTIAL_DTYPE = dtypes.float32    # split-K partials: the f32 accumulators as they are


@dataclass(frozen=True)
class DesignBudget:
    """The predicted time of one design on one problem: its main kernel's budget and its reduction pass."""
    shape: tuple           # the user's (M, N, K)
    gemm: Budget           # the main kernel, in the MMA's frame (N, M, K) when swap_ab
    swap_ab: bool
    split_k: int
    reduction_bytes: int   # what the split-K reduction reads and writes (0 without split-K)
    reduction_s: float
    out_dtype: object      # C's element type (the main kernel's output is f32 partials under split-K)
    streaming_s: float     # the main kernel's DRAM bytes streamed by the SMs its work units occupy, + launch
    batch: int = 1         # GEMMs of `shape` in the launch
    stream_k: int = 1      # K slices of each tile of a stream-K tail (1: none)
    main_s: float = None   # the main kernel's time where the design changes it from its budget's (stream-K)
    prepass_s: float = 0.0  # passes before the main kernel (block scales padded for TMA, `padding_s`)

    @property
    def predicted_s(self):
        main = self.gemm.predicted_s if self.main_s is None else self.main_s
        return self.prepass_s + max(main, self.streaming_s) + self.reduction_s

    @property
    def min_bytes(self):
        """A and B read once and C written once: what the problem must move, whatever the design."""
        m, n, k = self.shape
        c = self.gemm.config
        return self.batch * ((m * k + k * n) * dtypes.itemsize(c.dtype) + m * n * dtypes.itemsize(self.out_dtype))

    @property
    def bandwidth_fraction(self):
        """min_bytes per predicted second over the device's (measured) copy bandwidth."""
        return self.min_bytes / self.predicted_s / self.gemm.device.bandwidth(measured=True)

    def describe(self):
        """One line: the design, the predicted time and where it goes."""
        parts = [self.gemm.config.describe()]
        if self.swap_ab:
            parts.insert(0, "swap-AB (C^T = B^T A^T)")
        if self.split_k > 1:
            parts.insert(0, f"split-K x{self.split_k} + reduction {self.reduction_s * 1e6:.2f} us")
        if self.stream_k > 1:
            parts.insert(0, f"stream-K tail x{self.stream_k} + reduction {self.reduction_s * 1e6:.2f} us")
        if self.prepass_s:
            parts.insert(0, f"block scales padded first {self.prepass_s * 1e6:.2f} us")
        return (f"{self.predicted_s * 1e6:.2f} us predicted ({self.gemm.bound}-bound main kernel): "
                + "; ".join(parts))


def design_budget(config, shape, device="h200", *, swap_ab=False, split_k=1, slice_rows=None, batch=1, stream_k=1,
                  in_kernel=False):
    """The DesignBudget of the kernel `config` describes (in the MMA's frame, its out_dtype C's) computing
    C[M, N] = A[M, K] @ B[K, N] for `shape` (M, N, K), swapped and split over K as given; `batch` such GEMMs in
    one launch (not with split-K); `stream_k` slices of each tile of the last round (C's own tiles, one GEMM).

    `slice_rows`: the rows of one slice's partial C in the split-K workspace (at least M); `in_kernel`: the split's
    partials are summed by each tile's last slice, not by a second pass.
    """
    dev = get_device(device)
    m, n, k = shape
    frame = (n, m) if swap_ab else (m, n)
    if batch > 1 and split_k > 1:
        raise ValueError(f"a batch of {batch} GEMMs split over K is not a design tilegemm builds; use split_k=1")
    if stream_k > 1:
        return stream_k_budget(config, shape, dev, stream_k)
    if split_k == 1:
        gemm = budget(config, shape=(batch, *frame, k), device=dev)
        return DesignBudget(tuple(shape), gemm, swap_ab, 1, 0, 0.0, config.out_dtype, streaming_s(gemm), batch)
    if slice_rows is None or slice_rows < m:
        raise ValueError(f"a split-K design needs slice_rows >= M={m} (the workspace rows of one slice), got "
                         f"{slice_rows}")
    gemm = budget(replace(config, out_dtype=PARTIAL_DTYPE), shape=(split_k, *frame, cdiv(k, split_k)), device=dev)
    partials = split_k * slice_rows * n * dtypes.itemsize(PARTIAL_DTYPE)
    if in_kernel:
        nbytes = 2 * partials + m * n * dtypes.itemsize(config.out_dtype)
        return DesignBudget(tuple(shape), gemm, swap_ab, split_k, nbytes, fixup_s(nbytes, dev), config.out_dtype,
                            streaming_s(gemm))
    nbytes = partials + m * n * dtypes.itemsize(config.out_dtype)
    return DesignBudget(tuple(shape), gemm, swap_ab, split_k, nbytes, memory_pass_s(nbytes, dev), config.out_dtype,
                        streaming_s(gemm))


def stream_k_budget(config, shape, device, split):
    """The DesignBudget of `config`'s tiles of C with a stream-K tail of `split` slices (see the module docstring):
    the main kernel's SM time is its whole rounds at the tile time over the whole K plus the tail's rounds of slices
    at the tile time over a slice's K; DRAM and L2 bound it as they bound the plain kernel."""
    dev = get_device(device)
    m, n, k = shape
    gemm = budget(config, shape=shape, device=dev)
    grid = config.grid_blocks or dev.sms
    full_rounds, tail = divmod(gemm.tiles, grid)
    sliced = budget(config, shape=(m, n, cdiv(k, split)), device=dev)   # a slice's K, as split-K's
    sm_s = full_rounds * gemm.tile_time_s + math.ceil(tail * split / grid) * sliced.tile_time_s
    main_s = max(sm_s, gemm.dram_time_s, gemm.l2_time_s) + dev.launch_overhead_s
    tile = config.tile_m * config.tile_n
    nbytes = tail * tile * (2 * split * dtypes.itemsize(PARTIAL_DTYPE) + dtypes.itemsize(config.out_dtype))
    return DesignBudget(tuple(shape), gemm, False, 1, nbytes, memory_pass_s(nbytes, dev), config.out_dtype,
                        streaming_s(gemm), stream_k=split, main_s=main_s)


def memory_pass_s(nbytes, device):
    """Seconds of a memory-bound pass of its own (a split-K or stream-K reduction, block scales padded) moving
    `nbytes` through DRAM, launch included."""
    dev = get_device(device)
    return nbytes / dev.bandwidth(measured=True) + dev.launch_overhead_s


def fixup_s(nbytes, device):
    """Seconds the last slices of a split spend after the main loop, moving `nbytes` (partials written and read
    back, C written) at the measured DRAM bandwidth, in the same launch."""
    return nbytes / get_device(device).bandwidth(measured=True)


def padding_s(arrays, device):
    """Seconds of the passes copying float32 arrays of `rows` x `row` elements into ones of `rows` x `padded`
    ((rows, row, padded) per array; tilegemm.ops.scale_padding), each through DRAM with its own launch."""
    return sum(memory_pass_s(rows * (row + padded) * dtypes.itemsize(dtypes.float32), device)
               for rows, row, padded in arrays)


def streaming_s(gemm):
    """Seconds to stream a kernel's bytes, plus one launch: its DRAM bytes at the device's bandwidth, and the
    operands of the busiest SM's tiles (rounds of tiles over the SMs) at one SM's load rate. The second binds a
    kernel of few work units, each loading much: half the SMs stream a weight as fast as all of them unless each
    SM's loads cannot keep up."""
    dev = gemm.device
    dram_s = gemm.dram_bytes / dev.bandwidth(measured=True)
    busiest_sm_s = math.ceil(gemm.tiles / dev.sms) * tile_operand_bytes(gemm) / dev.sm_load_bw
    return max(dram_s, busiest_sm_s) + dev.launch_overhead_s


def tile_operand_bytes(gemm):
    """The operand bytes one tile brings into its SM: its rows of A and columns of B inside the problem (TMA fills
    the rest without reading them) over the whole K, in the kernel's own frame."""
    c = gemm.config
    m, n, k = gemm.shape
    return cdiv(k, c.tile_k) * c.tile_k * (min(c.tile_m, m) + min(c.tile_n, n)) * dtypes.itemsize(c.dtype)

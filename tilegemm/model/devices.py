"""Device specifications the performance model reads: datasheet ceilings, measured ceilings and latencies.

Datasheet figures and figures measured on a real machine are kept apart
(`tensor_flops` vs `measured_tensor_flops`): the budget table shows the
datasheet roofline and predicts with the measured ceiling where one exists.
Every figure that is neither a datasheet value nor a measurement is marked an
estimate in `sources`. The per-block and per-SM limits of a device are those of
its architecture (lang/arch.py), and the MMA paths it has are its architecture's
tensor-core instructions (lang/tensorcore.py).
"""
from dataclasses import dataclass, field

from ..lang.arch import LIMITS
from ..lang.tensorcore import model_instructions, tensor_rate

MIB = 1024 * 1024


@dataclass(frozen=True)
class DeviceSpec:
    """One GPU model: throughput ceilings, memory sizes and latencies; its limits are its architecture's."""
    name: str
    arch: str                       # "sm_80", "sm_90a", "sm_100a"
    sms: int
    clock_hz: float                 # the clock the datasheet tensor/FMA rates are quoted at
    dram_bw: float                  # datasheet bytes/s
    l2_bytes: int
    l2_bw: float                    # bytes/s from L2 to the SMs (an estimate: NVIDIA publishes none)
    fp32_flops: float               # CUDA-core FMA, FLOP/s (2 per FMA)
    tensor_flops: float             # dense f16/bf16 tensor-core FLOP/s (0: no tensor path tilegemm uses)
    smem_bytes_per_clk: int = 128            # shared-memory bandwidth of one SM
    sm_load_bytes_per_clk: int = 64          # operand bytes one SM takes in from L2 per clock (estimate)
    dram_latency_s: float = 1.0e-6           # a TMA / global load that misses L2, under load (estimate)
    l2_latency_s: float = 0.4e-6             # one that hits L2, under load (estimate)
    launch_overhead_s: float = 3.0e-6        # one kernel launch, back to back
    wgmma_group_overhead_s: float = 0.11e-6  # a consumer's bookkeeping per WGMMA group it issues (estimate)
    wgmma_drain_s: float = 0.025e-6          # waiting for every WGMMA in flight, then using the accumulator (fit)
    scale_read_s: float = 0.18e-6            # a promoting consumer reading a K step's scales from GMEM itself (fit)
    promoted_step_s: float = 0.385e-6        # the shortest K step of a promoting consumer, however little MMA (fit)
    block_scaled_stages: int = None          # the most stages of a tile staging block scales, where fewer were
                                             # measured faster than what fits (None: as many as fit)
    measured_tensor_flops: float = None      # sustained, from a measurement on this device
    measured_dram_bw: float = None
    resident_clusters: tuple = ()            # (cluster size, clusters the GPU holds at once) pairs, measured
    sources: dict = field(default_factory=dict, compare=False)

    def __str__(self):
        return self.name

    def cluster_grid_sms(self, cluster_size, num_sms):
        """The SMs a persistent grid of clusters of `cluster_size` can keep busy at once: `num_sms`, or fewer where
        the GPU holds fewer such clusters at once (`resident_clusters`; not known: `num_sms`)."""
        held = dict(self.resident_clusters).get(cluster_size)
        return num_sms if held is None else min(num_sms, held * cluster_size)

    @property
    def limits(self):
        """The per-block and per-SM limits of the device's architecture (lang/arch.py)."""
        return LIMITS[self.arch]

    @property
    def instructions(self):
        """The MMA paths tilegemm lowers to on this device: 'fma' and its architecture's tensor-core ones."""
        return model_instructions(self.arch)

    def peak_flops(self, instruction, measured=False, dtype=None):
        """FLOP/s of `instruction` ('fma', 'wgmma', 'tcgen05') on `dtype` operands (None: 16-bit); `measured`
        prefers a measured ceiling. The tensor figures are 16-bit rates; other types scale them by the
        instruction's rate (lang/tensorcore.py: fp8 twice), the measured ceiling included."""
        if instruction == "fma":
            return self.fp32_flops
        peak = self.measured_tensor_flops if measured and self.measured_tensor_flops else self.tensor_flops
        return peak * (1.0 if dtype is None else tensor_rate(instruction, dtype))

    def bandwidth(self, measured=False):
        """DRAM bytes/s; `measured` prefers a measured copy bandwidth."""
        return self.measured_dram_bw if measured and self.measured_dram_bw else self.dram_bw

    @property
    def sm_load_bw(self):
        """Bytes/s one SM takes in from L2 at most, however few SMs load: `sm_load_bytes_per_clk` at the clock."""
        return self.sm_load_bytes_per_clk * self.clock_hz

    def is_measured(self, instruction):
        """True when `peak_flops(instruction, measured=True)` is a measurement, not the datasheet."""
        return instruction != "fma" and bool(self.measured_tensor_flops)

    def smem_bytes_per_flop(self, instruction, dtype=None):
        """Shared-memory bytes one SM can deliver per FLOP of `instruction` on `dtype` at the datasheet rate."""
        flops_per_clk = self.peak_flops(instruction, dtype=dtype) / (self.sms * self.clock_hz)
        return self.smem_bytes_per_clk / flops_per_clk


A100 = DeviceSpec(
    name="NVIDIA A100 SXM", arch="sm_80", sms=108, clock_hz=1.41e9, dram_bw=2.0e12, l2_bytes=40 * MIB,
    l2_bw=5120 * 1.41e9, fp32_flops=19.5e12, tensor_flops=0.0,
    sources={
        "dram_bw": "a round 2 TB/s (datasheet: 2.039 TB/s for the 80 GB part)",
        "l2_bw": "estimate: 5120 B/clk x 1.41 GHz",
        "tensor_flops": "312 TFLOP/s mma.sync exists, but tilegemm has no sm_80 tensor-core path",
    })

H100 = DeviceSpec(
    name="NVIDIA H100 SXM", arch="sm_90a", sms=132, clock_hz=1.83e9, dram_bw=3.35e12, l2_bytes=50 * MIB,
    l2_bw=12e12, fp32_flops=66.9e12, tensor_flops=989.4e12,
    measured_tensor_flops=742e12, measured_dram_bw=3.0e12, block_scaled_stages=4, resident_clusters=((2, 66), (4, 30)),
    sources={"l2_bw": "estimate: third-party microbenchmarks report ~12 TB/s",
             "wgmma_group_overhead_s": "estimate: as H200",
             "sm_load_bytes_per_clk": "estimate: as H200; it ranks the (4096, 14336) weight unsplit at M = 1 and 16, "
                                      "where the split took 2.3-5.1% longer on an H100 (benchmarks/RESULTS.md run "
                                      "216)",
             "measured_tensor_flops": "the fastest 8192^3 GEMM measured on an H100 SXM (80 GB HBM3): cuBLAS bf16, "
                                      "741.9 TFLOP/s (benchmarks/RESULTS.md run 188)",
             "measured_dram_bw": "device-to-device copy, read + write bytes, on that H100: 2997 GB/s (run 188)",
             "block_scaled_stages": "benchmarks/RESULTS.md runs 199-200: block-scaled fp8 128x128 tiles staging "
                                    "their scales ran 1.05-1.19x as fast in 4 stages as in the 5 that fit, at "
                                    "4096x7168x16384, 8192^3 and 4096x8192x4096 (6 stages: slower again, 3: "
                                    "0.8x); the model predicts the same time for 4-6",
             "resident_clusters": "the driver's probe (runtime.occupancy.resident_clusters) on an H100 80GB HBM3: "
                                  "66 clusters of two, 30 of four, as the H200 (benchmarks/RESULTS.md run 189); "
                                  "without it (run 188) clusters of four on 132 SMs ran at half speed"})

H200 = DeviceSpec(
    name="NVIDIA H200 SXM", arch="sm_90a", sms=132, clock_hz=1.83e9, dram_bw=4.8e12, l2_bytes=60 * MIB,
    l2_bw=12e12, fp32_flops=66.9e12, tensor_flops=989.4e12,
    measured_tensor_flops=720e12, measured_dram_bw=4.3e12, resident_clusters=((2, 66), (4, 30)),
    sources={
        "l2_bytes": "60 MB as PyTorch reported on the H200 tilegemm's benchmarks ran on",
        "block_scaled_stages": "none: block-scaled fp8 128x128 tiles ran 0.96-0.99x as fast in 4 stages as in the 5 "
                               "that fit (benchmarks/RESULTS.md run 205), where the H100 ran them 1.05-1.19x",
        "resident_clusters": "the driver's cuOccupancyMaxActiveClusters for the flagship's designs on the H200 "
                             "(benchmarks/RESULTS.md run 51): 66 clusters of two, 30 of four (GPCs of uneven size)",
        "l2_bw": "estimate: as H100 (third-party ~12 TB/s)",
        "sm_load_bytes_per_clk": "estimate: 64 bytes a clock orders the cells of benchmarks/RESULTS.md runs 113-114 "
                                 "and 121: 64 swap-AB 64x64 tiles of 64x4096x14336 (3.7 MB of operands each) ran "
                                 "36.4 us, 5.5% slower than the same split in two over 128 SMs, while 64 tiles of "
                                 "64x16 (2.3 MB each, M = 16) ran as fast as their split (31.2-31.6 us)",
        "measured_tensor_flops": "the fastest 8192^3 GEMM in tilegemm's H200 runs, 719 TFLOP/s bf16 (flagship, "
                                 "benchmarks/RESULTS.md run 3; cuBLAS 659-709 in the same runs; 769-798 for cuBLAS bf16 was "
                                 "reported on another machine and day)",
        "measured_dram_bw": "device-to-device copy, read + write bytes, on the H200 of the benchmarks",
        "wgmma_group_overhead_s": "estimate fitted to two runs: ncu (benchmarks/RESULTS.md run 14) saw a lone "
                                  "ping-pong warpgroup at 128x128 (two WGMMA groups per K step) keep the tensor pipe "
                                  "busy 80% of the time against 90% for two cooperative ones, ~0.22 us of bookkeeping "
                                  "per step; run 28 timed a one-group 64x16 swap-AB consumer at <= 0.13 us per K step "
                                  "in all: the cost goes with the groups issued, ~0.11 us each",
        "wgmma_drain_s": "fitted to benchmarks/RESULTS.md runs 96-97: block-scaled fp8, 128x128 cooperative tiles "
                         "with staged scales and a drain every two K steps, ran 7-14 ns a step slower than the "
                         "same tile unscaled (1184-1212 against 1228-1238 TFLOP/s)",
        "scale_read_s": "fitted to benchmarks/RESULTS.md runs 82-96: the same kernel with each consumer reading its "
                        "scales from GMEM (two scale_a rows and scale_b a step, with bounds and address arithmetic, "
                        "waited for on long scoreboards: ncu, run 94) ran 0.56-0.59 us a step at 4096x7168x16384 "
                        "against ~0.44 staged",
        "promoted_step_s": "fitted to benchmarks/RESULTS.md run 104: block-scaled 128x64 tiles with staged scales "
                           "ran 0.381 us a K step at 4095x7168x16384 and 0.391 at 1003x1024x4096, where their "
                           "WGMMAs take ~0.21 (128x128 tiles: 0.39-0.46 us, their WGMMAs ~0.40)",
    })

B200 = DeviceSpec(
    name="NVIDIA B200", arch="sm_100a", sms=148, clock_hz=1.85e9, dram_bw=8.0e12, l2_bytes=126 * MIB,
    l2_bw=20e12, fp32_flops=75e12, tensor_flops=2250e12,
    sources={
        "l2_bytes": "estimate: third-party figures range from 65 to 126 MB",
        "l2_bw": "rough estimate; no published figure",
        "clock_hz": "estimate: the clock that makes 2250 TFLOP/s = 148 SMs x 8192 FLOP/clk",
    })

DEVICES = {"a100": A100, "h100": H100, "h200": H200, "b200": B200}
# Per architecture: the part the model budgets a kernel for when no GPU of that architecture is in use (the GPU
# tilegemm's benchmarks ran on, for sm_90a), and the sheet of a GPU of it the model has none for (most Hopper parts
# without a sheet, the H800 among them, are H100 SXM derivatives).
REFERENCE_PARTS = {"sm_90a": "h200", "sm_100a": "b200"}
NEAREST_PARTS = {"sm_90a": "h100", "sm_100a": "b200"}


def reference_device(arch):
    """The DeviceSpec the model budgets an `arch` kernel for without a GPU of that architecture."""
    return DEVICES[REFERENCE_PARTS[arch]]


def nearest_device(arch):
    """The DeviceSpec of a GPU of `arch` the model has no sheet for."""
    return DEVICES[NEAREST_PARTS[arch]]


def get_device(name):
    """The DeviceSpec for 'h200', 'h100', 'b200', 'a100', or a runtime device name such as 'NVIDIA H200'."""
    if isinstance(name, DeviceSpec):
        return name
    key = str(name).lower()
    if key in DEVICES:
        return DEVICES[key]
    squeezed = key.replace(" ", "").replace("-", "")
    for short, spec in DEVICES.items():
        if short in squeezed:
            return spec
    raise ValueError(f"unknown device {name!r}; the model knows {', '.join(sorted(DEVICES))} "
                     "(or a runtime name containing one of them, e.g. 'NVIDIA H200')")

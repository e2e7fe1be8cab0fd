"""GemmConfig: the design parameters of a GEMM kernel that the performance model needs, and the
per-block resources (shared memory, registers, threads, tensor memory) they imply.

A config is either written by hand (to ask "what would this design reach?"
before writing the kernel) or derived from a traced graph by
`config_from_graph`, in which case `graph_resources` carries the resource figures
read off the graph's allocations and those take precedence over the formulas.
"""
import math
from dataclasses import dataclass

from ..lang import dtypes
from ..lang.arch import MBARRIER_BYTES, WARPGROUP_THREADS, shared_storage_bytes
from .layouts import MMA_ORDER, check_layouts

INSTRUCTIONS = ("fma", "wgmma", "tcgen05")
MMA_THREAD_OVERHEAD = 40      # registers of an MMA warpgroup beyond its accumulator (addresses, loop, epilogue)
PRODUCER_REGISTERS = 40       # a TMA producer warpgroup (the usual setmaxnreg decrease)
TCGEN05_THREAD_BASE = 32      # registers of a tcgen05 warpgroup besides the TMEM chunk it loads
FMA_ADDRESS_REGISTERS = 10    # loop counters, smem pointers, indices of a SIMT thread (estimate)


@dataclass(frozen=True)
class Raster:
    """The order output tiles are visited in, as `tg.planar_snake(lin, grid, minor_dim, tile_width)`.

    `minor_dim` (0: m, 1: n) is cut into bands of `tile_width` tiles; within a band
    the index runs fastest along the minor dimension. Tiles here are cluster tiles.
    """
    minor_dim: int = 1
    tile_width: int = 1

    def __post_init__(self):
        if self.minor_dim not in (0, 1):
            raise ValueError(f"Raster minor_dim must be 0 (m) or 1 (n), got {self.minor_dim!r}")
        if not isinstance(self.tile_width, int) or self.tile_width < 1:
            raise ValueError(f"Raster tile_width must be a positive int, got {self.tile_width!r}")

    def __str__(self):
        return f"planar_snake minor={'mn'[self.minor_dim]} width={self.tile_width}"


@dataclass(frozen=True)
class GraphResources:
    """Resource figures read off a traced graph's allocations (as the verifier counts them)."""
    smem_operand: int       # bytes of the A/B stage buffers
    smem_other: int         # bytes of every other SMEM allocation (epilogue staging, ...)
    smem_barriers: int      # 8 bytes per mbarrier
    acc_registers: int      # accumulator registers per CUDA thread of an MMA warpgroup
    tmem_columns: int
    threads: int            # CUDA threads per block
    smem_padding: int = 0   # bytes the block's shared-storage layout adds: alignment padding, TMEM words


@dataclass(frozen=True)
class Resources:
    """What one block of a config occupies on an SM; `source` says whether it came from a graph."""
    smem_operand: int
    smem_other: int
    smem_barriers: int
    threads: int
    acc_registers: int
    mma_registers: int          # per thread of an MMA (consumer) warpgroup, estimated or setmaxnreg
    producer_registers: int     # per thread of a producer warpgroup (0: none)
    tmem_columns: int
    source: str
    smem_padding: int = 0       # what the shared-storage layout adds: alignment padding, TMEM words

    @property
    def smem_bytes(self):
        """The dynamic shared memory one block launches with (for a graph: exactly what the lowering allocates)."""
        return self.smem_operand + self.smem_other + self.smem_barriers + self.smem_padding


@dataclass(frozen=True)
class Promotion:
    """How a block-scaled consumer promotes: `partials` partial accumulators per accumulator, taken in turn (with
    two or more, a step's promotion runs while the next step's WGMMAs do), `drain_steps` K steps between its
    waits for every WGMMA in flight (1: it waits for each step's before promoting it), and whether it reads each
    step's scales from GMEM itself (`gmem_scales`) rather than from SMEM where the producer staged them."""
    partials: int = 1
    drain_steps: int = 1
    gmem_scales: bool = False

    def __post_init__(self):
        for name in ("partials", "drain_steps"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"Promotion.{name} must be a positive int, got {value!r}")
        if not isinstance(self.gmem_scales, bool):
            raise ValueError(f"Promotion.gmem_scales must be a bool, got {self.gmem_scales!r}")


@dataclass(frozen=True)
class GemmConfig:
    """Tiles, pipeline, warpgroup roles, cluster, schedule and types of a GEMM kernel (per block).

    tile_m x tile_n is the output tile of one block (for `two_cta`, of each block
    of the pair; B is split between the two). A stage is released
    `release_delay` K steps after its MMA was issued (`wgmma_wait(n)` in the
    loop keeps n MMAs in flight, as does a tcgen05 issuer waiting on a ring of
    n + 1 MMA barriers), so stages - 1 - release_delay loads overlap
    the MMAs. `consumers` warpgroups issue MMAs
    (split along `consumer_split`), `producers` only issue TMA loads. `cluster`
    is (blocks along m, blocks along n); `multicast` shares A across the n
    blocks and B across the m blocks of a cluster. `persistent` kernels launch
    `grid_blocks` blocks (default one per SM) that loop over tiles in `raster`
    order (None: launch order, m fastest). `epilogue_tile` is the SMEM staging
    tile of the output (None: registers straight to GMEM), `epilogue_buffers`
    how many such tiles a block holds. `acc_buffers` = 2 lets one tile's
    epilogue overlap the next tile's MMAs: double-buffered TMEM accumulators on
    tcgen05; on wgmma, ping-pong consumers (`acc_buffers` = `consumers`), each
    holding a whole tile's accumulator and taking turns at the tensor cores.
    `max_registers` = (consumer, producer) registers set with setmaxnreg. `promotion` (block-scaled
    fp8, a `Promotion`): each K step's WGMMAs sum into a fresh partial accumulator that the consumer adds, scaled,
    into the tile's own with CUDA-core FMAs once they are done.
    `graph_resources`, set by `config_from_graph`, replaces the resource formulas
    with what the traced kernel allocates. `a_layout` and `b_layout` say how the
    inputs are stored (model/layouts.py): A [M, K] "mk" or [K, M] "km", B [K, N]
    "kn" or [N, K] "nk".
    """
    tile_m: int
    tile_n: int
    tile_k: int
    stages: int = 2
    release_delay: int = 0
    instruction: str = "wgmma"
    consumers: int = 1
    producers: int = 0
    consumer_split: str = "m"
    cluster: tuple = (1, 1)
    multicast: bool = False
    two_cta: bool = False
    persistent: bool = False
    grid_blocks: int = None
    raster: Raster = None
    epilogue_tile: tuple = None
    epilogue_buffers: int = 1
    acc_buffers: int = 1
    dtype: object = dtypes.float16
    out_dtype: object = None
    max_registers: tuple = None
    graph_resources: GraphResources = None
    a_layout: str = "mk"
    b_layout: str = "kn"
    promotion: Promotion = None

    def __post_init__(self):
        object.__setattr__(self, "dtype", dtypes.as_dtype(self.dtype))
        object.__setattr__(self, "out_dtype", dtypes.as_dtype(self.out_dtype if self.out_dtype is not None
                                                              else self.dtype))
        object.__setattr__(self, "cluster", tuple(self.cluster))
        for name in ("tile_m", "tile_n", "tile_k", "stages", "consumers", "epilogue_buffers", "acc_buffers"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"GemmConfig.{name} must be a positive int, got {value!r}")
        if not isinstance(self.release_delay, int) or not 0 <= self.release_delay < self.stages:
            raise ValueError(f"GemmConfig.release_delay must be an int in [0, stages), got {self.release_delay!r}")
        if self.instruction not in INSTRUCTIONS:
            raise ValueError(f"GemmConfig.instruction must be one of {INSTRUCTIONS}, got {self.instruction!r}")
        if self.consumer_split not in ("m", "n"):
            raise ValueError(f"GemmConfig.consumer_split must be 'm' or 'n', got {self.consumer_split!r}")
        if len(self.cluster) != 2 or not all(isinstance(c, int) and c >= 1 for c in self.cluster):
            raise ValueError(f"GemmConfig.cluster must be (blocks along m, blocks along n), got {self.cluster!r}")
        if self.instruction == "wgmma" and self.acc_buffers not in (1, self.consumers):
            raise ValueError(f"a wgmma config's accumulators are per consumer: acc_buffers must be 1 (consumers "
                             f"split each tile) or consumers={self.consumers} (ping-pong), got {self.acc_buffers}")
        if self.promotion is not None and not isinstance(self.promotion, Promotion):
            raise ValueError("GemmConfig.promotion must be None or a tg.model.Promotion(partials, drain_steps, "
                             f"gmem_scales), got {self.promotion!r}")
        if self.promotion and (self.instruction != "wgmma" or self.pingpong):
            raise ValueError("a promoting config adds each K step's WGMMA partials into a second accumulator: "
                             f"instruction='wgmma' with acc_buffers=1, got {self.instruction!r}, {self.acc_buffers}")
        if self.two_cta and self.cluster[0] % 2:
            raise ValueError(f"a two_cta config pairs blocks along m: cluster[0] must be even, got {self.cluster}")
        check_layouts(self.a_layout, self.b_layout)

    @property
    def mma_tile(self):
        """The (m, n) accumulator of one consumer warpgroup."""
        if self.consumer_split == "m":
            return self.tile_m // self.consumers, self.tile_n
        return self.tile_m, self.tile_n // self.consumers

    @property
    def pingpong(self):
        """Hopper consumers that each own whole tiles and take turns (see acc_buffers)."""
        return self.instruction == "wgmma" and self.acc_buffers > 1

    @property
    def operand_shares(self):
        """How many blocks share each A and each B load (multicast, or the 2-CTA split of B)."""
        cm, cn = self.cluster
        a_share = cn if self.multicast else 1
        b_share = cm if (self.multicast or self.two_cta) else 1
        return a_share, b_share

    def describe(self):
        """One line naming the design: instruction, tile, pipeline, roles, cluster and schedule."""
        parts = [f"{self.instruction} {self.tile_m}x{self.tile_n}x{self.tile_k}", plural(self.stages, "stage")
                 + (f" released {self.release_delay} step late" if self.release_delay else "")]
        roles = (f"{self.consumers}{' ping-pong' if self.pingpong else ''} consumer"
                 + (f" + {self.producers} producer" if self.producers else ""))
        parts.append(roles + (" warpgroups" if self.consumers + self.producers > 1 else " warpgroup"))
        if self.cluster != (1, 1):
            parts.append(f"cluster {self.cluster[0]}x{self.cluster[1]}" + (" multicast" if self.multicast else "")
                         + (" 2-CTA" if self.two_cta else ""))
        parts.append("persistent" if self.persistent else "one block per tile")
        parts.append(str(self.raster) if self.raster else "launch order")
        if self.promotion:
            parts.append("promoted per K step")
        if self.epilogue_tile:
            parts.append(f"epilogue {self.epilogue_tile[0]}x{self.epilogue_tile[1]} x{self.epilogue_buffers}")
        if (self.a_layout, self.b_layout) != (MMA_ORDER["A"], MMA_ORDER["B"]):
            parts.append(f"a {self.a_layout}, b {self.b_layout}")
        return ", ".join(parts)


def plural(count, word):
    """'1 stage', '4 stages'."""
    return f"{count} {word}" + ("" if count == 1 else "s")


def round_up(x, multiple):
    """x rounded up to a multiple of `multiple`."""
    return -(-x // multiple) * multiple


def fma_thread_tile(outputs):
    """(rows, cols) of the outputs one SIMT thread owns: as square as powers of two allow, rows >= cols."""
    rows = 2 ** math.ceil(math.log2(math.sqrt(outputs))) if outputs > 1 else 1
    return rows, max(outputs // rows, 1)


def resources(config):
    """The per-block resources of `config`: the graph's figures when it has them, else the formulas below."""
    c = config
    g = c.graph_resources
    in_size, out_size = dtypes.itemsize(c.dtype), dtypes.itemsize(c.out_dtype)
    b_cols = c.tile_n // 2 if c.two_cta else c.tile_n
    if g is None:
        a_stages, b_stages = (c.stages * c.tile_k * rows * in_size for rows in (c.tile_m, b_cols))
        smem_operand = a_stages + b_stages
        smem_other = c.epilogue_buffers * c.epilogue_tile[0] * c.epilogue_tile[1] * out_size if c.epilogue_tile else 0
        smem_barriers = MBARRIER_BYTES * barrier_count(c)
        laid_out = shared_storage_bytes([b for b in (a_stages, b_stages, smem_other) if b], smem_barriers)
        smem_padding = laid_out - smem_operand - smem_other - smem_barriers
        threads = (c.consumers + c.producers) * WARPGROUP_THREADS
        acc_registers = accumulator_registers(c)
        tmem_columns = c.tile_n * c.acc_buffers if c.instruction == "tcgen05" else 0
        source = "formulas"
    else:
        smem_operand, smem_other, smem_barriers = g.smem_operand, g.smem_other, g.smem_barriers
        smem_padding = g.smem_padding
        threads, acc_registers, tmem_columns = g.threads, g.acc_registers, g.tmem_columns
        source = "graph"
    mma_regs, producer_regs = thread_registers(c, acc_registers)
    return Resources(smem_operand, smem_other, smem_barriers, threads, acc_registers, mma_regs, producer_regs,
                     tmem_columns, source, smem_padding)


def barrier_count(c):
    """mbarriers of a TMA pipeline: one 'full' per stage, one 'empty' per stage when a producer releases
    stages to consumers (always on tcgen05), and two per accumulator buffer on tcgen05 (MMA done, stored)."""
    if c.instruction == "fma":
        return 0
    if c.instruction == "tcgen05":
        return 2 * c.stages + 2 * c.acc_buffers
    return c.stages * (2 if c.producers else 1) + (c.consumers if c.pingpong else 0)  # + one turn per consumer


def accumulator_registers(c):
    """Accumulator registers per CUDA thread of one MMA warpgroup (f32: one register per element)."""
    if c.instruction == "tcgen05":
        return 0
    am, an = (c.tile_m, c.tile_n) if c.pingpong else c.mma_tile
    return -(-am * an // WARPGROUP_THREADS) * (1 + (c.promotion.partials if c.promotion else 0))   # and partials


def thread_registers(c, acc_registers):
    """(MMA-warpgroup registers per thread, producer registers per thread), estimated or from setmaxnreg."""
    producer = (c.max_registers[1] if c.max_registers else PRODUCER_REGISTERS) if c.producers else 0
    if c.max_registers:
        return c.max_registers[0], producer
    if c.instruction == "fma":
        rows, cols = fma_thread_tile(acc_registers)
        return acc_registers + rows + cols + FMA_ADDRESS_REGISTERS, producer
    if c.instruction == "tcgen05":
        chunk_cols = c.epilogue_tile[1] if c.epilogue_tile else c.tile_n
        return TCGEN05_THREAD_BASE + min(c.tile_m, WARPGROUP_THREADS) * chunk_cols // WARPGROUP_THREADS, producer
    return acc_registers + MMA_THREAD_OVERHEAD, producer

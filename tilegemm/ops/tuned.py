"""The designs `tg.tune_matmul` measured fastest, per problem: what tg.matmul runs instead of the model's pick.

A record lives in this process and in the tuning cache beside the compile cache
($TILEGEMM_CACHE_DIR, else ~/.cache/tilegemm: `matmul-tuned.json`), so later
processes on the same GPU run it too. Its key names the GPU, the problem (shape,
dtype, operand layouts, SMs, and what the call adds to the product: `call_key`)
and the code that built and timed it (CuTe DSL's version and a digest of the
lowering and of tilegemm.ops): a new kernel or design space re-tunes rather than
trusting a stale timing.
"""
import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..lower import cache_dir
from ..lower.cache import cutlass_dsl_version, lowering_digest
from ..tune.cache import ResultCache
from . import blockscaling, scaling
from . import epilogue as fused_epilogue


@dataclass(frozen=True)
class Problem:
    """One tg.matmul problem as its design is chosen: a [m, k] @ b [k, n] of `dtype_name`, stored as `a_layout`
    and `b_layout`, on `device` (the model's device: a name, or the sheet of the GPU in use,
    dispatch.live_sheet, which names it) with `num_sms` SMs; `call`: what the call adds to the product
    (`call_key`: "" for nothing, None for a caller's epilogue function, which no record is kept for)."""
    m: int
    n: int
    k: int
    dtype_name: str
    device: object
    num_sms: int
    a_layout: str
    b_layout: str
    call: str = ""

    @property
    def name(self):
        """'777x3000x1400 float16 (mk/kn)', then what the call adds ('... scaled(scale_a [1, 1], ...) -> bfloat16')."""
        text = f"{self.m}x{self.n}x{self.k} {self.dtype_name} ({self.a_layout}/{self.b_layout})"
        return f"{text} {self.call}" if self.call else text

    def key(self):
        return f"{self.device}|{self.num_sms} SMs|{self.name}|{cutlass_dsl_version()}|{code_digest()}"


def call_key(fused=None, block_scales=None):
    """What a call adds to the product, as its Problem names it: the block scales it promotes with (their layouts),
    or promotion alone (promote=True); then the epilogue it fuses where tilegemm wrote it (scale_a=/scale_b='s
    multiply, or out_dtype='s conversion alone) with its tensors' shapes and its output dtype; "" for nothing. None
    for a caller's own epilogue function, which has no name that lasts from one process to the next."""
    parts = []
    if block_scales is blockscaling.UNIT:
        parts.append("promoted")
    elif block_scales is not None:
        parts.append(f"block scales {block_scales.a_layout}/{block_scales.b_layout}")
    if fused is not None:
        if fused.fn is scaling.scaled:
            parts.append("scaled(" + ", ".join(f"{name} {list(shape)}" for name, shape, _ in fused.tensors) + ")")
        elif fused.fn is not fused_epilogue.identity:
            return None
        parts.append(f"-> {fused.out_dtype}")
    return " ".join(parts)


class TunedDesigns(ResultCache):
    """Records {params, seconds, model_pick_seconds} per Problem.key(), in their own file of the cache dir."""

    FILE_NAME = "matmul-tuned.json"


@functools.lru_cache(maxsize=None)
def code_digest():
    """A hash of the lowering and of tilegemm.ops (the kernels, the design space, this module's callers)."""
    h = hashlib.sha256(lowering_digest().encode())
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def _store(directory):
    return TunedDesigns(directory)


def store():
    """The records of the current cache dir (read once per process and directory)."""
    return _store(str(cache_dir()))


def lookup(problem):
    """The build() parameters (a hashable tuple of items) tuning chose for `problem`, or None."""
    if problem.call is None:
        return None
    record = store().get(problem.key())
    return None if record is None else tuple(sorted(record["params"].items()))


def record(problem, params, seconds, pick_seconds):
    """Makes `params` (a dict of build() parameters, measured at `seconds` against the model's pick's
    `pick_seconds`) the design tg.matmul runs for `problem`."""
    if problem.call is None:
        raise ValueError("no record is kept for a call fusing the caller's own epilogue function")
    store().put(problem.key(), {"params": dict(params), "seconds": seconds, "model_pick_seconds": pick_seconds,
                                "shape": [problem.m, problem.n, problem.k]})

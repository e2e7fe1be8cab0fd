"""The issue-12 grids and figures: decode (M tokens against a weight [N, K], x @ w.T), ragged shapes, the
bytes a memory-bound problem must move per second against a device-to-device copy, and the four standing figures.

No torch here: bench_hopper.py measures, this module says what to measure and sums the rows up.
"""
import math

DECODE_M = (1, 16, 64, 128)
DECODE_NK = ((8192, 8192), (14336, 4096), (4096, 14336))
MEMORY_BOUND_M = 64          # decode rows up to this M also report their bandwidth fraction
RAGGED = ((3000, 5000, 2000), (777, 3000, 1400), (5000, 1000, 3000))   # no extent a multiple of 64
ITEMSIZE = {"float16": 2, "bfloat16": 2}
TUNED = "tg.matmul tuned"    # the contender of bench_hopper.py --tuned: the design tg.tune_matmul chose


def decode_shapes(ms=DECODE_M):
    """(M, N, K) of the decode grid (its rows of M in `ms`), weight by weight."""
    return [(m, n, k) for n, k in DECODE_NK for m in ms]


def parse_shapes(text):
    """'3000x5000x2000,777x3000x1400' -> [(3000, 5000, 2000), (777, 3000, 1400)]; ValueError naming a bad one."""
    shapes = []
    for item in text.split(","):
        parts = item.strip().lower().split("x")
        if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise ValueError(f"--shapes takes MxNxK,MxNxK,... with positive extents; got {item.strip()!r}")
        shapes.append(tuple(int(p) for p in parts))
    return shapes


def bytes_moved(m, n, k, dtype):
    """What C[M, N] = A[M, K] @ B[K, N] must move at least: A and B read once, C written once."""
    return (m * k + k * n + m * n) * ITEMSIZE[dtype]


def bandwidth_fraction(m, n, k, dtype, ms, copy_bytes, copy_ms):
    """bytes_moved per second over a copy's bytes (read + written) per second, both measured in one run."""
    return (bytes_moved(m, n, k, dtype) / ms) / (copy_bytes / copy_ms)


def summary(rows, contender="tg.matmul"):
    """The standing figures of a run's rows (each with 'suite' in decode, shapes, suite): the lowest decode ratio
    to cuBLAS, the lowest bandwidth fraction of memory-bound decode rows, the lowest ratio on --shapes, and the
    geometric mean of the issue-5 suite's ratios. A figure whose rows the run has not is left out."""
    ours = [r for r in rows if r["contender"] == contender]

    def of(suite):
        return [r for r in ours if r.get("suite") == suite]
    figures = {}
    if of("decode"):
        figures["decode_ratio_min"] = min(r["vs_cublas"] for r in of("decode"))
        fractions = [r["bw_fraction"] for r in of("decode") if r["m"] <= MEMORY_BOUND_M]
        if fractions:
            figures["decode_bw_fraction_min"] = min(fractions)
    if of("shapes"):
        figures["ragged_ratio_min"] = min(r["vs_cublas"] for r in of("shapes"))
    if of("suite"):
        ratios = [r["vs_cublas"] for r in of("suite")]
        figures["suite_geomean"] = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    return figures

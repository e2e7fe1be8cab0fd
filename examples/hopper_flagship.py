"""Hopper flagship: the kernel behind `tg.matmul`, run through every stage.

The kernel lives in tilegemm/ops/hopper_matmul.py (read it there: ~100 lines).
It is v4 plus the levers cuBLAS uses: a persistent grid (`tg.nd_loop`, one
block per SM), L2-friendly tile order (`tg.planar_snake`), one WGMMA group kept
in flight with stages released one step late, and a double-buffered 64-column
TMA-store epilogue that drains during the next tile's main loop.
"""
from tilegemm.ops.hopper_matmul import CONFIG, build  # noqa: F401  (the example interface)

ARCH = "sm_90a"
SHAPES = {
    "verify": [(8192, 8192, 8192), (4096, 8192, 4096), (8192, 28672, 4096), (2048, 2048, 2048)],
    "interpret": [(256, 512, 128), (200, 312, 136)],
    "benchmark": (8192, 8192, 8192),
}

if __name__ == "__main__":
    from tilegemm.showcase import main
    main(__import__(__name__))

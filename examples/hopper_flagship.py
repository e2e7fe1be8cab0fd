"""Hopper flagship: the kernel behind `tg.matmul`, run through every stage.

The kernel lives in tilegemm/ops/hopper_matmul.py (read it there: ~300 lines with comments).
It is v4 plus the levers cuBLAS uses: a persistent grid (`tg.nd_loop`, one
block per SM), L2-friendly tile order (`tg.planar_snake`), one WGMMA group kept
in flight with stages released one step late, a double-buffered 64-column
TMA-store epilogue, and ping-pong consumers: each warpgroup owns whole tiles
and stores one while the other computes the next. Its default 128x192 tile is
the best at 8192^3 (a fuller last round than 128x256); `tg.matmul` picks the
tile and schedule per shape, and for small M its 64-row, swap-AB and split-K
designs (tilegemm/ops/designs.py).
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

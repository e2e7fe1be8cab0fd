"""Writes the CuTe DSL source tilegemm generates for the Hopper flagship, to read on GitHub without running anything.

    python docs/generated/write.py        # rewrites docs/generated/hopper_flagship_8192_f16_sm90a.py

tests/docs/test_generated.py fails when the committed file no longer matches what the
lowering generates; run this script to refresh it. What to look for: temporaries named after
the user's variables (`step`, `slot`), `* 1` and `+ 0` folded away, unread values dropped, and
the SMEM descriptors of the WGMMA operands (`a_smem_frag`, `b_smem_frag`) and the TMA views
(`a_smem_stages, a_tiles = cpasync.tma_partition(...)`) built once at the top of the kernel,
which the loops index by tile and stage (each K step selects its stage's descriptors once,
`a_descriptors`, and its WGMMAs index those by k-block).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

import tilegemm as tg  # noqa: E402
from tilegemm.ops import hopper_matmul  # noqa: E402

SHAPE = (8192, 8192, 8192)
PATH = os.path.join(HERE, "hopper_flagship_8192_f16_sm90a.py")


def flagship_source():
    """The generated module for the flagship's default configuration at 8192^3 in f16."""
    m, n, k = SHAPE
    kernel = hopper_matmul.build(m, n, k, dtype=tg.float16)
    return kernel.lower(tg.ShapeDtype((m, k), tg.float16), tg.ShapeDtype((k, n), tg.float16), arch="sm_90a").source


if __name__ == "__main__":
    with open(PATH, "w") as f:
        f.write(flagship_source())
    print(f"wrote {os.path.relpath(PATH)}")

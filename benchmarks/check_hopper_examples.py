"""Runs every Hopper example on the GPU at its interpreter shapes (ragged ones included) and its
verification shapes up to 2048^3 elements of work (the float64 numpy reference is the slow part), in f16
and bf16, and prints each relative error against that reference.

Outputs are poisoned with NaN before launch (tilegemm.debug), so an element a kernel fails to write
shows up as a NaN count. Usage: python3 benchmarks/check_hopper_examples.py [--out DIR]
"""
import argparse
import glob
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import tilegemm as tg  # noqa: E402
from tilegemm.showcase import load_example, random_inputs, relative_error  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="also write the table to OUT/examples-on-gpu.md")
    args = p.parse_args()
    tg.set_debug(poison_outputs=True)
    lines = ["| example | shape (m, n, k) | dtype | relative error | unwritten (NaN) |", "|---|---|---|---|---|"]
    worst = 0.0
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "hopper_*.py"))):
        module = load_example(path)
        shapes = list(module.SHAPES["interpret"]) + [s for s in module.SHAPES["verify"] if np.prod(s) <= 2048 ** 3]
        for shape in shapes:
            for dtype in (tg.float16, tg.bfloat16):
                a, b = random_inputs(*shape, dtype, seed=11)
                c = module.build(*shape, dtype=dtype)(a, b)
                nans = int(np.isnan(c.astype(np.float32)).sum())
                err = relative_error(np.nan_to_num(c.astype(np.float32)), a, b)
                worst = max(worst, err if nans == 0 else float("inf"))
                lines.append(f"| {module.__name__} | {shape} | {tg.lang.dtypes.name(dtype)} | {err:.2e} | {nans} |")
                print(lines[-1], flush=True)
    table = "\n".join(lines)
    print("\n" + table + f"\n\nworst relative error: {worst:.2e} (limit 1e-2)")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "examples-on-gpu.md"), "w") as f:
            f.write(table + "\n")
    return 0 if worst < 1e-2 else 1


if __name__ == "__main__":
    sys.exit(main())

"""Runs every Hopper example on the GPU at its interpreter shapes (ragged ones included) and its
verification shapes up to 2048^3 elements of work (the float64 numpy reference is the slow part), in f16
and bf16, and prints each result's comparison with that reference (tilegemm.testing.compare: unwritten
elements, the worst tile, the relative Frobenius error).

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
from tilegemm.showcase import example_layouts, load_example, random_inputs, stored_operands  # noqa: E402
from tilegemm.testing import compare  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="also write the table to OUT/examples-on-gpu.md")
    args = p.parse_args()
    tg.set_debug(poison_outputs=True)
    lines = ["| example | shape (m, n, k) | dtype | relative error | unwritten (NaN) | worst tile error | "
             "tilegemm.testing |", "|---|---|---|---|---|---|---|"]
    worst, failures = 0.0, 0
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "hopper_*.py"))):
        module = load_example(path)
        shapes = list(module.SHAPES["interpret"]) + [s for s in module.SHAPES["verify"] if np.prod(s) <= 2048 ** 3]
        for shape in shapes:
            for dtype in (tg.float16, tg.bfloat16):
                a, b = random_inputs(*shape, dtype, seed=11)
                c = module.build(*shape, dtype=dtype)(*stored_operands(a, b, *example_layouts(module)))
                result = compare(c, a.astype(np.float64) @ b.astype(np.float64), k=shape[2], dtype=dtype)
                failures += not result.ok
                worst = max(worst, result.frobenius if result.unwritten == 0 else float("inf"))
                lines.append(f"| {module.__name__} | {shape} | {tg.lang.dtypes.name(dtype)} | {result.frobenius:.2e} "
                             f"| {result.unwritten} | {result.tile_error:.2e} | {'ok' if result.ok else 'WRONG'} |")
                print(lines[-1], flush=True)
    table = "\n".join(lines)
    print("\n" + table + f"\n\nworst relative error: {worst:.2e}; beyond tilegemm.testing's tolerance: {failures}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "examples-on-gpu.md"), "w") as f:
            f.write(table + "\n")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

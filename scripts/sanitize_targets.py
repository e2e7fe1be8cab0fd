"""What scripts/sanitize.sh runs under compute-sanitizer: tg.matmul and every Hopper example at ragged shapes, in
f16 and bf16, each result checked against float64 with every element written (outputs poisoned).

    python3 scripts/sanitize_targets.py [--shapes 200x264x136 1000x1016x520]
"""
import argparse
import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import tilegemm as tg  # noqa: E402
from tilegemm.showcase import example_layouts, load_example, random_inputs, stored_operands  # noqa: E402
from tilegemm.testing import compare  # noqa: E402

SHAPES = [(200, 264, 136), (1000, 1016, 520)]


def targets():
    """(name, run(a, b, m, n, k, dtype)) for tg.matmul and every Hopper example (given A and B as the example
    stores them)."""
    yield "tg.matmul", lambda a, b, m, n, k, dtype: tg.matmul(a, b)
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "hopper_*.py"))):
        module = load_example(path)
        layouts = example_layouts(module)
        yield module.__name__, lambda a, b, m, n, k, dtype, module=module, layouts=layouts: module.build(
            m, n, k, dtype=dtype)(*stored_operands(a, b, *layouts))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", nargs="*", default=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
    args = p.parse_args()
    tg.set_debug(poison_outputs=True)
    failures = 0
    for name, run in targets():
        for text in args.shapes:
            m, n, k = (int(x) for x in text.split("x"))
            for dtype in (tg.float16, tg.bfloat16):
                a, b = random_inputs(m, n, k, dtype, seed=5)
                c = run(a, b, m, n, k, dtype)
                result = compare(c, a.astype("float64") @ b.astype("float64"), k=k, dtype=dtype)
                failures += not result.ok
                print(f"{name} {text} {tg.lang.dtypes.name(dtype)}: {'ok' if result.ok else 'WRONG'} "
                      f"(unwritten {result.unwritten}, relative error {result.frobenius:.1e})", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

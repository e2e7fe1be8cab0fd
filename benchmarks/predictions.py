"""What the model predicts for tg.matmul's designs on the issue-12 shapes, before any measurement (CPU only).

    python3 benchmarks/predictions.py              # markdown: per shape, the pick and the best of each design family

Decode shapes are x [M, K] @ w.T for a weight w [N, K] (a_layout "mk", b_layout "nk"), as --decode times
them; ragged ones a [M, K] @ b [K, N]. f16 and bf16 budget alike (same bytes, same tensor-core rate).
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import decode_grid  # noqa: E402
from tilegemm.ops import designs  # noqa: E402

def rows(shapes, layouts, device="h200", num_sms=132):
    """One markdown row per shape: the pick (time, bound, bandwidth fraction) and each family's best time."""
    lines = []
    for m, n, k in shapes:
        ranked = designs.predictions(m, n, k, "float16", device, num_sms, *layouts)
        best = {}
        for params, prediction in ranked:
            best.setdefault(designs.family(params), (params, prediction))
        params, pick = ranked[0]
        cells = [f"{(best[f][1].predicted_s * 1e6):.1f}" if f in best else "-" for f in designs.FAMILIES]
        lines.append(f"| {m}x{n}x{k} | {designs.label(params)} | {pick.predicted_s * 1e6:.1f} | "
                     f"{pick.gemm.bound} | {pick.bandwidth_fraction:.0%} | " + " | ".join(cells) + " |")
    return lines


def table(device="h200", num_sms=132):
    header = ("| M x N x K | pick | predicted us | main kernel bound | bytes/s vs copy | "
              + " | ".join(f"best {f} us" for f in designs.FAMILIES) + " |")
    rule = "|" + "---|" * (5 + len(designs.FAMILIES))
    return "\n".join(["Decode, x @ w.T:", "", header, rule, *rows(decode_grid.decode_shapes(), ("mk", "nk"), device,
                                                                   num_sms),
                      "", "Ragged, a @ b:", "", header, rule,
                      *rows(decode_grid.RAGGED, ("mk", "kn"), device, num_sms)])


if __name__ == "__main__":
    print(table())

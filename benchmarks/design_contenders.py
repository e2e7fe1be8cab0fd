"""tg.matmul's candidate designs as contenders of bench_hopper.py --all-designs: which to time, what each is called,
and the model's predicted time beside the measured one. No torch here: bench_hopper.py times what this picks.

Every design designs.predictions lists is too many to compile and time in one run (549 designs, 984 kernels over
the f16 decode grid), so a run times the `per_family` fastest-predicted designs of each family
(designs.FAMILIES) and tg.matmul's pick.
"""
from tilegemm.ops import designs

PICK = "tg.matmul"


def name(params):
    """The contender name of a design: 'design: swap-AB + split-K: 64x16 pingpong, 16 stages, split 2'."""
    return "design: " + designs.label(params)


def contenders(ranked, pick, per_family=1):
    """{contender: dict(params, design, predicted_us)} for `ranked` (designs.predictions' [(params, budget)],
    fastest first): the `per_family` fastest designs of each family, and PICK with the prediction of `pick`, the
    params tg.matmul chose (one of `ranked`). ValueError if two designs would share a name."""
    def entry(params, budget):
        return dict(params=params, design=designs.label(params), predicted_us=budget.predicted_s * 1e6)
    chosen = {PICK: entry(params, budget) for params, budget in ranked if params == pick}
    for params, budget in designs.family_firsts(ranked, per_family):
        if name(params) in chosen:
            raise ValueError(f"two designs are both named {name(params)!r}: {chosen[name(params)]['params']} "
                             f"and {params}")
        chosen[name(params)] = entry(params, budget)
    if PICK not in chosen:
        raise ValueError(f"tg.matmul's pick {pick} is not among the ranked designs")
    return chosen


def annotate(rows, expected):
    """`rows` (bench_hopper.measure's) with, for each contender in `expected` (contenders()), its design, the
    predicted and measured microseconds and measured / predicted."""
    annotated = []
    for row in rows:
        if row["contender"] in expected:
            design = expected[row["contender"]]
            measured_us = row["ms"] * 1e3
            row = dict(row, design=design["design"], predicted_us=design["predicted_us"], measured_us=measured_us,
                       measured_over_predicted=measured_us / design["predicted_us"])
        annotated.append(row)
    return annotated

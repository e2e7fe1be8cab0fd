"""tg.matmul's candidate designs as contenders of bench_hopper.py --all-designs: which to time, what each is called,
and the model's predicted time beside the measured one. No torch here: bench_hopper.py times what this picks.

Every design designs.predictions lists is too many to compile and time in one run (549 designs, 984 kernels over
the f16 decode grid), so a run times the `per_family` fastest-predicted designs of each family
(designs.FAMILIES) and tg.matmul's pick; `--design` names designs of one's own (`parse_design`, `given`), which the
model need not rank (128-row tiles in clusters where it finds no L2 bound, say).
"""
from tilegemm.lang import dtypes
from tilegemm.ops import designs

INT_FIELDS = ("tile_m", "tile_n", "stages", "epi_tile_n", "cluster_m", "cluster_n", "split_k", "stream_k",
              "grid_minor_dim", "grid_tile_width", "l2_promotion")
TEXT_FIELDS = {"schedule": ("cooperative", "pingpong"), "split_reduction": ("second_pass", "last_slice")}
FLAGS = ("swap_ab", "gmem_scales", "pad_scales", "trigger_dependents")

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


def parse_design(text):
    """'tile_m=128,tile_n=256,schedule=cooperative,cluster_m=2' -> build() parameters beyond the problem's, a
    design of its own (it names its tile_n); ValueError naming what is wrong and what is legal."""
    params = parse_fields(text)
    if "tile_n" not in params:
        raise ValueError(f"--design {text!r} names no tile_n")
    return params


def parse_fields(text):
    """'cluster_m=2,stages=4' -> the build() parameters it names (fields replacing a pick's, say); ValueError
    naming what is wrong and what is legal."""
    params = {}
    for item in text.split(","):
        name, _, value = item.strip().partition("=")
        if name in INT_FIELDS and value.isdigit():
            params[name] = int(value)
        elif name in TEXT_FIELDS and value in TEXT_FIELDS[name]:
            params[name] = value
        elif name in FLAGS and value in ("0", "1"):
            params[name] = value == "1"
        else:
            raise ValueError(f"--design takes name=value pairs, comma-separated: {', '.join(INT_FIELDS)} (integers), "
                             + ", ".join(f"{n} ({' or '.join(v)})" for n, v in TEXT_FIELDS.items())
                             + f", {', '.join(FLAGS)} (0 or 1); got {item.strip()!r}")
    return params


def given(design_params, m, n, k, dtype_name, device, num_sms, a_layout, b_layout, pick):
    """contenders() of designs given by hand (parse_design's), each completed with the problem's layouts and SMs
    (in clusters, the grid designs.in_clusters gives them), beside PICK (`pick`, tg.matmul's params), each with the
    model's prediction. ValueError for a design the builder or verifier refuses."""
    dtype = dtypes.as_dtype(dtype_name)

    def entry(params):
        budget = designs.design_prediction(m, n, k, dtype, device, params)
        if budget is None:
            raise ValueError(f"the builder or verifier refuses design {params} for {m}x{n}x{k} {dtype_name}")
        return dict(params=params, design=designs.label(params), predicted_us=budget.predicted_s * 1e6)
    chosen = {PICK: entry(pick)}
    for design in design_params:
        params = designs.on_the_grid(dict(design, num_sms=num_sms, a_layout=a_layout, b_layout=b_layout), device,
                                     num_sms)
        chosen[name(params)] = entry(params)
    return chosen

"""The flagship's small-problem designs: 64-row ping-pong tiles, swap-AB (C^T = B^T A^T, M as a narrow N tile) and
split-K (f32 partials summed in a fixed order by splitk_reduce), against numpy in the interpreter, M = 1 and ragged
shapes included, and compiled for sm_90a."""
import warnings

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.model.layouts import operand_specs
from tilegemm.ops import designs, hopper_matmul, splitk_reduce
from tilegemm.showcase import random_inputs, relative_error, stored_operands


def run(shape, layouts=("mk", "kn"), dtype=tg.float16, num_sms=3, seed=0, **params):
    """(c, a, b): the design run in the interpreter (its split-K reduction included) on random operands."""
    m, n, k = shape
    a, b = random_inputs(m, n, k, dtype, seed=seed)
    kernel = hopper_matmul.build(m, n, k, dtype=dtype, num_sms=num_sms, a_layout=layouts[0], b_layout=layouts[1],
                                 **params)
    split_k = params.get("split_k", 1)
    if params.get("split_reduction") == "last_slice":   # one kernel, its counters zeroed and left at 0
        carried = scratch_of(m, n, params)
        c, _, counters = kernel(*stored_operands(a, b, *layouts), *(np.zeros(x.shape, x.dtype) for x in carried),
                                interpret=True, seed=seed)
        assert not counters.any()
        return c, a, b
    out = kernel(*stored_operands(a, b, *layouts), interpret=True, seed=seed)
    if split_k > 1:
        m_tile = params["tile_n"] if params.get("swap_ab") else params.get("tile_m", 128)
        rows = hopper_matmul.workspace_rows(m, m_tile)
        assert out.shape == (split_k * rows, n) and out.dtype == np.float32
        out = splitk_reduce.build(split_k, m, n, rows, dtype=dtype)(out, interpret=True, seed=seed)
    return out, a, b


def scratch_of(m, n, params):
    """The workspace and counters specs of a last-slice split design (`params`) of an [m, n] C."""
    config = dict(hopper_matmul.CONFIG, **params)
    return hopper_matmul.last_slice_scratch(config["split_k"], designs._tiles(m, n, params), config["tile_m"],
                                            config["tile_n"], config["schedule"])


SWAP = [  # (shape, layouts, tile_m, tile_n, schedule): M from 1 to 64, ragged N and K, every operand layout
    ((1, 200, 136), ("mk", "nk"), 64, 16, "pingpong"),
    ((3, 264, 136), ("mk", "kn"), 128, 16, "cooperative"),
    ((24, 136, 264), ("km", "nk"), 64, 32, "pingpong"),
    ((40, 520, 392), ("km", "kn"), 128, 64, "cooperative"),
    ((64, 200, 136), ("mk", "nk"), 64, 64, "pingpong"),
]


@pytest.mark.parametrize("split_k", [1, 3])
@pytest.mark.parametrize("shape,layouts,tile_m,tile_n,schedule", SWAP,
                         ids=[f"{s[0][0]}x{s[0][1]}x{s[0][2]}-{s[1][0]}-{s[1][1]}" for s in SWAP])
def test_swap_ab_matches_numpy_from_one_row(shape, layouts, tile_m, tile_n, schedule, split_k):
    c, a, b = run(shape, layouts, tile_m=tile_m, tile_n=tile_n, epi_tile_n=tile_n, schedule=schedule,
                  swap_ab=True, split_k=split_k)
    assert c.shape == shape[:2] and relative_error(c, a, b) < 1e-2


@pytest.mark.parametrize("shape,tile_m,tile_n,schedule,split_k", [
    ((70, 200, 264), 64, 128, "pingpong", 2),
    ((248, 296, 392), 64, 192, "pingpong", 1),
    ((130, 136, 264), 128, 128, "cooperative", 3),
    ((1, 136, 456), 64, 256, "pingpong", 4),
])
@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16])
def test_64_row_tiles_and_split_k_match_numpy(shape, tile_m, tile_n, schedule, split_k, dtype):
    c, a, b = run(shape, ("mk", "nk"), dtype, tile_m=tile_m, tile_n=tile_n, schedule=schedule, split_k=split_k,
                  epi_tile_n=32 if split_k > 1 else 64)
    assert relative_error(c, a, b) < 1e-2


def test_split_k_sums_the_slices_in_a_fixed_order():
    # the same inputs give bit-identical results whatever the number of blocks (the order tiles run in)
    outs = [run((40, 136, 456), ("mk", "nk"), num_sms=sms, tile_m=64, tile_n=16, epi_tile_n=16, swap_ab=True,
                split_k=4)[0] for sms in (1, 5)]
    assert np.array_equal(outs[0], outs[1])


LAST_SLICE = [   # (shape, layouts, params): ping-pong, cooperative (a counter per consumer) and swap-AB tiles, ragged
    ((70, 200, 264), ("mk", "nk"), dict(tile_m=64, tile_n=128, schedule="pingpong", split_k=2, epi_tile_n=32)),
    ((130, 136, 264), ("mk", "kn"), dict(tile_m=128, tile_n=128, schedule="cooperative", split_k=3, epi_tile_n=32)),
    ((1, 200, 456), ("mk", "nk"), dict(tile_m=64, tile_n=16, epi_tile_n=16, schedule="pingpong", swap_ab=True,
                                       split_k=4)),
    ((40, 520, 392), ("km", "kn"), dict(tile_m=128, tile_n=64, schedule="cooperative", swap_ab=True, split_k=3)),
]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("shape,layouts,params", LAST_SLICE, ids=["rows64", "coop128", "swap-m1", "swap128-km"])
def test_the_last_slice_of_each_tile_sums_the_partials_to_the_second_passs_bits(shape, layouts, params, seed):
    second, a, b = run(shape, layouts, seed=seed, **params)
    last, _, _ = run(shape, layouts, seed=seed, split_reduction="last_slice", **params)
    assert np.array_equal(last, second) and relative_error(last, a, b) < 1e-2


def test_a_consumer_whose_rows_all_lie_past_m_writes_no_partial_and_sums_none():
    """M = 40 in 128-row cooperative tiles: the second consumer's 64 rows are padding, so its slices leave their
    workspace rows as they were (NaN here) and its counters untouched; C is still the second pass's bits."""
    shape, params = (40, 136, 264), dict(tile_m=128, tile_n=128, schedule="cooperative", split_k=3, epi_tile_n=32)
    second, a, b = run(shape, seed=2, **params)
    workspace, counters = scratch_of(shape[0], shape[1], params)
    kernel = hopper_matmul.build(*shape, num_sms=3, split_reduction="last_slice", **params)
    c, partials, counts = kernel(*stored_operands(a, b, "mk", "kn"), np.full(workspace.shape, np.nan, np.float32),
                                 np.zeros(counters.shape, counters.dtype), interpret=True, seed=2)
    by_rows = partials.reshape(-1, 128, partials.shape[1])   # one 128-row tile of one slice each
    assert np.isfinite(by_rows[:, :64]).all() and np.isnan(by_rows[:, 64:]).all()
    assert not counts.any() and np.array_equal(c, second)


@pytest.mark.parametrize("options,message", [
    (dict(split_reduction="atomic"), r"split_reduction must be one of \('second_pass', 'last_slice'\), got 'atomic'"),
    (dict(split_reduction="last_slice"), "build it with split_k >= 2 and no clusters \\(got split_k=1, clusters of 1\\)"),
    (dict(split_reduction="last_slice", split_k=2, cluster_m=2), "got split_k=2, clusters of 2"),
    (dict(split_reduction="last_slice", split_k=2, cluster_n=2), "got split_k=2, clusters of 2"),
])
def test_a_split_summed_in_the_kernel_needs_a_split_of_single_blocks(options, message):
    with pytest.raises(ValueError, match=message):
        hopper_matmul.build(512, 512, 256, **options)


def test_the_reduction_adds_partials_slice_by_slice():
    rng = np.random.default_rng(0)
    workspace = rng.standard_normal((3 * 64, 136)).astype(np.float32)
    c = splitk_reduce.build(3, 40, 136, 64, dtype=tg.float16)(workspace, interpret=True)
    parts = workspace.reshape(3, 64, 136)[:, :40]
    assert np.allclose(c.astype(np.float32), ((parts[0] + parts[1]) + parts[2]).astype(np.float16), rtol=0, atol=0)


@pytest.mark.parametrize("options,message", [
    (dict(tile_m=64, schedule="cooperative"),
     "tile_m must be one of: 64 with schedule='pingpong' .* got tile_m=64 with schedule='cooperative'"),
    (dict(tile_m=96), r"tile_m must be one of: .*128 with schedule='cooperative' \(64 rows per consumer\).* got tile_m=96"),
    (dict(tile_m=64, tile_n=512), "256 registers per thread"),
    (dict(tile_m=256, schedule="pingpong"), r"256 with schedule='cooperative' \(128 rows per consumer\); got"),
    (dict(tile_m=256, tile_n=256, schedule="cooperative"), "128 x 256 f32 rows of the 256 x 256 tile .* use tile_n <= 192$"),
    (dict(split_k=5, tile_n=128), "split_k=5 cuts K=256 into slices of 1 steps of 64: the last slice would be empty"),
])
def test_bad_small_problem_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        hopper_matmul.build(512, 512, 256, **options)


def test_workspace_slices_hold_whole_tiles_of_the_gemm_and_of_the_reduction():
    assert hopper_matmul.workspace_rows(1, 16) == 64
    assert hopper_matmul.workspace_rows(130, 128) == 256
    assert hopper_matmul.workspace_rows(65, 64) == 128
    assert hopper_matmul.splits_that_fit(200, 64, 8) == [1, 2, 4]   # 4 steps: 3 slices would leave one empty


@pytest.mark.parametrize("shape,layouts,params", [
    ((16, 8192, 8192), ("mk", "nk"), dict(tile_m=64, tile_n=16, epi_tile_n=16, swap_ab=True, split_k=2, stages=8)),
    ((1, 4096, 1024), ("mk", "kn"), dict(tile_m=128, tile_n=16, epi_tile_n=16, swap_ab=True,
                                         schedule="cooperative")),
    ((200, 4096, 1024), ("mk", "kn"), dict(tile_m=64, tile_n=192, split_k=2, epi_tile_n=32)),
    ((128, 14336, 4096), ("mk", "nk"), dict(tile_m=64, tile_n=224, epi_tile_n=32, stages=5)),
    ((128, 4096, 14336), ("mk", "nk"), dict(tile_m=64, tile_n=128, split_k=2, stages=8, split_reduction="last_slice")),
], ids=["swap-split", "swap", "64-row-split", "64-row-224", "64-row-split-last-slice"])
def test_the_designs_compile_for_sm90a_and_their_ptx_agrees_with_the_graph(shape, layouts, params):
    kernel = hopper_matmul.build(*shape, a_layout=layouts[0], b_layout=layouts[1], **params)
    specs = operand_specs(*shape, tg.float16, *layouts)
    if params.get("split_reduction") == "last_slice":
        specs = [*specs, *scratch_of(shape[0], shape[1], params)]
    lowered = kernel.lower(*specs, arch="sm_90a")
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # a tg.CompiledCodeWarning (PTX facts disagreeing) fails the test
        lowered.compile()


def test_the_reduction_compiles_for_sm90a():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        splitk_reduce.build(3, 16, 4096, 64).lower(tg.ShapeDtype((192, 4096), tg.float32), arch="sm_90a").compile()

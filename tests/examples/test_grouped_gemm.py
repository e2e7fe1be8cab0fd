"""examples/grouped_gemm_moe.py: a mixture-of-experts grouped GEMM whose tiles read their expert at run time,
against numpy in the interpreter, lowered (3-D TMA boxes of the stacked weights) and on the GPU (its budget:
tests/model/test_budget_kernels.py)."""
import os

import numpy as np
import pytest

from tilegemm.showcase import gpu_present, load_example

EXAMPLE = load_example(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "grouped_gemm_moe.py"))


def error(tokens, n, k, experts, w_layout, interpret, tile_expert=None):
    x, w, routed, row = EXAMPLE.example_inputs(tokens, n, k, experts, w_layout=w_layout)
    tile_expert = routed if tile_expert is None else tile_expert
    out = EXAMPLE.build(x.shape[0], n, k, experts, w_layout=w_layout)(x, w, tile_expert, interpret=interpret)
    return EXAMPLE.relative_error(out, EXAMPLE.reference(x, w, tile_expert, w_layout=w_layout), row), out


@pytest.mark.parametrize("w_layout", ["nk", "kn"])
def test_every_token_is_multiplied_by_its_experts_weight_in_the_interpreter(w_layout):
    assert error(300, 256, 136, 4, w_layout, interpret=True)[0] < 1e-2


def test_the_contiguous_layout_gives_each_expert_whole_tiles_and_skips_the_rest():
    token_expert = np.array([2, 0, 2, 2, 1, 0])
    row, tile_expert = EXAMPLE.group_by_expert(token_expert, 4, tile_m=2)
    assert tile_expert.tolist() == [0, 1, 2, 2] + [EXAMPLE.SKIPPED] * (EXAMPLE.max_tiles(6, 4, 2) - 4)
    assert row.tolist() == [4, 0, 5, 6, 2, 1]      # expert 0 at rows 0-1, 1 at 2, 2 at 4-6 (tiles start at even rows)


def test_a_skipped_tile_is_not_written_and_an_expert_past_the_last_gives_zeros():
    x, w, tile_expert, _ = EXAMPLE.example_inputs(100, 128, 64, 2)
    tile_expert = tile_expert.copy()
    tile_expert[0] = 5                              # no such expert: TMA reads zeros
    out = EXAMPLE.build(x.shape[0], 128, 64, 2)(x, w, tile_expert, interpret=True)
    assert np.all(out[:64] == 0)
    skipped = np.flatnonzero(tile_expert == EXAMPLE.SKIPPED)
    assert len(skipped) and all(np.isnan(out[t * 64:(t + 1) * 64].astype(np.float32)).all() for t in skipped)


def test_it_lowers_to_three_dimensional_tma_copies_of_the_stacked_weights():
    x, w, tile_expert, _ = EXAMPLE.example_inputs(300, 256, 136, 4)
    lowered = EXAMPLE.build(x.shape[0], 256, 136, 4).lower(x, w, tile_expert, arch="sm_90a")
    ptx = lowered.compile().ptx
    assert "cp.async.bulk.tensor.3d" in ptx and "wgmma.mma_async" in ptx


def test_the_script_budgets_and_interprets_a_small_case(capsys):
    EXAMPLE.main()
    printed = capsys.readouterr().out
    assert "NOT MODELLED  B stacks 4 weights" in printed
    error = float(printed.split("interpreted: relative error ")[1].split()[0])
    assert error < 1e-2


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_present(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("w_layout", ["nk", "kn"])
@pytest.mark.parametrize("shape", [(16384, 2048, 1024, 8), (3000, 1024, 520, 5)])
def test_every_token_is_multiplied_by_its_experts_weight_on_the_gpu(shape, w_layout):
    assert error(*shape, w_layout, interpret=False)[0] < 1e-2

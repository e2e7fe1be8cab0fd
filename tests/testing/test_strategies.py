"""The hypothesis strategies: shapes a kernel accepts, at and between tile edges, and shrinking to the smallest
shape a broken kernel fails at."""
import functools
import subprocess
import sys

import pytest
from hypothesis import Phase, find, given, settings

import tilegemm as tg
import tilegemm.testing as tt
from tilegemm.lang.tensorcore import WGMMA

from .fresh_process import checkout_env
from .kernels import FLOOR, matmul, reference

TILE = (64, 128, 64)


@settings(max_examples=200, deadline=None)
@given(shape=tt.shapes(tile=TILE, max_tiles=2))
def test_f16_shapes_have_n_and_k_in_whole_16_bytes_and_stay_within_the_tiles_asked(shape):
    m, n, k = shape
    assert 1 <= m <= 2 * 64 + 1 and 8 <= n <= 2 * 128 + 8 and 8 <= k <= 2 * 64 + 8
    assert n % 8 == 0 and k % 8 == 0


@settings(max_examples=100, deadline=None)
@given(shape=tt.shapes(tile=(64, 64, 64), dtype=tg.float32, multiple=None, max_tiles=(1, 2, 3)))
def test_f32_shapes_are_in_units_of_4_and_max_tiles_is_per_dimension(shape):
    m, n, k = shape
    assert n % 4 == 0 and k % 4 == 0 and m <= 65 and n <= 132 and k <= 196


@settings(max_examples=100, deadline=None)
@given(shape=tt.shapes(tile=(128, 64, 64), multiple=(64, 16, 8)))
def test_a_kernel_that_needs_whole_blocks_of_rows_gets_them(shape):
    assert shape[0] % 64 == 0 and shape[1] % 16 == 0 and shape[2] % 8 == 0


def test_every_tile_edge_a_unit_either_side_and_the_smallest_extent_are_drawn():
    drawn = set()

    @settings(max_examples=300, database=None, derandomize=True)
    @given(shape=tt.shapes(tile=(64, 64, 64)))
    def draw(shape):
        drawn.add(shape[2])
    draw()
    assert {8, 56, 64, 72, 120, 128, 136, 184, 192, 200} <= drawn


def test_a_tile_that_is_not_a_multiple_of_its_unit_is_refused():
    with pytest.raises(ValueError, match="the N tile 100 is not a multiple of its unit 8"):
        tt.shapes(tile=(64, 100, 64))


def test_dtypes_draws_the_tensor_core_input_dtypes_or_those_asked():
    assert {find(tt.dtypes(), lambda d: d == want) for want in (tg.float16, tg.bfloat16)} == {tg.float16,
                                                                                             tg.bfloat16}
    assert find(tt.dtypes(["f32"]), lambda d: True) == tg.float32


def shrunk_failure(builder):
    """The CheckFailure hypothesis ends with after shrinking a failing shape of `builder` (f16, interpreter)."""
    @settings(max_examples=100, deadline=None, database=None, derandomize=True,
              phases=[Phase.generate, Phase.shrink])   # no explain phase: it traces every line it reruns
    @given(shape=tt.shapes(tile=(64, 64, 64)))
    def run(shape):
        tt.check(builder, reference, shapes=[shape], dtypes=["f16"], modes=["interpret"], seeds=[None])
    with pytest.raises(tt.CheckFailure) as info:
        run()
    return info.value


def test_an_off_by_one_k_loop_shrinks_to_the_smallest_shape():
    assert shrunk_failure(functools.partial(matmul, k_steps=FLOOR)).case.shape == (1, 8, 8)


def test_an_f16_accumulator_shrinks_to_a_small_shape_of_more_than_one_instruction_k():
    """WGMMA rounds an f16 accumulator after every instruction (K = 16 for f16): K past one fails."""
    m, n, k = shrunk_failure(functools.partial(matmul, acc_dtype=tg.float16)).case.shape
    assert WGMMA.k(tg.float16) < k <= 64 and m <= 64 and n <= 64


def test_tilegemm_testing_imports_hypothesis_only_for_its_strategies():
    script = ("import sys, tilegemm.testing as tt; assert 'hypothesis' not in sys.modules; tt.shapes; "
              "assert 'hypothesis' in sys.modules")
    subprocess.run([sys.executable, "-c", script], check=True, env=checkout_env())


def test_layouts_draw_every_way_a_and_b_can_be_stored():
    from hypothesis import given, settings
    seen = set()

    @settings(max_examples=60, database=None)
    @given(layouts=tt.layouts())
    def draw(layouts):
        seen.add(layouts)
    draw()
    assert seen == {("mk", "kn"), ("mk", "nk"), ("km", "kn"), ("km", "nk")}

"""Control flow and scalars: fori_loop carries, when, nd_loop persistence, planar_snake, C integer semantics."""
import numpy as np

import tilegemm as tg


def scalar_cell(value):
    """A (1, 1) int32 register array holding the traced scalar `value`."""
    return tg.zeros((1, 1), tg.int32) + value


def test_fori_loop_carries_scalars_and_arrays_and_when_skips_regions():
    @tg.kernel(out_shape=tg.ShapeDtype((2, 8), tg.float32))
    def loop(y):
        def body(i, carry):
            count, total = carry
            total = total + 1.0

            @tg.when(i == 3)
            def _():
                y[1:2, :] = total
            return count + 2, total
        count, total = tg.fori_loop(0, 5, body, (0, tg.zeros((1, 8), tg.float32)))
        y[0:1, :] = total * 10.0 + (tg.zeros((1, 8), tg.int32) + count).astype(tg.float32)

    y = loop(interpret=True)
    np.testing.assert_array_equal(y, [[60.0] * 8, [4.0] * 8])


def test_integer_division_and_remainder_truncate_toward_zero():
    @tg.kernel(out_shape=tg.ShapeDtype((1, 6), tg.int32))
    def arithmetic(y):
        seven = tg.axis_index("x") + 7  # a traced 7
        results = [(-seven) // 2, (-seven) % 2, seven // -2, seven % -2, tg.minimum(seven, 3), seven * 2 ** 29]
        for i, r in enumerate(results):
            y[0:1, i:i + 1] = scalar_cell(r)

    assert arithmetic(interpret=True).tolist() == [[-3, -1, -3, 1, 3, -536870912]]  # 7 * 2**29 wraps


def test_nd_loop_deals_tiles_round_robin_over_blocks():
    @tg.kernel(out_shape=tg.ShapeDtype((7, 2), tg.int32), grid=(3,), grid_names=("sm",))
    def persistent(y):
        @tg.nd_loop((7,), collective_axes="sm")
        def _(info):
            (tile,) = info.index
            y[tg.ds(tile, 1), 0:1] = scalar_cell(tg.axis_index("sm"))
            y[tg.ds(tile, 1), 1:2] = scalar_cell(info.local_index)

    assert persistent(interpret=True).tolist() == [[t % 3, t // 3] for t in range(7)]


def snake_order(shape, minor_dim, tile_width):
    """The (m, n) tiles planar_snake gives for linear indices 0, 1, ..., as an interpreted kernel computes them."""
    count = shape[0] * shape[1]

    @tg.kernel(out_shape=tg.ShapeDtype((count, 2), tg.int32), grid=(count,), grid_names=("lin",))
    def snake(y):
        lin = tg.axis_index("lin")
        mi, ni = tg.planar_snake(lin, shape, minor_dim, tile_width)
        y[tg.ds(lin, 1), 0:1] = scalar_cell(mi)
        y[tg.ds(lin, 1), 1:2] = scalar_cell(ni)

    return [tuple(p) for p in snake(interpret=True).tolist()]


def test_planar_snake_walks_bands_of_the_minor_dimension_back_and_forth():
    assert snake_order((3, 4), minor_dim=1, tile_width=2) == [
        (0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1),   # band n in [0, 2), m forward
        (2, 2), (2, 3), (1, 2), (1, 3), (0, 2), (0, 3)]   # band n in [2, 4), m backward


def test_planar_snake_gives_a_narrower_last_band_the_remainder():
    assert snake_order((2, 3), minor_dim=1, tile_width=2) == [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2), (0, 2)]
    assert snake_order((3, 2), minor_dim=0, tile_width=2) == [(0, 0), (1, 0), (0, 1), (1, 1), (2, 1), (2, 0)]

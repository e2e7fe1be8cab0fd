"""Memory semantics: TMA and plain accesses at array edges, uninitialised SMEM, ACC, kernel inputs and outputs."""
import numpy as np

import tilegemm as tg
from tilegemm.interpret import run_graph
from tilegemm.lang.trace import LaunchConfig, trace_kernel


def tma_round_trip(shape, tile, offset):
    """Copies the `tile` of a `shape` array starting at `offset` through SMEM with TMA, and back to the same place."""
    @tg.kernel(out_shape=tg.ShapeDtype(shape, tg.float32),
               scratch_shapes=[tg.SMEM(tile, tg.float32), tg.Barrier(num_arrivals=1), tg.SMEM(tile, tg.float32)])
    def round_trip(x, y, smem, bar, seen):
        window = tuple(tg.ds(o, t) for o, t in zip(offset, tile))
        tg.copy_gmem_to_smem(x.at[window], smem, bar)
        tg.barrier_wait(bar)
        seen[...] = smem[...]
        tg.commit_smem()
        tg.copy_smem_to_gmem(seen, y.at[window])
        tg.wait_smem_to_gmem(0)
    return round_trip


def test_tma_load_fills_out_of_bounds_elements_with_zeros_and_tma_store_clips():
    x = np.arange(20 * 24, dtype=np.float32).reshape(20, 24) + 1
    y = tma_round_trip((20, 24), (16, 16), (8, 16))(x, interpret=True)
    np.testing.assert_array_equal(y[8:, 16:], x[8:, 16:])  # the part inside the array went through
    assert np.isnan(y[:8]).all() and np.isnan(y[8:, :16]).all()  # nothing written outside the tile


def test_tma_window_entirely_outside_the_array_moves_nothing():
    x = np.ones((16, 16), np.float32)
    y = tma_round_trip((16, 16), (16, 16), (16, 0))(x, interpret=True)
    assert np.isnan(y).all()


def test_plain_loads_read_zeros_and_plain_stores_drop_past_the_edge():
    @tg.kernel(out_shape=tg.ShapeDtype((10, 8), tg.float32), grid=(2,), grid_names=("i",))
    def copy(x, y):
        rows = tg.ds(tg.axis_index("i") * 8, 8)
        y[rows, :] = x[rows, :] + 1.0

    x = np.arange(80, dtype=np.float32).reshape(10, 8)
    np.testing.assert_array_equal(copy(x, interpret=True), x + 1)


def test_shared_memory_starts_as_nan_so_reading_unwritten_memory_shows():
    @tg.kernel(out_shape=tg.ShapeDtype((8, 8), tg.float32), scratch_shapes=[tg.SMEM((8, 8), tg.float32)])
    def leak(y, smem):
        y[...] = smem[...]

    assert np.isnan(leak(interpret=True)).all()


def test_an_accumulator_starts_at_zero_each_time_it_is_allocated():
    @tg.kernel(out_shape=tg.ShapeDtype((2, 64, 8), tg.float32))
    def twice(y):
        def iteration(i, _):
            def scoped(acc):
                acc[...] = acc[...] + 1.0
                y[i] = acc[...]
            tg.run_scoped(scoped, tg.ACC((64, 8)))
        tg.fori_loop(0, 2, iteration, None)

    np.testing.assert_array_equal(twice(interpret=True), np.ones((2, 64, 8), np.float32))


def test_outputs_come_back_as_numpy_arrays_and_inputs_are_not_modified():
    @tg.kernel(out_shape=(tg.ShapeDtype((4, 8), tg.float32), tg.ShapeDtype((4, 8), tg.bfloat16)))
    def split(x, y_f32, y_bf16):
        v = x[...]
        x[...] = v * 0.0
        y_f32[...] = v
        y_bf16[...] = v.astype(tg.bfloat16)

    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
    before = x.copy()
    f32, bf16 = split(x, interpret=True)
    assert isinstance(f32, np.ndarray) and bf16.dtype == tg.bfloat16
    np.testing.assert_array_equal(f32, x)
    np.testing.assert_array_equal(bf16, x.astype(tg.bfloat16))
    np.testing.assert_array_equal(x, before)


def test_transposed_views_read_and_write_the_buffer_transposed():
    """The interpreter's memory model, below what kernels may do: only MMAs read transposed views of verified
    kernels, so this one runs unverified (run_graph on its trace)."""
    def through(x, y, read, after, smem):
        smem[...] = x[...]
        by_stage = tg.transpose_ref(smem, (0, 2, 1))    # (2, 8, 4): each stage transposed
        read[...] = by_stage[1]
        by_stage.at[0][...] = y[...]
        after[...] = smem[...]

    x = np.arange(64, dtype=np.float32).reshape(2, 4, 8)
    y = -np.arange(32, dtype=np.float32).reshape(8, 4)
    graph = trace_kernel(through, name="through", config=LaunchConfig.make(),
                         in_specs=[tg.ShapeDtype(x.shape, x.dtype), tg.ShapeDtype(y.shape, y.dtype)],
                         out_specs=[tg.ShapeDtype((8, 4), tg.float32), tg.ShapeDtype((2, 4, 8), tg.float32)],
                         scratch_shapes=[tg.SMEM((2, 4, 8), tg.float32)])
    read, after = run_graph(graph, [x, y])
    np.testing.assert_array_equal(read, x[1].T)
    np.testing.assert_array_equal(after, np.stack([y.T, x[1]]))


def tma_load_to_output(shape, tile, offset):
    """TMA-loads the `tile` of a `shape` array at `offset` into SMEM and writes the whole SMEM tile out as is."""
    @tg.kernel(out_shape=tg.ShapeDtype(tile, tg.float32),
               scratch_shapes=[tg.SMEM(tile, tg.float32), tg.Barrier(num_arrivals=1)])
    def load(x, y, smem, bar):
        tg.copy_gmem_to_smem(x.at[tuple(tg.ds(o, t) for o, t in zip(offset, tile))], smem, bar)
        tg.barrier_wait(bar)
        y[...] = smem[...]
    return load


def test_a_tma_load_past_the_edge_writes_zeros_to_the_smem_elements_outside_the_array():
    x = np.arange(20 * 24, dtype=np.float32).reshape(20, 24) + 1
    seen = tma_load_to_output((20, 24), (16, 16), (8, 16))(x, interpret=True)
    np.testing.assert_array_equal(seen[:12, :8], x[8:, 16:])        # rows 8..19, columns 16..23 exist
    np.testing.assert_array_equal(seen[12:, :], 0)                  # rows 20..23: past the last row
    np.testing.assert_array_equal(seen[:, 8:], 0)                   # columns 24..31: past the last column


def test_a_tma_load_entirely_outside_the_array_fills_the_tile_with_zeros():
    seen = tma_load_to_output((16, 16), (8, 8), (16, 16))(np.ones((16, 16), np.float32), interpret=True)
    np.testing.assert_array_equal(seen, np.zeros((8, 8), np.float32))


def test_a_row_of_a_window_past_the_edge_reads_what_exists_and_zeros_beyond():
    @tg.kernel(out_shape=tg.ShapeDtype((8,), tg.float32))
    def row(x, y):
        y[...] = x[0, tg.ds(8, 8)]         # row 0, columns 8..11 exist, 12..15 do not

    x = np.arange(2 * 12, dtype=np.float32).reshape(2, 12) + 1
    np.testing.assert_array_equal(row(x, interpret=True), np.concatenate([x[0, 8:], np.zeros(4, np.float32)]))

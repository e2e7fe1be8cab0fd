"""Verifier: TMA box limits, 16-byte alignment of rows and of contiguous-dimension starts, and 128-byte aligned
shared-memory sides."""
import tilegemm as tg

from .helpers import F16, F32, raises_at, spec, trace


def load(view, box):
    """A kernel body TMA-loading `view(a_gmem)` into an SMEM buffer of shape `box`."""
    def body(a, out, dst, bar):
        tg.copy_gmem_to_smem(view(a), dst, bar.at[0])  # @load
        tg.barrier_wait(bar.at[0])
    return body, [tg.SMEM(box, F16), tg.Barrier()]


def test_a_tile_load_verifies():
    body, scratch = load(lambda a: a.at[0:128, 64:128], (128, 64))
    trace(body, spec(256, 256), scratch=scratch)


def test_box_dimensions_are_at_most_256():
    body, scratch = load(lambda a: a.at[0:512, 0:64], (512, 64))
    with raises_at("load", "at most 256 elements per dimension", "has 512 in dimension 0"):
        trace(body, spec(512, 64), scratch=scratch)


def test_box_rows_are_whole_16_byte_units():
    body, scratch = load(lambda a: a.at[0:64, 0:4], (64, 4))
    with raises_at("load", "contiguous dimension must be a multiple of 16 bytes", "4 f16 = 8 bytes",
                   "use a multiple of 8 elements"):
        trace(body, spec(64, 64), scratch=scratch)


def test_gmem_rows_must_be_16_byte_aligned():
    body, scratch = load(lambda a: a.at[0:64, 0:64], (64, 64))
    with raises_at("load", "TMA needs 16-byte aligned rows: kernel input 0 (gmem<128x100xf16>) has rows of 100 f16 = "
                   "200 bytes; pad its last dimension to a multiple of 8 (e.g. 104)"):
        trace(body, spec(128, 100), scratch=scratch)


def test_stores_are_checked_like_loads():
    def body(x, out, src):
        tg.copy_smem_to_gmem(src, out.at[:, 0:32])  # @store

    with raises_at("store", "kernel output 0 (gmem<64x34xf32>) has rows of 34 f32 = 136 bytes",
                   "multiple of 4 (e.g. 36)"):
        trace(body, spec(8, 8), out=spec(64, 34, dtype=F32), scratch=[tg.SMEM((64, 32), F32)])


def test_a_static_start_must_be_16_byte_aligned():
    body, scratch = load(lambda a: a.at[:, tg.ds(3, 64)], (64, 64))
    with raises_at("load", "starts its contiguous dimension at element 3 (6 bytes)",
                   "make the start a multiple of 8 elements"):
        trace(body, spec(64, 128), scratch=scratch)


def test_a_dynamic_start_must_be_provably_16_byte_aligned():
    def body(a, out, dst, bar):
        def step(k, carry):
            tile = a.at[:, tg.ds(k * 4, 64)]  # @view
            tg.copy_gmem_to_smem(tile, dst, bar.at[0])  # @copy
            tg.barrier_wait(bar.at[0])
        tg.fori_loop(0, 4, step, None)

    with raises_at("copy", "an offset only known to be a multiple of 4 f16 (8 bytes)", "16-byte boundaries") as err:
        trace(body, spec(64, 512), scratch=[tg.SMEM((64, 64), F16), tg.Barrier()])
    err.names("view", "the view is taken at")


def test_provably_aligned_dynamic_starts_verify():
    def body(a, out, dst, bar):
        col = tg.axis_index("n") * 128

        def step(k, carry):
            tg.copy_gmem_to_smem(a.at[:, tg.ds(col + k * 64 + 8, 64)], dst, bar.at[0])
            tg.copy_gmem_to_smem(a.at[:, tg.ds((k % 2) * 32, 64)], dst, bar.at[0])
            tg.barrier_wait(bar.at[0])
        tg.fori_loop(0, 2, step, None)

    trace(body, spec(64, 512), scratch=[tg.SMEM((64, 64), F16), tg.Barrier(num_arrivals=2)], grid=(2,),
          grid_names=("n",))


def test_tma_arrays_have_at_most_5_dimensions():
    body, scratch = load(lambda a: a.at[0, 0, 0, 0], (8, 64))
    with raises_at("load", "at most 5 dimensions", "has 6"):
        trace(body, spec(1, 1, 1, 1, 8, 64), scratch=scratch)


def test_tma_boxes_keep_the_contiguous_dimension():
    body, scratch = load(lambda a: a.at[:, 5], (128,))
    with raises_at("load", "indexes away the contiguous (last) dimension", "slice it with tg.ds"):
        trace(body, spec(128, 64), scratch=scratch)


def test_gmem_strides_are_below_2_40_bytes():
    def body(a, out, dst, bar):
        tg.copy_gmem_to_smem(a.at[0:1, 0:64, 0:64], dst, bar.at[0])  # @deep_load
        tg.barrier_wait(bar.at[0])

    scratch = [tg.SMEM((1, 64, 64), F16), tg.Barrier()]
    trace(body, spec(2, 2 ** 18, 2 ** 20), scratch=scratch)
    with raises_at("deep_load", "kernel input 0 (gmem<2x1048576x1048576xf16>) steps 2199023255552 bytes along "
                   "dimension 0", "strides are below 1099511627776 bytes (2^40)"):
        trace(body, spec(2, 2 ** 20, 2 ** 20), scratch=scratch)


def ring_load(slot_shape):
    """A kernel body TMA-loading f32 boxes of `slot_shape` into the slots of a 4-deep SMEM ring, one per step."""
    def body(a, out, ring, bar):
        def step(i, carry):
            src = a.at[i, 0:4] if len(slot_shape) == 1 else a.at[0:8, 0:4]
            tg.copy_gmem_to_smem(src, ring.at[i], bar.at[0])  # @slot
            tg.barrier_wait(bar.at[0])
        tg.fori_loop(0, 4, step, None)
    return body, [tg.SMEM((4, *slot_shape), F32), tg.Barrier()]


def test_the_smem_side_starts_on_a_128_byte_boundary():
    # slots of 16 bytes: slot 1 starts 16 bytes in, which faulted on the H200 ("misaligned address")
    body, scratch = ring_load((4,))
    with raises_at("slot", "starts at a byte offset only known to be a multiple of 16 within its buffer",
                   "16 bytes per leading index", "must start on a 128-byte boundary"):
        trace(body, spec(8, 8, dtype=F32), scratch=scratch)


def test_ring_slots_of_whole_128_byte_units_verify():
    body, scratch = ring_load((8, 4))   # 8 rows of 4 f32: 128 bytes a slot
    trace(body, spec(8, 8, dtype=F32), scratch=scratch)

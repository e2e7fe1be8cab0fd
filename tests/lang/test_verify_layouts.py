"""Verifier: transposed SMEM views (tg.transpose_ref) as MMA operands, never as TMA tiles, 16-bit, on swizzle atoms."""
import tilegemm as tg

from .helpers import F16, F32, raises_at, spec, swizzled, trace


def weight_kernel(b_view=lambda w_smem: w_smem.T):
    """x [128, 64] @ w.T for a weight w stored [128, 64] (N, K): TMA copies w as stored, wgmma reads `b_view`."""
    def body(x, w, out, acc, x_smem, w_smem, bar):
        tg.copy_gmem_to_smem(x, x_smem, bar.at[0])
        tg.copy_gmem_to_smem(w, w_smem, bar.at[0])
        tg.barrier_wait(bar.at[0])
        tg.wgmma(acc, x_smem, b_view(w_smem))  # @mma
        tg.wgmma_wait(0)
    scratch = [tg.ACC((128, 128)), tg.SMEM((128, 64), F16, transforms=swizzled(128)),
               tg.SMEM((128, 64), F16, transforms=swizzled(128)), tg.Barrier(num_arrivals=2)]
    return body, scratch


def test_a_weight_stored_n_by_k_is_read_k_major_through_a_transpose():
    body, scratch = weight_kernel()
    graph = trace(body, spec(128, 64), spec(128, 64), scratch=scratch)
    (mma,) = [op for op in graph.walk() if op.kind == "wgmma"]
    assert mma.operands[2].shape == (64, 128) and mma.operands[2].type.contiguous_dim == 0


def test_an_a_stored_k_by_m_is_read_m_major_in_64_row_slices():
    def body(at, b, out, acc0, acc1, a_smem, b_smem, bar):
        tg.copy_gmem_to_smem(at, a_smem, bar.at[0])               # A.T [64, 128]: K rows of M
        tg.copy_gmem_to_smem(b, b_smem, bar.at[0])
        tg.barrier_wait(bar.at[0])
        for i, acc in enumerate((acc0, acc1)):
            tg.wgmma(acc, a_smem.T.at[tg.ds(i * 64, 64)], b_smem)  # 64 stored columns: a whole swizzle atom
        tg.wgmma_wait(0)

    scratch = [tg.ACC((64, 128)), tg.ACC((64, 128)), tg.SMEM((64, 128), F16, transforms=swizzled(128)),
               tg.SMEM((64, 128), F16, transforms=swizzled(128)), tg.Barrier(num_arrivals=2)]
    trace(body, spec(64, 128), spec(64, 128), scratch=scratch)


def test_tma_copies_never_write_or_read_a_transposed_view():
    def loads_into_transpose(w, out, w_smem, bar):
        w_t = w_smem.T  # @t_load
        tg.copy_gmem_to_smem(w.at[0:64, 0:128], w_t, bar.at[0])  # @load
        tg.barrier_wait(bar.at[0])

    with raises_at("load", "copy_gmem_to_smem: the SMEM destination", "is a transposed view",
                   "copy the untransposed buffer (shape (128, 64)", "pass tg.transpose_ref(buffer, permutation) "
                   "to the MMA") as err:
        trace(loads_into_transpose, spec(64, 128), scratch=[tg.SMEM((128, 64), F16), tg.Barrier()])
    err.names("t_load", "transposed at")

    def stores_from_transpose(x, out, c_smem):
        tg.copy_smem_to_gmem(c_smem.T, out.at[0:64, 0:128])  # @store

    with raises_at("store", "copy_smem_to_gmem: the SMEM source", "transposed view"):
        trace(stores_from_transpose, spec(8, 8), scratch=[tg.SMEM((128, 64), F16)])


def test_the_tensor_cores_read_transposed_operands_only_as_16_bit_types():
    def body(x, out, acc, a_smem, w_smem):
        tg.wgmma(acc, a_smem, w_smem.T)  # @f32
        tg.wgmma_wait(0)

    scratch = [tg.ACC((64, 64)), tg.SMEM((64, 32), F32, transforms=swizzled(128, F32)),
               tg.SMEM((64, 32), F32, transforms=swizzled(128, F32))]
    with raises_at("f32", "wgmma reads operand B through a transposed view", "of f32 data",
                   "the only types the tensor cores read both K-major and MN-major", "store the tile as f16 or bf16"):
        trace(body, spec(8, 8), scratch=scratch)


def test_an_m_major_slice_must_start_on_a_swizzle_atom():
    def body(x, out, acc, a_smem, b_smem):
        tg.wgmma(acc, a_smem.T.at[32:96], b_smem)  # @inside
        tg.wgmma_wait(0)

    scratch = [tg.ACC((64, 128)), tg.SMEM((64, 128), F16, transforms=swizzled(128)),  # @a_buf
               tg.SMEM((64, 128), F16, transforms=swizzled(128))]
    with raises_at("inside", "reads operand A", "M-major, in swizzle atoms of 64 f16 along M",
                   "starts at element 32 along M of the buffer", "start it at a multiple of 64") as err:
        trace(body, spec(8, 8), scratch=scratch)
    err.names("a_buf", "the buffer is declared at")


def test_a_traced_slice_start_must_be_provably_on_an_atom():
    def body(x, out, acc, a_smem, b_smem):
        half = tg.axis_index("x") * 32
        tg.wgmma(acc, a_smem.T.at[tg.ds(half, 64)], b_smem)  # @traced
        tg.wgmma_wait(0)

    scratch = [tg.ACC((64, 128)), tg.SMEM((64, 128), F16, transforms=swizzled(128)),
               tg.SMEM((64, 128), F16, transforms=swizzled(128))]
    with raises_at("traced", "an offset not known to be a multiple of it", "e.g. tg.ds(i * 64, 64)"):
        trace(body, spec(8, 8), scratch=scratch, grid=(2,))


def test_the_stored_rows_of_an_m_major_a_must_hold_the_swizzle_of_its_64_row_slice():
    def body(x, out, acc, a_smem, b_smem):
        tg.wgmma(acc, a_smem.T.at[0:64], b_smem)  # @narrow
        tg.wgmma_wait(0)

    scratch = [tg.ACC((64, 128)), tg.SMEM((64, 96), F16, transforms=swizzled(64)),   # M = 96: a 64-byte swizzle
               tg.SMEM((64, 128), F16, transforms=swizzled(128))]
    with raises_at("narrow", "its 64 f16 along M need a 128-byte swizzle", "rows of 96 f16 = 192 bytes",
                   "make the stored M extent a multiple of 64 (e.g. 128)"):
        trace(body, spec(8, 8), scratch=scratch)


def test_swizzles_are_checked_on_the_stored_contiguous_dimension_of_a_transposed_operand():
    body, _ = weight_kernel()
    scratch = [tg.ACC((128, 128)), tg.SMEM((128, 64), F16, transforms=swizzled(128)),
               tg.SMEM((128, 64), F16, transforms=swizzled(64, F16)[1:]), tg.Barrier(num_arrivals=2)]
    with raises_at("mma", "wgmma reads operand B", "its contiguous dimension (dimension 0, stored last) is 64 f16 = "
                   "128 bytes", "declared with a 64-byte swizzle"):
        trace(body, spec(128, 64), spec(128, 64), scratch=scratch)


def staged_weight_kernel(n, stages):
    """x [64, 64] @ w.T for a weight w [n, 64] loaded into stage 0 of a ring of `stages` buffers (or one buffer)."""
    ring = (stages,) if stages else ()

    def body(x, w, out, acc, x_smem, w_smem, bar):
        tile = w_smem.at[0] if stages else w_smem
        tg.copy_gmem_to_smem(x, x_smem, bar.at[0])
        tg.copy_gmem_to_smem(w, tile, bar.at[0])
        tg.barrier_wait(bar.at[0])
        tg.wgmma(acc, x_smem, tile.T)  # @staged_mma
        tg.wgmma_wait(0)
    scratch = [tg.ACC((64, n)), tg.SMEM((64, 64), F16, transforms=swizzled(128)),
               tg.SMEM(ring + (n, 64), F16, transforms=swizzled(128)), tg.Barrier(num_arrivals=2)]  # @ring
    return body, scratch


def test_a_k_major_b_read_from_a_ring_of_stages_takes_any_n_wgmma_takes():
    # N = 152 (19 8-row atoms) was refused while the lowering sliced a stage out of the ring, on which CuTe DSL's
    # compiler aborted; it tiles the stage directly now (tests/lower/test_smem.py compiles such rings)
    for n, stages in ((152, 2), (136, 4), (152, 0), (160, 2)):
        body, scratch = staged_weight_kernel(n, stages)
        trace(body, spec(64, 64), spec(n, 64), scratch=scratch)

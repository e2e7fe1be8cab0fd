"""Value sugar: scalar and array arithmetic, ref views, loads and stores record the documented ops."""
import pytest

import tilegemm as tg

from .helpers import F16, F32, raises_at, spec, swizzled, trace


def ops_of(body, scratch=(), **config):
    """The ops a kernel body records (nested ones included), traced over one f16 128x128 input."""
    return list(trace(body, spec(128, 128), scratch=scratch, **config).walk())


def test_scalar_arithmetic_records_binops():
    seen = {}

    def body(x, out):
        i = tg.axis_index("x")
        seen.update(offset=i * 64 + 8, flipped=7 - i, below=i < 3, neg=-i, rem=i % 4, div=i // 2,
                    both=(i < 3) & (i > 0), inverted=~(i == 1))

    ops = ops_of(body, grid=(4,))
    binops = [(op.attrs["op"], op.operands) for op in ops if op.kind == "binop"]
    i = ops[0].result
    scaled = seen["offset"].producer.operands[0]
    assert binops[:2] == [("mul", (i, 64)), ("add", (scaled, 8))]
    assert ("sub", (7, i)) in binops and ("sub", (0, i)) in binops
    assert ("rem", (i, 4)) in binops and ("div", (i, 2)) in binops
    assert [str(seen[k].type) for k in ("offset", "below", "neg", "both", "inverted")] == [
        "i32", "bool", "i32", "bool", "bool"]


@pytest.mark.parametrize("use, marker, fragment", [
    (lambda i: bool(i), "truth", "no Python truth value"),  # @truth
    (lambda i: range(i), "index", "use tg.fori_loop for a loop over a traced bound"),  # @index
    (lambda i: ~i, "invert", "~ is only defined on bool scalars"),  # @invert
    (lambda i: i + 1.5, "float", "expected an int, a bool or a traced scalar, got float 1.5"),  # @float
])
def test_scalars_refuse_python_only_uses(use, marker, fragment):
    with raises_at(marker, fragment):
        ops_of(lambda x, out: use(tg.axis_index("x")))


def test_ref_views_take_static_and_dynamic_slices():
    seen = {}

    def body(x, out, stages):
        k = tg.axis_index("x")
        seen.update(whole=x.at[...], rows=x.at[0:64], tile=x.at[tg.ds(k * 64, 64), 32:96], row=x.at[5],
                    stage=stages.at[k % 2], inner=stages.at[1].at[:, tg.ds(k * 8, 8)])
        seen["x"] = x

    ops = ops_of(body, scratch=[tg.SMEM((2, 64, 32), F16)])
    assert seen["whole"] is seen["x"], "a full view records nothing"
    assert {name: seen[name].shape for name in ("rows", "tile", "row", "stage", "inner")} == {
        "rows": (64, 128), "tile": (64, 64), "row": (128,), "stage": (64, 32), "inner": (64, 8)}
    tile = seen["tile"].producer
    assert tile.kind == "view" and tile.operands[2] == 32 and tile.attrs["sizes"] == (64, 64)
    assert seen["row"].producer.attrs["sizes"] == (None, 128)
    assert str(seen["stage"].type) == "smem<64x32xf16>"
    assert sum(op.kind == "view" for op in ops) == 6


@pytest.mark.parametrize("index, marker, fragment", [
    (lambda x: x.at[0, 0, 0], "many", "too many indices (3) for a ref of shape (128, 128)"),  # @many
    (lambda x: x.at[0:128:2], "step", "ref slices must have step 1"),  # @step
    (lambda x: x.at[tg.ds(100, 64)], "past", "tg.ds(100, 64) is out of bounds for dimension 0 of size 128"),  # @past
    (lambda x: x.at[tg.ds(0, 0)], "empty", "tg.ds size must be a positive static int"),  # @empty
    (lambda x: x.at[128], "end", "index 128 is out of bounds for dimension 0 of size 128"),  # @end
    (lambda x: x.at[tg.axis_index("x"):], "traced", "slices of refs must be static; use tg.ds"),  # @traced
])
def test_bad_scratch_views_are_rejected_where_they_are_written(index, marker, fragment):
    with raises_at(marker, fragment):
        ops_of(lambda x, out, buffer: index(buffer), scratch=[tg.SMEM((128, 128), F16)])


def test_gmem_views_may_extend_past_the_array():
    def body(x, out):
        seen.append(x.at[tg.ds(100, 64), tg.ds(0, 256)])

    seen = []
    ops_of(body)
    assert seen[0].shape == (64, 256)


def test_loads_stores_and_conversions():
    seen = {}

    def body(x, out, acc):
        tile = x[0:64, :]
        seen.update(tile=tile, wide=tile.astype(F32))
        acc[...] = seen["wide"] + 1.0
        out[0:64, :] = tile
        out.at[64:128][...] = 0.0
        out.at[64:128, 0:64][...] = acc[...][:, 0:64].astype(F16)

    ops = ops_of(body, scratch=[tg.ACC((64, 128))])
    assert [op.kind for op in ops] == ["alloc", "view", "load", "astype", "ewise", "store", "view", "store", "view",
                                       "full", "store", "load", "array_slice", "astype", "view", "store"]
    assert str(seen["tile"].type) == "array<64x128xf16>" and str(seen["wide"].type) == "array<64x128xf32>"
    sliced = next(op for op in ops if op.kind == "array_slice")
    assert sliced.attrs == {"starts": (0, 0), "sizes": (64, 64)}


@pytest.mark.parametrize("store, marker, fragment", [
    (lambda x, out: out.__setitem__(..., x[...].astype(F32)), "dtype",  # @dtype
     "storing a f32 array into a f16 ref: convert it with .astype(tg.float16)"),
    (lambda x, out: out.__setitem__(..., x[0:64, :]), "shape",  # @shape
     "storing an array of shape (64, 128) into a ref view of shape (128, 128)"),
    (lambda x, out: x[...][tg.ds(tg.axis_index("x"), 8)], "slice", "register arrays take only static slices"),  # @slice
    (lambda x, out: x[...] + x[...].astype(F32), "mixed", "elementwise add of f16 and f32 arrays"),  # @mixed
])
def test_bad_loads_and_stores(store, marker, fragment):
    with raises_at(marker, fragment):
        ops_of(store)


def test_where_and_maximum():
    seen = {}

    def body(x, out):
        a = x[...].astype(F32)
        seen.update(relu=tg.maximum(a, 0.0), clipped=tg.where(a > 1.0, 1.0, a),
                    row=tg.minimum(a, x[0:1, :].astype(F32)), plain=tg.maximum(3, 5))

    ops = ops_of(body)
    assert seen["plain"] == 5, "Python numbers stay Python numbers"
    assert seen["relu"].producer.kind == "ewise" and seen["relu"].producer.attrs["op"] == "max"
    assert seen["clipped"].producer.kind == "where" and str(seen["clipped"].type) == "array<128x128xf32>"
    assert str(seen["row"].type) == "array<128x128xf32>", "numpy broadcasting"
    assert [op.attrs["op"] for op in ops if op.kind == "ewise"] == ["max", "gt", "min"]


def test_barriers_cannot_be_read():
    def body(x, out, bar):
        bar[0]  # @read_barrier

    with raises_at("read_barrier", "barriers cannot be read; use tg.barrier_wait"):
        ops_of(body, scratch=[tg.Barrier(num_barriers=2)])


# ----------------------------------------------------------------------------- transposed views

def test_transpose_ref_records_a_view_of_the_stored_buffer_with_permuted_dimensions():
    seen = {}

    def body(x, out, w_smem):
        seen.update(w=w_smem, t=tg.transpose_ref(w_smem, (1, 0)), sugar=w_smem.T, same=tg.transpose_ref(w_smem, (0, 1)))

    ops = ops_of(body, scratch=[tg.SMEM((128, 64), F16, transforms=swizzled(128))])
    t = seen["t"]
    assert t.producer.kind == "transpose_ref" and t.producer.attrs == {"permutation": (1, 0)}
    assert t.shape == (64, 128) and t.type.permutation == (1, 0) and t.type.contiguous_dim == 0
    assert str(t.type) == "smem<64x128xf16, tile(8, 64), swizzle128, transpose(1, 0)>", "transforms: the stored layout"
    assert seen["sugar"].type == t.type and seen["same"] is seen["w"], "ref.T is sugar; the identity records nothing"
    assert sum(op.kind == "transpose_ref" for op in ops) == 2


def test_views_of_transposed_refs_index_the_permuted_dimensions_and_keep_track_of_the_stored_order():
    seen = {}

    def body(x, out, stages):
        by_stage = tg.transpose_ref(stages, (0, 2, 1))                  # (2, 32, 64): each stage transposed
        seen.update(stage=by_stage.at[1], half=by_stage.at[1].at[0:16], row=by_stage.at[1, 3],
                    back=by_stage.at[1].T, outer=tg.transpose_ref(stages, (1, 0, 2)).at[:, 0])

    ops_of(body, scratch=[tg.SMEM((2, 64, 32), F16)])
    assert (seen["stage"].shape, seen["stage"].type.permutation) == ((32, 64), (1, 0))
    assert (seen["half"].shape, seen["half"].type.contiguous_dim) == ((16, 64), 0)
    assert (seen["row"].shape, seen["row"].type.permutation) == ((64,), None)
    assert seen["back"].type.permutation is None, "transposing twice is the stored order"
    assert (seen["outer"].shape, seen["outer"].type.permutation) == ((64, 32), None)


@pytest.mark.parametrize("make, marker, fragments", [
    (lambda x, tmem, smem3: tg.transpose_ref(x, (1, 0)), "gmem",  # @gmem
     ("takes SMEM refs, got a GMEM ref", "copy the tile as stored", "tg.transpose_ref(w_smem, (1, 0))")),
    (lambda x, tmem, smem3: tmem.T, "tmem", ("got a TMEM ref", "transpose the SMEM operand instead")),  # @tmem
    (lambda x, tmem, smem3: tg.transpose_ref(smem3, (1, 1, 0)), "perm",  # @perm
     ("permutation (1, 1, 0) is not a permutation of the 3 dimensions", "e.g. (0, 2, 1)")),
    (lambda x, tmem, smem3: smem3.T, "dot_t", ("ref.T transposes 2-D refs", "use tg.transpose_ref")),  # @dot_t
])
def test_only_smem_refs_transpose_and_only_by_permutations(make, marker, fragments):
    with raises_at(marker, *fragments):
        ops_of(lambda x, out, tmem, smem3: make(x, tmem, smem3),
               scratch=[tg.TMEM((128, 128), F32), tg.SMEM((2, 64, 32), F16)])

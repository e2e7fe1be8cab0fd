"""Elementwise math and broadcasting on register arrays: what each call records, and what is refused where."""
import numpy as np
import pytest

import tilegemm as tg

from .helpers import F16, F32, raises_at, spec, trace


def traced(body, *in_specs):
    """Traces `body(x, out)` over an f16 128x128 x (and `in_specs`, if given) and returns its ops."""
    return list(trace(body, *(in_specs or (spec(128, 128),))).walk())


@pytest.mark.parametrize("fn", ["exp", "exp2", "log", "tanh", "erf", "sqrt", "rsqrt", "sigmoid"])
def test_each_math_function_records_one_unary_op_of_the_arrays_shape(fn):
    seen = {}

    def body(x, out):
        seen["y"] = getattr(tg, fn)(x[...].astype(F32))

    ops = traced(body)
    assert [(op.kind, op.attrs) for op in ops if op.kind == "unary"] == [("unary", {"fn": fn})]
    assert str(seen["y"].type) == "array<128x128xf32>"


def test_abs_and_numpy_ufuncs_record_the_same_ops_as_the_tg_functions():
    def body(x, out):
        a = x[...].astype(F32)
        abs(a), np.exp(a), np.tanh(a), np.sqrt(a), np.absolute(a), np.maximum(a, 0.0), a ** 2.0, np.power(a, a)

    ops = traced(body)
    assert [op.attrs["fn"] for op in ops if op.kind == "unary"] == ["abs", "exp", "tanh", "sqrt", "abs"]
    assert [op.attrs["op"] for op in ops if op.kind == "ewise"] == ["max", "pow", "pow"]


def test_numpy_scalars_combine_with_arrays_as_python_numbers_do():
    def body(x, out):
        a = x[...].astype(F32)
        np.float32(2.0) * a, a + np.float64(1.0), np.maximum(np.float32(0.0), a), np.float32(0.5) < a

    ops = traced(body)
    assert [(op.attrs["op"], [o for o in op.operands if not hasattr(o, "type")]) for op in ops if op.kind == "ewise"] \
        == [("mul", [2.0]), ("add", [1.0]), ("max", [0.0]), ("gt", [0.5])]


def test_math_on_python_numbers_is_computed_at_once():
    assert tg.exp(0.0) == 1.0 and tg.sigmoid(0.0) == 0.5 and tg.rsqrt(4.0) == 0.5


def with_accumulator(body):
    """The ops of `body(acc_values, load)` traced in a kernel that stores the array it returns into an ACC
    (acc_values: the 128x128 f32 accumulator; load(): a fresh read of a [128] f32 vector, as one register
    fragment broadcasts one way), so that every array is lowerable."""
    def kernel_body(x, v, out, acc):
        acc[...] = body(acc[...], lambda: v[...])
    return list(trace(kernel_body, spec(128, 128), spec(128, dtype=F32), scratch=[tg.ACC((128, 128))]).walk())


def test_none_indices_insert_dimensions_of_size_1():
    seen = {}

    def body(a, load):
        seen.update(row=load()[None, :], col=load()[:, None], lead=load()[None], last=load()[..., None])
        return a + seen["row"] + seen["col"] + seen["lead"] + seen["last"]

    ops = with_accumulator(body)
    assert {k: tuple(v.shape) for k, v in seen.items()} == {"row": (1, 128), "col": (128, 1), "lead": (1, 128),
                                                            "last": (128, 1)}
    assert [op.attrs["axes"] for op in ops if op.kind == "expand_dims"] == [(0,), (1,), (0,), (1,)]


def test_broadcast_to_records_the_target_shape_and_returns_an_array_already_of_it():
    seen = {}

    def body(x, v, out):
        row = v[...]
        seen.update(full=tg.broadcast_to(row, (64, 128)), same=tg.broadcast_to(row, (128,)), row=row)

    ops = traced(body, spec(128, 128), spec(128, dtype=F32))
    assert tuple(seen["full"].shape) == (64, 128) and seen["same"] is seen["row"]
    assert [op.attrs["shape"] for op in ops if op.kind == "broadcast_to"] == [(64, 128)]


def test_reductions_record_their_kind_axes_and_result_shape_as_numpy_would():
    seen = {}

    def body(a, load):
        seen.update(row_max=a.max(axis=1), row_sum=np.sum(a, axis=-1, keepdims=True), row_min=np.min(a, axis=1))
        return a - seen["row_max"][:, None] + seen["row_sum"] + seen["row_min"][:, None]

    ops = with_accumulator(body)
    assert {k: tuple(v.shape) for k, v in seen.items()} == {"row_max": (128,), "row_sum": (128, 1),
                                                            "row_min": (128,)}
    assert [(op.attrs["kind"], op.attrs["axes"], op.attrs["keepdims"]) for op in ops if op.kind == "reduce"] == [
        ("max", (1,), False), ("sum", (1,), True), ("min", (1,), False)]


def test_transpose_and_reshape_record_numpys_shapes():
    seen = {}

    def body(a, load):
        column, row = load().reshape(-1, 1), load()
        seen.update(column=column, t=column.T, p=load().reshape(-1, 1).transpose((1, 0)), same=row.reshape(128),
                    row=row)
        return a + seen["t"] + seen["p"] + seen["same"]

    ops = with_accumulator(body)
    assert [tuple(seen[k].shape) for k in ("column", "t", "p")] == [(128, 1), (1, 128), (1, 128)]
    assert seen["same"] is seen["row"]
    assert [op.attrs for op in ops if op.kind in ("transpose", "reshape")] == [
        {"shape": (128, 1)}, {"axes": (1, 0)}, {"shape": (128, 1)}, {"axes": (1, 0)}]


@pytest.mark.parametrize("body, marker, fragments", [
    (lambda x, out: x[...].reshape(3, -1), "reshape",  # @reshape
     ["cannot reshape an array of shape (128, 128) (16384 elements) into (3, -1)"]),
    (lambda x, out: x[...].transpose(0, 0), "perm",  # @perm
     ["transpose axes (0, 0) are not a permutation of the 2 dimensions"]),
    (lambda x, out: x[...].max(axis=1), "reduce_f16", ["max reduces float32 arrays; this array is f16"]),  # @reduce_f16
    (lambda x, out: x[...].astype(F32).sum(axis=2), "axis",  # @axis
     ["sum axis 2 is not an axis of an array of shape (128, 128)"]),
    (lambda x, out: x[...].astype(F32).sum(axis=1, dtype=F16), "dtype",  # @dtype
     ["sum of a register array takes axis= and keepdims=, not dtype="]),
    (lambda x, out: tg.exp(x[...]), "f16",  # @f16
     ["tg.exp computes on float32 arrays; this array is f16", ".astype(tg.float32)"]),
    (lambda x, out: x[...] ** 2.0, "pow_f16", ["** computes on float32 arrays"]),  # @pow_f16
    (lambda x, out: tg.tanh(tg.axis_index("x")), "scalar",  # @scalar
     ["tg.tanh takes a register array (or a Python number), got Scalar"]),
    (lambda x, out: np.sin(x[...].astype(F32)), "sin",  # @sin
     ["numpy's sin cannot run on a traced register array", "tg.exp", "tg.erf", "numpy ufuncs that trace: "]),
    (lambda x, out: np.ones(128) + x[...].astype(F32), "host",  # @host
     ["numpy's add got a host numpy array of shape (128,) and a traced register array"]),
    (lambda x, out: tg.broadcast_to(x[...], (128, 64)), "bcast",  # @bcast
     ["an array of shape (128, 128) does not broadcast to (128, 64)"]),
    (lambda x, out: x[...][tg.ds(tg.axis_index("x"), 8), None], "dynamic",  # @dynamic
     ["register arrays take only static slices"]),
])
def test_bad_math_and_broadcasts_are_refused_at_the_users_line(body, marker, fragments):
    with raises_at(marker, *fragments):
        traced(body)


def test_array_math_is_refused_inside_a_core_map():
    def body(x, out):
        a = x[...].astype(F32)

        @tg.core_map(tg.WarpMesh("warp"))
        def _():
            tg.exp(a)  # @in_core_map

    with raises_at("in_core_map", "unary is warpgroup-wide array work and cannot run inside a WarpMesh core_map"):
        traced(body)

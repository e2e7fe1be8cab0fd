"""Reading one int32 element of a GMEM or SMEM ref (`idx[i]`) gives a traced Scalar, recorded as a load_scalar op
where it is read; the verifier refuses reads the GPU could not match, at the user's line, with what is legal."""
import functools

import pytest

import tilegemm as tg

from tilegemm.lang.registry import opdef, unsupported_reason

from .helpers import F16, F32, raises_at, spec, trace

I32 = tg.int32


def ops(graph, kind):
    return [op for op in graph.walk() if op.kind == kind]


def test_an_int32_element_of_gmem_or_smem_reads_as_a_scalar_and_other_reads_as_arrays():
    seen = {}

    def body(idx, x, out, idx_smem):
        seen["gmem"], seen["smem"] = idx[3], idx_smem[1]
        seen["float"], seen["slice"] = x[0], idx[0:1]

    graph = trace(body, spec(8, dtype=I32), spec(4, dtype=F32), scratch=[tg.SMEM((4,), I32)])
    assert isinstance(seen["gmem"], tg.Scalar) and seen["gmem"].type.dtype == I32
    assert isinstance(seen["smem"], tg.Scalar)
    assert isinstance(seen["float"], tg.Array) and isinstance(seen["slice"], tg.Array)
    assert [op.result for op in ops(graph, "load_scalar")] == [seen["gmem"], seen["smem"]]


def test_a_scalar_read_indexes_views_and_bounds_loops_and_conditions():
    def body(a, idx, out, a_smem, loaded):
        e = idx[0]
        tg.copy_gmem_to_smem(a.at[e, tg.ds(idx[1], 64), :], a_smem, loaded)
        tg.barrier_wait(loaded)
        tg.fori_loop(0, idx[2], lambda i, c: c + 1, 0)
        tg.when(e > 0)(lambda: tg.debug_print("expert {}", e))

    graph = trace(body, spec(4, 128, 64), spec(3, dtype=I32), out=spec(64, 64),
                  scratch=[tg.SMEM((64, 64), F16), tg.Barrier(num_arrivals=1)])
    reads = [op.result for op in ops(graph, "load_scalar")]
    (view,) = [op for op in ops(graph, "view") if op.arg("ref") is graph.inputs[0]]
    assert list(view.arg("starts")) == [reads[0], reads[1], 0]
    assert ops(graph, "fori_loop")[0].arg("upper") is reads[2]
    assert ops(graph, "when")[0].arg("cond").producer.arg("a") is reads[0]


def test_a_scalar_is_read_where_it_stands_in_the_kernel_order():
    def body(idx, out, idx_smem, loaded):
        def step(s, _):
            tg.copy_gmem_to_smem(idx.at[tg.ds(s * 4, 4)], idx_smem, loaded)
            tg.barrier_wait(loaded)
            tg.debug_print("{}", idx_smem[0])
        tg.fori_loop(0, 2, step, None)

    graph = trace(body, spec(8, dtype=I32), scratch=[tg.SMEM((4,), I32), tg.Barrier(num_arrivals=1)])
    body_ops = [op.kind for op in ops(graph, "fori_loop")[0].regions[0].ops]
    assert body_ops.index("load_scalar") > body_ops.index("barrier_wait")


def test_a_bool_element_is_refused_with_the_int32_flags_to_use_instead():
    def body(flags, out):
        tg.when(flags[0])(lambda: tg.debug_print("set"))  # @bool

    with raises_at("bool", "reading a bool element of gmem<4xbool>", "store the flags as int32",
                   "tg.when(flags[i] != 0)"):
        trace(body, spec(4, dtype=tg.bool_))


def test_reading_a_scalar_of_an_output_the_kernel_writes_is_refused():
    def body(x, out, counts):
        tg.debug_print("{}", counts[0])  # @output

    with raises_at("output", "kernel output 1 (gmem<4xi32>), an output this kernel writes",
                   "read scalars from the kernel's inputs (or SMEM copies of them"):
        tg.kernel(body, out_shape=[spec(128, 128), spec(4, dtype=I32)]).trace(spec(128, 128))


def test_an_smem_window_at_a_start_read_at_run_time_is_refused_unless_a_multiple_of_its_size():
    def body(a, idx, out, a_smem, o_smem, loaded, rows_per_step):
        tg.copy_gmem_to_smem(a, a_smem, loaded)
        tg.barrier_wait(loaded)
        o_smem[...] = a_smem.at[tg.ds(idx[0] * rows_per_step, 8)][...]  # @window
        tg.commit_smem()
        tg.copy_smem_to_gmem(o_smem, out)
        tg.wait_smem_to_gmem(0)

    def traced(rows_per_step):
        return trace(functools.partial(body, rows_per_step=rows_per_step), spec(64, 64), spec(1, dtype=I32),
                     out=spec(8, 64), scratch=[tg.SMEM((64, 64), F16), tg.SMEM((8, 64), F16),
                                               tg.Barrier(num_arrivals=1)])

    traced(8)
    with raises_at("window", "only known to be a multiple of 1, not a multiple of its size 8",
                   "start views at multiples of their size"):
        traced(1)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_both_architectures_lower_a_scalar_read(arch):
    assert opdef("load_scalar").lowerings.get(arch) is not None
    graph = trace(lambda idx, out: tg.debug_print("{}", idx[0]), spec(2, dtype=I32))
    assert unsupported_reason(ops(graph, "load_scalar")[0], arch) is None


def test_a_pipeline_of_a_run_time_step_count_is_refused_with_the_loop_to_write_instead():
    def body(x, n, out):
        step = lambda indices, block: None  # noqa: E731
        tg.emit_pipeline(step, grid=(n[0],), in_specs=[tg.BlockSpec((64, 64), lambda ki: (0, ki))])(x)  # @pipeline

    with raises_at("pipeline", "pipeline grid must be a tuple of positive static ints",
                   "a trip count known only at run time (a Scalar) takes a loop of your own: tg.fori_loop"):
        trace(body, spec(64, 256), spec(1, dtype=I32))

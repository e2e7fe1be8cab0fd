"""tg.kernel(dependent_launch=True): the kernel is launched with programmatic dependent launch, and every block waits
for the previous kernel on the stream (griddepcontrol.wait) after its set-up and before its body; checked on the
CPU (the graph, the generated source, the PTX for sm_90a and sm_100a; the interpreter ignores the flag). On the
GPU: tests/lower/test_gpu.py and tests/ops/test_matmul_gpu.py chain dependent calls."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.lower.facts import check_kernel

from . import kernels

WAIT = "cute.arch.griddepcontrol_wait()"


def add_one(dependent_launch):
    @tg.kernel(out_shape=tg.ShapeDtype((128,), tg.float32), dependent_launch=dependent_launch)
    def add_one(x, o):
        o[...] = x[...] + 1.0
    return add_one


def body_lines(source):
    """The lines of the generated @cute.kernel function, in order."""
    lines = source.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("def ") and "_kernel(" in line)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("@cute.jit"))
    return [line.strip() for line in lines[start + 1:end] if line.strip()]


def test_the_graph_says_it_and_its_fingerprint_differs():
    spec = tg.ShapeDtype((128,), tg.float32)
    dependent, plain = add_one(True).trace(spec), add_one(False).trace(spec)
    assert str(dependent).split("\n")[0].endswith("dependent_launch")
    assert "dependent_launch" not in str(plain).split("\n")[0]
    assert dependent.fingerprint() != plain.fingerprint()


def test_a_flag_that_is_not_a_bool_is_refused_at_the_users_line():
    with pytest.raises(tg.KernelError, match="dependent_launch must be True or False, got 'yes'") as info:
        tg.kernel(lambda x, o: None, out_shape=tg.ShapeDtype((128,), tg.float32), dependent_launch="yes")
    assert "test_dependent_launch.py" in str(info.value)


def test_the_launch_allows_programmatic_serialization_only_when_asked():
    spec = tg.ShapeDtype((128,), tg.float32)
    dependent, plain = add_one(True).lower(spec), add_one(False).lower(spec)
    assert "stream=stream, use_pdl=True)" in dependent.source and "use_pdl" not in plain.source
    assert WAIT not in plain.source
    assert dependent.generated.launch.dependent and "programmatic dependent launch" in dependent.source


@pytest.mark.parametrize("build", [lambda: kernels.tma_wgmma(dependent_launch=True),
                                   lambda: kernels.multicast(256, 256, 128, dependent_launch=True)],
                         ids=["one_block", "cluster"])
def test_every_block_waits_after_its_set_up_and_before_its_body(build):
    kernel = build()
    specs = kernels.two_row_specs() if kernel.name == "one_row_of_tiles" else [
        tg.ShapeDtype((256, 128), tg.float16), tg.ShapeDtype((128, 256), tg.float16)]
    lines = body_lines(kernel.lower(*specs, arch="sm_90a").source)
    wait = lines.index(WAIT + "  # dependent launch: the previous kernel on the stream has completed and its "
                              "writes are visible before the body runs")
    set_up = min(i for i, line in enumerate(lines)
                 if line.startswith(("cute.arch.sync_threads()", "cute.arch.cluster_wait()")))
    assert set_up < wait, "the barriers are initialised (and, in a cluster, seen by every peer) first"
    body = [i for i, line in enumerate(lines) if line.startswith("# ") and ".py:" in line]
    assert body and wait < min(body), "no operation of the body (each marked by its source line) runs before it"
    assert not any(line.startswith(("cute.copy(", "cute.gemm(")) for line in lines[:wait])


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_the_ptx_waits_for_the_prior_grid(arch):
    compiled = add_one(True).lower(tg.ShapeDtype((128,), tg.float32), arch=arch).compile()
    assert "griddepcontrol.wait;" in compiled.ptx and "griddepcontrol.launch_dependents" not in compiled.ptx
    assert compiled.launch.dependent


def dependent_findings(ptx, graph):
    return [str(f) for f in check_kernel(ptx, graph) if f.check == "dependent-launch"]


def test_no_thread_touches_global_memory_before_the_wait_in_the_compiled_code():
    from tilegemm.ops import hopper_matmul
    specs = tg.ShapeDtype((256, 128), tg.float16), tg.ShapeDtype((128, 256), tg.float16)
    for lowered in (add_one(True).lower(tg.ShapeDtype((128,), tg.float32)),
                    kernels.tma_wgmma(dependent_launch=True).lower(*kernels.two_row_specs()),
                    kernels.multicast(256, 256, 128, dependent_launch=True).lower(*specs),
                    hopper_matmul.build(256, 256, 128).lower(*specs)):
        assert dependent_findings(lowered.ptx, lowered.graph) == []


def test_the_ptx_check_reports_a_global_access_before_the_wait_and_a_missing_or_stray_wait():
    spec = tg.ShapeDtype((128,), tg.float32)
    dependent = add_one(True).lower(spec)
    lines = dependent.ptx.split("\n")
    wait = next(i for i, line in enumerate(lines) if line.strip() == "griddepcontrol.wait;")
    accesses = [i for i, line in enumerate(lines) if line.strip().startswith(("ld.global", "st.global"))]
    moved = lines[:wait] + lines[wait + 1:accesses[0] + 1] + [lines[wait]] + lines[accesses[0] + 1:]
    late = dependent_findings("\n".join(moved), dependent.graph)
    assert len(late) == len(accesses), "the moved wait sits in a branch's path: every access may come before it"
    assert late[0].startswith(f"[dependent-launch] PTX line {accesses[0]}: ld.global") and "may race" in late[0]
    assert "never waits" in dependent_findings("\n".join(lines[:wait] + lines[wait + 1:]), dependent.graph)[0]
    plain = add_one(False).lower(spec)
    assert "only a kernel with dependent_launch=True" in dependent_findings(dependent.ptx, plain.graph)[0]


def add_one_then_let_dependents_launch():
    @tg.kernel(out_shape=tg.ShapeDtype((128,), tg.float32), dependent_launch=True)
    def add_one(x, o):
        o[...] = x[...] + 1.0
        tg.launch_dependents()   # @trigger
    return add_one


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_launch_dependents_lets_the_next_kernel_launch_where_the_user_calls_it(arch):
    spec = tg.ShapeDtype((128,), tg.float32)
    lowered = add_one_then_let_dependents_launch().lower(spec, arch=arch)
    lines = body_lines(lowered.source)
    (trigger,) = [i for i, line in enumerate(lines) if line.startswith("cute.arch.griddepcontrol_launch_dependents()")]
    assert lines[trigger - 1].endswith("tg.launch_dependents()   # @trigger"), "right after the user's line"
    assert trigger > max(i for i, line in enumerate(lines) if "o[...] = x[...] + 1.0" in line)
    compiled = lowered.compile()
    assert "griddepcontrol.launch_dependents;" in compiled.ptx
    assert dependent_findings(compiled.ptx, lowered.graph) == [], "a trigger is not a global access nor a wait"


def test_launch_dependents_is_an_op_of_the_graph_and_changes_no_result():
    kernel = add_one_then_let_dependents_launch()
    graph = kernel.trace(tg.ShapeDtype((128,), tg.float32))
    assert [op.kind for op in graph.body.ops][-1] == "launch_dependents"
    x = np.arange(128, dtype=np.float32)
    np.testing.assert_array_equal(kernel(x, interpret=True), x + 1)


def test_the_interpreter_runs_it_as_any_kernel():
    x = np.arange(128, dtype=np.float32)
    np.testing.assert_array_equal(add_one(True)(x, interpret=True), x + 1)


def test_the_flagship_is_a_dependent_launch():
    from tilegemm.ops import hopper_matmul
    lowered = hopper_matmul.build(256, 256, 128).lower(tg.ShapeDtype((256, 128), tg.float16),
                                                       tg.ShapeDtype((128, 256), tg.float16))
    assert WAIT in lowered.source and "use_pdl=True" in lowered.source


def test_the_flagship_asked_to_trigger_does_so_in_its_producer_once_every_load_is_issued():
    from tilegemm.ops import hopper_matmul
    specs = tg.ShapeDtype((256, 128), tg.float16), tg.ShapeDtype((128, 256), tg.float16)
    plain = hopper_matmul.build(256, 256, 128).lower(*specs).source
    assert "griddepcontrol_launch_dependents" not in plain
    lines = body_lines(hopper_matmul.build(256, 256, 128, trigger_dependents=True).lower(*specs).source)
    (trigger,) = [i for i, line in enumerate(lines) if line.startswith("cute.arch.griddepcontrol_launch_dependents()")]
    producer = next(i for i, line in enumerate(lines) if line.startswith("cute.arch.setmaxregister_decrease("))
    consumers = next(i for i, line in enumerate(lines) if line.startswith("cute.arch.setmaxregister_increase("))
    loads = [i for i, line in enumerate(lines) if line.startswith("cute.copy(tma_load_")]
    assert producer < max(loads) < trigger < consumers, "after the producer's last load, before the consumers"

"""CI without a GPU: every Hopper example lowers and compiles for sm_90a, with the instructions its rung needs."""
import pytest

from tilegemm.lang.types import MemorySpace
from tilegemm.lower.binutils import find_tool

from .examples import HOPPER, lower

if not HOPPER:
    pytest.skip("no examples/hopper_*.py yet", allow_module_level=True)


def ops(graph, kind):
    return [op for op in graph.walk() if op.kind == kind]


def copies_into_smem_through_registers(graph):
    return [op for op in ops(graph, "store")
            if op.operands[0].space == MemorySpace.SMEM and op.operands[1].producer.kind == "load"]


def required_ptx(graph):
    """The PTX each rung must contain, read off its graph: what it computes with and how it moves data."""
    need = set()
    if ops(graph, "dot"):
        need.add("fma.rn.f32")                       # CUDA-core FMAs (v0, v1)
    if copies_into_smem_through_registers(graph):
        need.add("cp.async.ca.shared.global")        # cooperative cp.async copies (v1)
    if ops(graph, "wgmma"):
        need.add("wgmma.mma_async")                  # tensor cores (v2 on)
    if ops(graph, "copy_gmem_to_smem"):
        need.add("cp.async.bulk.tensor")             # TMA
    if ops(graph, "set_max_registers"):
        need.add("setmaxnreg")
    if any(op.attrs["collective_axes"] for op in ops(graph, "copy_gmem_to_smem")):
        need.add("multicast::cluster")
    return need


@pytest.fixture(scope="module", params=HOPPER)
def compiled_example(request):
    lowered = lower(request.param)
    return lowered, lowered.compile()


def test_example_compiles_with_the_instructions_of_its_rung(compiled_example):
    lowered, compiled = compiled_example
    need = required_ptx(lowered.graph)
    assert need, "every rung computes with FMAs or WGMMA"
    missing = {ins for ins in need if ins not in compiled.ptx}
    assert not missing, f"{lowered.generated.entry}: PTX lacks {missing}"
    assert ".target sm_90a" in compiled.ptx


def test_simt_rungs_use_no_tensor_cores_and_tensor_core_rungs_no_cuda_core_dot(compiled_example):
    lowered, compiled = compiled_example
    if ops(lowered.graph, "dot"):
        assert "wgmma" not in compiled.ptx and "cp.async.bulk.tensor" not in compiled.ptx
    else:
        assert "fma.rn.f32" not in compiled.ptx


def test_example_uses_no_local_memory(compiled_example):
    _, compiled = compiled_example
    r = compiled.resources
    assert 0 < r.registers <= 255 and not r.spills


@pytest.mark.skipif(find_tool("nvdisasm") is None, reason="SASS needs nvdisasm (the nvidia-cuda-nvdisasm wheel)")
def test_sass_of_the_tma_wgmma_rung_shows_hopper_instructions():
    compiled = lower("hopper_v2_tma_wgmma").compile()
    sass = compiled.sass
    for ins in ("HGMMA.64x", "UTMALDG", "UTMASTG", "SYNCS"):
        assert ins in sass, ins

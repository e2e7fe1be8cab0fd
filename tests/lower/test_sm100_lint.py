"""The Blackwell lint (tilegemm.lower.facts.lint_sm100) over every sm_100a example (one also as a debug build whose
barrier waits give up after a timeout), and the bugs it catches.

Checked per kernel: one cta_group for every tcgen05 instruction and 2-CTA TMA
load, and SASS forms that agree; every tcgen05.mma and tcgen05.commit under an
elect.sync; every tcgen05.ld within its warp's lane quarter, for every warp of
the block; tcgen05.dealloc freeing what tcgen05.alloc took, after a block or
cluster barrier; one thread count per named barrier; 2-CTA loads signalling
the leader's barrier; and, against the graph, the MMA descriptors and the
TMEM allocation (tilegemm/lower/facts/checks.py). Nothing here runs a kernel:
no Blackwell GPU is available, so these facts and the comparison with
NVIDIA's own kernels (test_sm100_conformance.py) are the evidence.
"""
import re

import pytest

from tilegemm.lower.binutils import find_tool
from tilegemm.lower.facts import lint_sm100

from .compiled_cases import BLACKWELL_CASES, DEBUG_CASES, compile_edited, compiled, lowered

HAVE_SASS = find_tool("nvdisasm") is not None


def sass_of(comp):
    return comp.sass if HAVE_SASS else None


@pytest.fixture(scope="module", params=BLACKWELL_CASES + [c for c in DEBUG_CASES if c.arch == "sm_100a"], ids=str)
def kernel(request):
    return compiled(request.param)


def test_every_blackwell_example_passes_the_lint(kernel):
    low, comp = kernel
    assert lint_sm100(comp.ptx, sass_of(comp), low.graph) == []


# ----------------------------------------------------------------------------- the lint has teeth

def case(name):
    return next(c for c in BLACKWELL_CASES if c.name == name)


B1, B4, B6 = case("blackwell_1_basic"), case("blackwell_4_collective"), case("blackwell_6_epilogue_warpgroup")

PLANTED = {
    # planted bug: (kernel, [(generated text, replacement[, count])], the lint check that must fail)
    "commit-issued-by-every-thread-of-its-warp": (
        B1, [("with cute.arch.elect_one():\n                tcgen05.commit(",
              "if True:\n                tcgen05.commit(")], "elect"),
    "pair-commit-with-cta-group-1": (
        B4, [("tcgen05.commit(mma_done, mcast_mask_cluster, tcgen05.CtaGroup.TWO)",
              "tcgen05.commit(mma_done, mcast_mask_cluster, tcgen05.CtaGroup.ONE)")], "cta-group"),
    "epilogue-warpgroup-reads-tmem-by-block-thread-index": (
        B6, [("get_slice(thread_in_warpgroup)", "get_slice(tidx)")], "tmem-lanes"),
    "dealloc-frees-half-the-columns": (
        B6, [("tmem_allocator.free(tmem_base)", "tmem_allocator.free(tmem_base, 256)")], "tmem-dealloc"),
    "dealloc-without-the-final-cluster-barrier": (
        B6, [("cute.arch.cluster_arrive()  # no block leaves while peers may still signal it\n"
              "    cute.arch.cluster_wait()", "pass")], "tmem-dealloc"),
    "named-barrier-with-two-thread-counts": (
        B1, [("number_of_threads=128)", "number_of_threads=256)", 1)], "named-barrier"),
    "pair-mma-b-k-step-not-advanced": (B4, [("b_descriptors[None, None, k_block]", "b_descriptors[None, None, 0]")],
                                       "mma"),
}


@pytest.mark.parametrize("bug", PLANTED)
def test_a_planted_lowering_bug_fails_the_lint(bug):
    kernel_case, edits, check = PLANTED[bug]
    low = lowered(kernel_case)
    findings = lint_sm100(compile_edited(low, *edits).ptx, None, low.graph)
    assert check in {f.check for f in findings}, findings


def test_a_2cta_load_that_keeps_the_peer_bit_would_signal_the_wrong_barrier():
    low, comp = compiled(B4)
    masked = re.compile(r"and\.b32\s+(%r\d+), (%r\d+), -16777224;")      # CUTLASS's Sm100MmaPeerBitMask (~bit 24)
    assert masked.search(comp.ptx)
    findings = lint_sm100(masked.sub(r"mov.b32 \1, \2;", comp.ptx), None, low.graph)
    assert {f.check for f in findings} == {"pair-barrier"}


@pytest.mark.skipif(not HAVE_SASS, reason="SASS needs nvdisasm (the nvidia-cuda-nvdisasm wheel)")
def test_sass_whose_mmas_lost_their_2cta_form_disagrees_with_the_ptx():
    low, comp = compiled(B4)
    assert "UTCHMMA.2CTA" in comp.sass
    findings = lint_sm100(comp.ptx, comp.sass.replace("UTCHMMA.2CTA", "UTCHMMA"), low.graph)
    assert {f.check for f in findings} == {"cta-group"}

"""tilegemm's Blackwell rungs against a persistent GEMM built from NVIDIA's own CuTe DSL API, compared in PTX.

No Blackwell GPU is available to this project, so agreement with what NVIDIA's
library generates is the evidence that the sm_100a back end issues the right
instructions. The reference (tests/lower/cute_reference.py, 1-CTA 128x128 and
2-CTA 256x256 tiles) and every rung with the same MMA flavour are compiled for
sm_100a at the same shape and compared on:

* the tcgen05 instruction descriptor (M, N, types, major-ness; the reference
  passes its tiled MMA as a kernel parameter, so its negate flags are
  run-time values: they are read at their default, 0);
* the shared-memory descriptors of A and B (swizzle, SBO, LBO, base offset,
  version, LBO mode) and their advance over the K steps of one MMA;
* the TMA load forms (dimensions, destination state space, cta_group,
  multicast) and, for 2-CTA loads, the barrier address masked to the leader's;
* the tcgen05.commit forms and their multicast masks for every block of the cluster;
* the tcgen05.alloc / dealloc forms and column counts (per accumulator buffer).

The reference also passes the Blackwell lint: the lint's rules hold for
NVIDIA's code, not only for tilegemm's.
"""
import functools

import pytest

from tilegemm.lower.binutils import find_tool
from tilegemm.lower.facts import KernelFacts, lint_sm100
from tilegemm.lower.facts.expected import is_pair, tmem_used_columns
from tilegemm.lower.facts.lint import PEER_BIT
from tilegemm.lower.facts.facts import FIRST, STRICT

from .compiled_cases import BLACKWELL_CASES, compiled
from .cute_reference import compile_reference, reference_sass

SHAPE = (4096, 8192, 4096)
RUNGS = [c for c in BLACKWELL_CASES if c.shape == SHAPE]


@functools.lru_cache(maxsize=None)
def reference(two_cta):
    """(KernelFacts, cubin) of the reference kernel."""
    ptx, cubin = compile_reference(*SHAPE, two_cta)
    return KernelFacts(ptx), cubin


@pytest.fixture(scope="module", params=RUNGS, ids=str)
def pair(request):
    """(reference facts, rung facts, rung graph) for a rung and the reference with its MMA flavour."""
    low, comp = compiled(request.param)
    ref, _ = reference(is_pair(low.graph))
    return ref, KernelFacts(comp.ptx), low.graph


def mma_groups(facts):
    assert facts.tcgen05_groups, "no tcgen05.mma in the PTX"
    return facts.tcgen05_groups


def test_the_instruction_descriptor_is_nvidias(pair):
    ref, rung, _ = pair
    assert {g.idesc for g in mma_groups(rung)} == {g.idesc_first for g in mma_groups(ref)}
    assert None not in {g.idesc for g in rung.tcgen05_groups}


def descriptor_fields(facts, operand):
    return {tuple(sorted(getattr(s, operand).fields().items())) for g in mma_groups(facts) for s in g.steps}


def k_step_advance(facts, operand):
    return {tuple(getattr(s, operand).start - getattr(g.steps[0], operand).start for s in g.steps)
            for g in mma_groups(facts)}


@pytest.mark.parametrize("operand", ["a", "b"])
def test_shared_memory_descriptors_and_their_k_step_advance_are_nvidias(pair, operand):
    ref, rung, _ = pair
    assert descriptor_fields(rung, operand) == descriptor_fields(ref, operand)
    assert k_step_advance(rung, operand) == k_step_advance(ref, operand)


def load_forms(facts):
    space = lambda t: "shared::cluster" if "shared::cluster" in t.ins.opcode else "shared::cta"  # noqa: E731
    return {(t.rank, space(t), t.cta_group, t.multicast) for t in facts.tma if t.load}


def signals_the_leader(facts):
    """For each 2-CTA load: whether its barrier address drops the peer bit (is the leader block's barrier)."""
    odd_block = FIRST.at()
    odd_block.symbols["dynamic_smem"] = PEER_BIT
    return {not facts.offset(t.barrier, odd_block, t.ins) & PEER_BIT for t in facts.tma if t.load and t.cta_group == 2}


def test_tma_load_forms_and_barrier_masks_are_nvidias(pair):
    ref, rung, _ = pair
    assert load_forms(rung) == load_forms(ref)
    assert signals_the_leader(rung) == signals_the_leader(ref)


def commit_forms(facts, positions):
    forms = {(c.cta_group, c.multicast) for c in facts.commits}
    masks = {(pos, facts.value(c.mask, STRICT.at(cluster_x=pos, cluster_rank=pos, tid=0), c.ins))
             for c in facts.commits if c.multicast for pos in positions}
    return forms, masks


def test_commit_forms_and_multicast_masks_are_nvidias(pair):
    ref, rung, graph = pair
    positions = range(graph.config["cluster"][0] if graph.config["cluster"] else 1)
    assert commit_forms(rung, positions) == commit_forms(ref, positions)


def test_tmem_allocation_forms_and_columns_are_nvidias_per_accumulator(pair):
    ref, rung, graph = pair
    forms = lambda f: ({a.ins.opcode for a in f.allocs}, {d.ins.opcode for d in f.deallocs})  # noqa: E731
    assert forms(rung) == forms(ref)
    accumulators = tmem_used_columns(graph) // next(iter(mma_groups(rung))).idesc.n
    assert {a.columns for a in rung.allocs} == {accumulators * a.columns for a in ref.allocs}
    assert {d.columns for d in rung.deallocs} == {accumulators * d.columns for d in ref.deallocs}


@pytest.mark.parametrize("two_cta", [False, True], ids=["1cta", "2cta"])
def test_nvidias_api_builds_kernels_that_pass_the_blackwell_lint(two_cta):
    facts, cubin = reference(two_cta)
    sass = reference_sass(cubin) if find_tool("nvdisasm") else None
    assert lint_sm100(facts, sass) == []

"""The compiled code of every example agrees with its graph, read off the PTX on the CPU (tilegemm.lower.facts).

What is checked, per kernel (see tilegemm/lower/facts/checks.py): every
mbarrier's init count (arrivals x cluster blocks x warps); every barrier
wait's barrier, the same for all its tries (a debug build's bounded waits
included), and the warps that reach it; every expect_tx's byte count against
the bytes of the copies landing on that barrier (both halves of a 2-CTA
copy); the form and dimensions of the TMA loads on each barrier (plain,
multicast, 2-CTA) and of the TMA stores; the multicast mask of every
multicast TMA load and tcgen05 commit, for every block of the cluster (also
when the PTX shifts it by the block's rank at run time); for every group of
MMA instructions the tcgen05 instruction descriptor or the wgmma shape,
types and transposes, the shared-memory descriptors' swizzle, SBO, LBO, base
offset and version, the advance of the start address from instruction to
instruction (K-major and MN-major operands alike), the A and B buffers they
point into and the TMEM accumulator column; wgmma and bulk-copy wait-group
counts; the TMEM allocation size.

The matrix: every example at its first verify shape (and the Blackwell ones
at a ragged shape), the flagship with a 2-block cluster, at M = 1 and with
each other operand layout, the transposed-operands example with both
operands MN-major, and debug builds with a barrier timeout.

What is not: values the PTX computes from data the evaluator does not follow
(loads, floating point), which phase a wait's parity stands for, and the TMA
descriptors' boxes (host code). Run-time registers (loop counters, phases,
the TMEM base) are taken at 0, so addresses are those of stage 0 of every
ring.

Each check is shown to fail on a kernel whose generated source (or PTX)
carries a planted bug (the second half of this file).
"""
import dataclasses
import re

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.lower import driver, memory_clear
from tilegemm.lower.facts import KernelFacts, check_kernel, lint_sm100
from tilegemm.lower.facts import expected as ex
from tilegemm.lower.facts.checks import reaching_warps
from tilegemm.lower.facts.facts import STRICT
from tilegemm.model.layouts import operand_specs

from . import kernels
from .compiled_cases import (BARRIER_TIMEOUT, BLACKWELL_CASES, DEBUG_CASES, HOPPER_CASES, SINGLE_ROW_SHAPE,
                             compile_edited, compiled, lowered)

CASES = HOPPER_CASES + BLACKWELL_CASES + DEBUG_CASES


@pytest.fixture(scope="module", params=CASES, ids=str)
def kernel(request):
    return compiled(request.param)


def test_every_example_compiles_to_code_that_agrees_with_its_graph(kernel):
    low, comp = kernel
    assert check_kernel(comp.ptx, low.graph) == []


def test_one_thread_prefetches_every_tma_descriptor_at_kernel_start(kernel):
    """Each TMA descriptor (a kernel parameter) is prefetched once, by one elected thread, before any barrier is
    initialized: fetching it overlaps the set-up, as in CUTLASS's kernels."""
    low, comp = kernel
    descriptors = len(re.findall(r"\w+: cute\.CopyAtom", low.source))
    copies_by_tma = any(op.kind in ("copy_gmem_to_smem", "copy_smem_to_gmem") for op in low.graph.walk())
    assert bool(descriptors) == copies_by_tma and comp.ptx.count("prefetch.tensormap") == descriptors
    if descriptors:
        start, first = comp.ptx.index(".entry"), comp.ptx.index("prefetch.tensormap")
        assert "elect.sync" in comp.ptx[start:first] and first < comp.ptx.index("mbarrier.init")


def test_the_facts_the_checks_compare_are_read_from_every_tensor_core_kernel(kernel):
    """Guards against checks passing on nothing: the PTX facts exist wherever the graph has their ops."""
    low, comp = kernel
    facts = KernelFacts(comp.ptx)
    kinds = {op.kind for op in low.graph.walk()}
    if "copy_gmem_to_smem" in kinds:
        assert facts.inits and facts.expects and all(e.nbytes for e in facts.expects)
    if "barrier_wait" in kinds:
        assert facts.barrier_waits
    if "wgmma" in kinds:
        assert facts.wgmma_groups and all(s.b is not None for g in facts.wgmma_groups for s in g.steps)
    if "tcgen05_mma" in kinds:
        assert facts.tcgen05_groups and all(g.idesc is not None for g in facts.tcgen05_groups)
        assert facts.allocs and facts.commits


# ----------------------------------------------------------------------------- a cluster whose masks are run-time

def two_by_two_cluster(m, n, k, tile=64, tile_k=64):
    """A 2x2 cluster: blocks in a cluster row share A's tile (multicast along "cn"), blocks in a cluster column
    share B's (along "cm"). The masks are shifted by the block's position, so the PTX computes them at run time."""
    f16 = tg.float16

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), f16), grid=(tg.cdiv(m, 2 * tile), tg.cdiv(n, 2 * tile)),
               grid_names=("mc", "nc"), cluster=(2, 2), cluster_names=("cm", "cn"),
               scratch_shapes=dict(a_smem=tg.SMEM((tile, tile_k), f16, transforms=tg.mma_transforms(tile_k, f16)),
                                   b_smem=tg.SMEM((tile_k, tile), f16, transforms=tg.mma_transforms(tile, f16)),
                                   c_smem=tg.SMEM((tile, tile), f16), acc=tg.ACC((tile, tile)),
                                   loaded=tg.Barrier(num_arrivals=2),
                                   consumed=tg.ClusterBarrier(collective_axes=("cm", "cn"))))
    def shared_rows_and_columns(a, b, c, a_smem, b_smem, c_smem, acc, loaded, consumed):
        rows = tg.ds((tg.axis_index("mc") * 2 + tg.axis_index("cm")) * tile, tile)
        cols = tg.ds((tg.axis_index("nc") * 2 + tg.axis_index("cn")) * tile, tile)

        def step(ki, _):
            ks = tg.ds(ki * tile_k, tile_k)
            tg.copy_gmem_to_smem(a.at[rows, ks], a_smem, loaded.at[0], collective_axes="cn")
            tg.copy_gmem_to_smem(b.at[ks, cols], b_smem, loaded.at[0], collective_axes="cm")
            tg.barrier_wait(loaded.at[0])
            tg.wgmma(acc, a_smem, b_smem)
            tg.wgmma_wait(0)
            tg.barrier_arrive(consumed.at[0])     # every block of the cluster is done with both tiles ...
            tg.barrier_wait(consumed.at[0])       # ... before the next multicasts overwrite them
        tg.fori_loop(0, tg.cdiv(k, tile_k), step, None)
        c_smem[...] = acc[...].astype(f16)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[rows, cols])
        tg.wait_smem_to_gmem(0)
    return shared_rows_and_columns


TWO_BY_TWO = (256, 256, 128)


@pytest.fixture(scope="module")
def two_by_two():
    m, n, k = TWO_BY_TWO
    low = two_by_two_cluster(m, n, k).lower(tg.ShapeDtype((m, k), tg.float16), tg.ShapeDtype((k, n), tg.float16))
    return low, low.compile()


def test_a_2x2_cluster_computes_a_at_b_and_its_run_time_masks_agree_with_the_cluster(two_by_two):
    m, n, k = TWO_BY_TWO
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s).astype(np.float16) for s in ((m, k), (k, n)))
    out = two_by_two_cluster(m, n, k)(a, b, interpret=True)
    np.testing.assert_allclose(out.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2,
                               atol=5e-2)
    low, comp = two_by_two
    assert "<< (cm)" in low.source and "<< (cn * 2)" in low.source     # the masks depend on the block
    assert check_kernel(comp.ptx, low.graph) == []


# ----------------------------------------------------------------------------- the checks have teeth

def case(name, arch="sm_100a", shape=None, barrier_timeout=None, **config):
    """The case of example `name` built with exactly `config` (the first of them, unless `shape` is given)."""
    return next(c for c in CASES if c.name == name and c.arch == arch and c.barrier_timeout == barrier_timeout
                and dict(c.config) == config and shape in (None, c.shape))


V2, V4 = case("hopper_v2_tma_wgmma", "sm_90a"), case("hopper_v4_tuned", "sm_90a")
V4_BOUNDED = case("hopper_v4_tuned", "sm_90a", barrier_timeout=BARRIER_TIMEOUT)
FLAGSHIP_CLUSTER = case("hopper_flagship", "sm_90a", cluster_m=2)
FLAGSHIP_SINGLE_ROW = case("hopper_flagship", "sm_90a", shape=SINGLE_ROW_SHAPE)
FLAGSHIP_B_K_MAJOR = case("hopper_flagship", "sm_90a", a_layout="mk", b_layout="nk", schedule="cooperative",
                          tile_n=256)
BOTH_MN_MAJOR = case("hopper_transposed_operands", "sm_90a", a_layout="km", b_layout="kn")
B1, B4 = case("blackwell_1_basic"), case("blackwell_4_collective")
B4_BOUNDED = case("blackwell_4_collective", barrier_timeout=BARRIER_TIMEOUT)

PLANTED = {
    # planted bug: (kernel, [(generated text, replacement)], the check that must fail)
    "tx-bytes-halved": (V2, [("mbarrier_arrive_and_expect_tx(loaded + 0, 16384)",
                              "mbarrier_arrive_and_expect_tx(loaded + 0, 8192)")], "expect-tx"),
    "pair-tx-bytes-of-one-half": (B4, [(", 32768)", ", 16384)")], "expect-tx"),
    "init-count-one-short": (V2, [("mbarrier_init(loaded + index, 2)", "mbarrier_init(loaded + index, 1)")],
                             "mbarrier-init"),
    "tma-multicast-mask-forced-to-1": (FLAGSHIP_CLUSTER, [("cutlass.Int16(3)", "cutlass.Int16(1)")],
                                       "multicast-mask"),
    "commit-multicast-mask-forced-to-1": (B4, [("cutlass.Int16(3)", "cutlass.Int16(1)")], "multicast-mask"),
    "wgmma-wait-count": (V4, [("warpgroup.wait_group(1)", "warpgroup.wait_group(0)")], "wait-group"),
    "bulk-wait-without-read": (V2, [("cp_async_bulk_wait_group(0, read=False)", "cp_async_bulk_wait_group(0, "
                                                                                  "read=True)")], "wait-group"),
    "wgmma-a-k-step-not-advanced": (V2, [("a_smem_frag[None, None, k_block]", "a_smem_frag[None, None, 0]")],
                                    "mma"),
    "wgmma-a-swizzle-64": (V2, [("SmemLayoutAtomKind.K_SW128", "SmemLayoutAtomKind.K_SW64")], "mma"),
    "tcgen05-b-k-step-not-advanced": (B1, [("b_descriptors[None, None, k_block]", "b_descriptors[None, None, 0]")],
                                      "mma"),
    "tcgen05-multiplies-f16-as-bf16": (B1, [("make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16,",
                                             "make_trivial_tiled_mma(cutlass.BFloat16, cutlass.BFloat16,")], "mma"),
    "tcgen05-b-swizzle-64": (B1, [("SmemLayoutAtomKind.MN_SW128", "SmemLayoutAtomKind.MN_SW64")], "mma"),
    "tmem-over-allocated": (B1, [("tmem_allocator.allocate(128)", "tmem_allocator.allocate(256)")], "tmem-alloc"),
    "wgmma-mn-major-a-k-step-not-advanced": (BOTH_MN_MAJOR, [("a_smem_frag[None, None, k_block]",
                                                               "a_smem_frag[None, None, 0]")], "mma"),
    "single-row-a-and-c-copied-by-1d-tmas": (
        FLAGSHIP_SINGLE_ROW, [("cute.make_layout((one, ", "cute.make_layout((1, ")], "tma-forms"),
    "bounded-producer-wait-on-the-consumers-barrier": (
        V4_BOUNDED, [("tgd.mbarrier_wait_bounded(empty + ", "tgd.mbarrier_wait_bounded(full + ")], "barrier-wait"),
}


@pytest.mark.parametrize("bug", PLANTED)
def test_a_planted_lowering_bug_fails_its_check(bug):
    kernel_case, edits, check = PLANTED[bug]
    low = lowered(kernel_case)
    findings = check_kernel(compile_edited(low, *edits).ptx, low.graph)
    assert check in {f.check for f in findings}, findings


def test_a_mask_that_forgets_the_blocks_position_fails_for_the_blocks_it_is_wrong_for(two_by_two):
    low, _ = two_by_two
    findings = check_kernel(compile_edited(low, ("cutlass.Int16(3) << (cn * 2)", "cutlass.Int16(3)")).ptx, low.graph)
    wrong = [f for f in findings if f.check == "multicast-mask"]
    assert wrong and all("block (0, 1, 0)" in f.message or "block (1, 1, 0)" in f.message for f in wrong)


def edit_lines(ptx, lines, pattern, replacement):
    """The PTX with `pattern` replaced on each of the given lines (1-based): a bug planted in the compiled code.
    Every line must match, so a planted bug cannot silently stop being planted."""
    text = ptx.splitlines()
    for line in lines:
        text[line - 1], count = re.subn(pattern, replacement, text[line - 1])
        assert count, f"PTX line {line} no longer matches {pattern!r}: {text[line - 1]}"
    return "\n".join(text)


def test_a_wgmma_that_transposes_a_k_major_b_fails_the_mma_check():
    low, comp = compiled(FLAGSHIP_B_K_MAJOR)
    lines = {s.ins.line for g in KernelFacts(comp.ptx).wgmma_groups for s in g.steps}
    findings = check_kernel(edit_lines(comp.ptx, lines, r"0;\s*$", "1;"), low.graph)     # the last immediate: tnspB
    assert any("trans_b=1 (want 0)" in f.message for f in findings), findings


TCGEN05_SHAPE = (200, 264, 136)
TCGEN05_LAYOUTS = ("km", "nk")      # an MN-major A and a K-major B: both the other way round from the examples
TRANSPOSE_A = 1 << 15               # of the tcgen05 instruction descriptor: A is MN-major


@pytest.fixture(scope="module")
def tcgen05_transposed():
    low = kernels.transposed_tcgen05(*TCGEN05_SHAPE, *TCGEN05_LAYOUTS).lower(
        *operand_specs(*TCGEN05_SHAPE, tg.float16, *TCGEN05_LAYOUTS), arch="sm_100a")
    return low, low.compile()


def test_a_tcgen05_mma_of_an_mn_major_a_and_a_k_major_b_agrees_with_its_graph(tcgen05_transposed):
    low, comp = tcgen05_transposed
    assert check_kernel(comp.ptx, low.graph) == [] and lint_sm100(comp.ptx, None, low.graph) == []


def test_a_tcgen05_instruction_descriptor_that_reads_an_mn_major_a_as_k_major_fails_the_mma_check(tcgen05_transposed):
    low, comp = tcgen05_transposed
    facts = KernelFacts(comp.ptx)
    mmas = [s.ins for g in facts.tcgen05_groups for s in g.steps]
    (idesc,) = {facts.value(i.operands[3], STRICT, i) for i in mmas}
    assert idesc & TRANSPOSE_A
    movs = {facts.program.reaching_definition(i.operands[3], i.index).line for i in mmas}
    findings = check_kernel(edit_lines(comp.ptx, movs, rf"\b{idesc}\b", str(idesc & ~TRANSPOSE_A)), low.graph)
    assert any("a_major_mn=False (want True)" in f.message for f in findings), findings


def waits(case):
    """(barrier byte, parity, warps that reach it) of every barrier wait of a compiled case, and its KernelFacts."""
    low, comp = compiled(case)
    facts = KernelFacts(comp.ptx)
    return [(w.tries[0].offset, w.tries[0].parity, reaching_warps(facts, w.ins, low.graph))
            for w in facts.barrier_waits], facts


@pytest.mark.parametrize("plain,bounded", [(V4, V4_BOUNDED), (B4, B4_BOUNDED)], ids=["hopper", "blackwell"])
def test_a_bounded_wait_tests_the_barrier_and_parity_of_the_wait_it_replaces_in_the_same_warps(plain, bounded):
    plain_waits, _ = waits(plain)
    bounded_waits, facts = waits(bounded)
    assert plain_waits and bounded_waits == plain_waits
    pair_barrier = ex.storage(lowered(bounded).graph).pair_barrier     # the lowering's own wait, not bounded
    assert all(len(w.tries) > 1 for w in facts.barrier_waits if w.tries[0].offset != pair_barrier)


def test_a_bounded_wait_whose_retries_test_another_barrier_fails_the_wait_check():
    low, comp = compiled(V4_BOUNDED)
    retry = next(w for w in KernelFacts(comp.ptx).barrier_waits if len(w.tries) > 1).tries[1]
    findings = check_kernel(edit_lines(comp.ptx, [retry.ins.line], r"\]", "+8]"), low.graph)   # the next mbarrier
    assert {f.check for f in findings} == {"barrier-wait"}, findings


def test_compiling_a_kernel_whose_lowering_is_wrong_warns_naming_the_kernel(monkeypatch, tmp_path):
    real_generate = driver.generate

    def halving_the_tx_bytes(*args):      # a planted lowering bug: each copy expects half its bytes
        generated = real_generate(*args)
        return dataclasses.replace(generated, source=generated.source.replace(", 8192)", ", 4096)"))
    monkeypatch.setattr(driver, "generate", halving_the_tx_bytes)
    monkeypatch.setenv("TILEGEMM_CACHE_DIR", str(tmp_path))                   # a fresh compile, not a cached one
    memory_clear()
    try:
        lowered_ = kernels.tma_wgmma().lower(*kernels.two_row_specs())
        with pytest.warns(tg.CompiledCodeWarning, match=r"(?s)kernels\.py:\d+: .*one_row_of_tiles.*\[expect-tx\]"):
            lowered_.compile()
    finally:
        memory_clear()

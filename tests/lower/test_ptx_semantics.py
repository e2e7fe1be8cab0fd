"""The compiled code of every example agrees with its graph, read off the PTX on the CPU (tilegemm.lower.facts).

What is checked, per kernel (see tilegemm/lower/facts/checks.py): every
mbarrier's init count (arrivals x cluster blocks x warps); every expect_tx's
byte count against the bytes of the copies landing on that barrier (both
halves of a 2-CTA copy); the form of the TMA loads on each barrier (plain,
multicast, 2-CTA); the multicast mask of every multicast TMA load and tcgen05
commit, for every block of the cluster (also when the PTX shifts it by the
block's rank at run time); for every group of MMA instructions the tcgen05
instruction descriptor or the wgmma shape, types and transposes, the
shared-memory descriptors' swizzle, SBO, LBO, base offset and version, the
K-step advance of the start address, the A and B buffers they point into and
the TMEM accumulator column; wgmma and bulk-copy wait-group counts; the TMEM
allocation size.

What is not: values the PTX computes from data the evaluator does not follow
(loads, floating point), which threads reach which instruction, and the TMA
descriptors' boxes (host code). Run-time registers (loop counters, the TMEM
base) are taken at 0, so addresses are those of stage 0 of every ring.

Each check is shown to fail on a kernel whose generated source carries a
planted bug (the second half of this file).
"""
import dataclasses

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.lower import driver, memory_clear
from tilegemm.lower.facts import KernelFacts, check_kernel

from . import kernels
from .compiled_cases import BLACKWELL_CASES, HOPPER_CASES, compile_edited, compiled, lowered

CASES = HOPPER_CASES + BLACKWELL_CASES


@pytest.fixture(scope="module", params=CASES, ids=str)
def kernel(request):
    return compiled(request.param)


def test_every_example_compiles_to_code_that_agrees_with_its_graph(kernel):
    low, comp = kernel
    assert check_kernel(comp.ptx, low.graph) == []


def test_the_facts_the_checks_compare_are_read_from_every_tensor_core_kernel(kernel):
    """Guards against checks passing on nothing: the PTX facts exist wherever the graph has their ops."""
    low, comp = kernel
    facts = KernelFacts(comp.ptx)
    kinds = {op.kind for op in low.graph.walk()}
    if "copy_gmem_to_smem" in kinds:
        assert facts.inits and facts.expects and all(e.nbytes for e in facts.expects)
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

def case(name, arch="sm_100a", **kw):
    return next(c for c in CASES if c.name == name and c.arch == arch and all(getattr(c, k) == v
                                                                              for k, v in kw.items()))


V2, V4 = case("hopper_v2_tma_wgmma", "sm_90a"), case("hopper_v4_tuned", "sm_90a")
FLAGSHIP_CLUSTER = case("hopper_flagship", "sm_90a", cluster_m=2)
B1, B4 = case("blackwell_1_basic"), case("blackwell_4_collective")

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
    "wgmma-a-k-step-not-advanced": (V2, [("a_frag[None, None, k_block]", "a_frag[None, None, 0]")], "mma"),
    "wgmma-a-swizzle-64": (V2, [("SmemLayoutAtomKind.K_SW128", "SmemLayoutAtomKind.K_SW64")], "mma"),
    "tcgen05-b-k-step-not-advanced": (B1, [("b_frag[None, None, k_block]", "b_frag[None, None, 0]")], "mma"),
    "tcgen05-multiplies-f16-as-bf16": (B1, [("make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16,",
                                             "make_trivial_tiled_mma(cutlass.BFloat16, cutlass.BFloat16,")], "mma"),
    "tcgen05-b-swizzle-64": (B1, [("SmemLayoutAtomKind.MN_SW128", "SmemLayoutAtomKind.MN_SW64")], "mma"),
    "tmem-over-allocated": (B1, [("tmem_allocator.allocate(128)", "tmem_allocator.allocate(256)")], "tmem-alloc"),
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


def test_compiling_a_kernel_whose_lowering_is_wrong_warns_naming_the_kernel(monkeypatch, tmp_path):
    real_generate = driver.generate

    def halving_the_tx_bytes(graph, arch):      # a planted lowering bug: each copy expects half its bytes
        generated = real_generate(graph, arch)
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

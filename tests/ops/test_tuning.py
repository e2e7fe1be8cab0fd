"""tg.tune_matmul without a GPU: which designs it times, how it chooses, what it records, and what tg.matmul does
with a record (for f16/bf16 and for each way fp8 is scaled); what it refuses."""
import json

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.lang.trace import ShapeDtype
from tilegemm.ops import blockscaling, designs, dispatch, epilogue, tuned, tuning

H200 = ("NVIDIA H200", 132)


def problem(m, n, k, dtype="float16", layouts=("mk", "kn")):
    return tuned.Problem(m, n, k, dtype, *H200, *layouts)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh tuning cache (and compile cache) for the test."""
    monkeypatch.setenv("TILEGEMM_CACHE_DIR", str(tmp_path))
    return tmp_path


class TestCandidates:
    def test_the_models_pick_comes_first(self):
        p = problem(3000, 5000, 2000)
        (first, _), *_ = tuning.candidates(p)
        assert first == dict(designs.choose(3000, 5000, 2000, "float16", *H200))

    def test_a_ragged_shape_times_the_swapped_128_row_tile_in_clusters_beside_the_pick(self):
        found = [params for params, _ in tuning.candidates(problem(777, 3000, 1400))]
        swapped = [p for p in found if p.get("swap_ab") and p.get("tile_m") == designs.SWAPPED_TILE_M]
        assert {p["tile_n"] for p in swapped} == {160}      # 120 tiles of 128 x 160: one round
        assert {p.get("cluster_m", 1) for p in swapped} >= set(tuning.CLUSTER_SIZES)
        # the pick's 128x192 tiles in clusters of four would take two rounds (32 units, 30 clusters held): the
        # model predicts them far slower (run 51 measured 0.45-0.51x cuBLAS), so they are not timed
        assert not any(p["tile_n"] == 192 and p.get("cluster_m") == 4 for p in found)

    def test_clusters_of_four_launch_the_30_the_h200_holds_not_33(self):
        found = [params for params, _ in tuning.candidates(problem(777, 3000, 1400))]
        assert {p["num_sms"] for p in found if p.get("cluster_m") == 4} == {120}
        assert {p["num_sms"] for p in found if p.get("cluster_m", 1) < 4} == {132}

    def test_the_pick_and_the_swapped_tile_run_plain_and_in_every_cluster_size(self, monkeypatch):
        monkeypatch.setattr(tuning, "PREDICTED_SPAN", 10.0)   # however far from the pick the model puts them
        p = problem(3000, 5000, 2000)
        found = [params for params, _ in tuning.candidates(p)]
        def plain(q):   # the design unclustered, however it launches the next call
            return {key: v for key, v in tuning.in_clusters(p, q, 1).items() if key != "trigger_dependents"}
        for base in (found[0], tuning.swapped_tile(p)):
            sizes = {q.get("cluster_m", 1) for q in found if plain(q) == plain(base)}
            assert sizes == {1, *tuning.CLUSTER_SIZES}

    def test_split_k_designs_are_timed_but_never_in_clusters(self):
        found = [params for params, _ in tuning.candidates(problem(128, 4096, 14336, layouts=("mk", "nk")))]
        assert any(p.get("split_k", 1) > 1 for p in found)
        assert not any(p.get("split_k", 1) > 1 and p.get("cluster_m", 1) > 1 for p in found)

    def test_no_clusters_are_timed_where_the_pick_streams_a_weight(self):
        # the model bounds decode by DRAM or L2: 44 of run 60's 45 cluster trials there ran slower, one as fast
        for m in (1, 16, 64, 128):
            found = tuning.candidates(problem(m, 8192, 8192, layouts=("mk", "nk")))
            assert found and not any(p.get("cluster_m", 1) > 1 for p, _ in found)

    def test_designs_predicted_far_slower_than_the_pick_are_not_timed(self):
        found = tuning.candidates(problem(128, 4096, 14336, layouts=("mk", "nk")))
        pick_s = found[0][1]
        assert all(s <= tuning.PREDICTED_SPAN * pick_s for _, s in found)
        # the swapped 128x128 tile, predicted 2.4x slower at this decode shape, is left out
        assert not any(p.get("swap_ab") and p.get("tile_m") == 128 for p, _ in found)

    def test_no_design_is_timed_twice(self):
        found = [tuple(sorted(p.items())) for p, _ in tuning.candidates(problem(2048, 2048, 2048))]
        assert len(found) == len(set(found))

    def test_each_design_launches_as_tg_matmul_would_run_it_so_none_is_timed_twice_under_one_label(self):
        # on the H100 at 640x6000x4000 the swapped 128x128 tile in clusters of four came both from the model's
        # ranking (launching the next call early) and from the swapped tile (not), and was timed twice under one
        # label (benchmarks/RESULTS.md run 285)
        p = tuned.Problem(640, 6000, 4000, "float16", "NVIDIA H100 80GB HBM3", 132, "mk", "kn")
        found = [params for params, _ in tuning.candidates(p)]
        labels = [designs.label(params) for params in found]
        assert len(labels) == len(set(labels))
        for params in found:
            prediction = designs.design_prediction(640, 6000, 4000, tg.float16, p.device, params)
            assert params == designs.with_trigger(params, prediction) == tuning.as_run(p, params)[0]


class TestChoice:
    def trials(self, *seconds):
        return [tuning.Trial(dict(tile_n=128 + 16 * i, schedule="pingpong"), 1e-5, measured_s=s)
                for i, s in enumerate(seconds)]

    def test_the_pick_stays_unless_another_design_is_faster_by_the_margin(self):
        close = self.trials(1.00e-5, 0.99e-5)
        assert tuning.chosen(close) is close[0]
        clear = self.trials(1.00e-5, 0.97e-5, 0.90e-5)
        assert tuning.chosen(clear) is clear[2]

    def test_designs_that_failed_their_check_are_not_chosen(self):
        trials = self.trials(1.0e-5, 0.5e-5)
        trials[1].reason = "its output differs from the float64 product"
        assert tuning.chosen(trials) is trials[0]


class TestRecords:
    PARAMS = dict(tile_m=128, tile_n=160, schedule="cooperative", swap_ab=True, epi_tile_n=32, stages=4,
                  cluster_m=4, num_sms=120, a_layout="mk", b_layout="kn")

    def test_tg_matmul_runs_a_recorded_design_for_its_problem_only(self, cache_dir):
        p = problem(777, 3000, 1400)
        tuned.record(p, self.PARAMS, 13.6e-6, 17.1e-6)
        assert dict(dispatch.choose_config(777, 3000, 1400, "float16", *H200)) == self.PARAMS
        assert dispatch.choose_config(777, 3000, 1400, "bfloat16", *H200) == designs.choose(
            777, 3000, 1400, "bfloat16", *H200)
        assert dispatch.choose_config(777, 3000, 1400, "float16", *H200, "mk", "nk") == designs.choose(
            777, 3000, 1400, "float16", *H200, "mk", "nk")

    def test_a_fused_or_batched_call_keeps_the_models_design(self, cache_dir):
        tuned.record(problem(777, 3000, 1400), self.PARAMS, 13.6e-6, 17.1e-6)
        assert dispatch.choose_config(777, 3000, 1400, "float16", *H200, fused=True) == designs.choose(
            777, 3000, 1400, "float16", *H200, fused=True)
        assert dispatch.choose_config(777, 3000, 1400, "float16", *H200, batch=2) == designs.choose(
            777, 3000, 1400, "float16", *H200, batch=2)

    def test_one_kernel_callers_do_not_get_a_recorded_split_k_design(self, cache_dir):
        split = dict(tile_m=64, tile_n=128, schedule="pingpong", split_k=2, stages=6, epi_tile_n=64, num_sms=132,
                     a_layout="mk", b_layout="nk")
        tuned.record(problem(128, 4096, 14336, layouts=("mk", "nk")), split, 36e-6, 37e-6)
        assert dict(dispatch.choose_config(128, 4096, 14336, "float16", *H200, "mk", "nk")) == split
        assert dict(dispatch.choose_config(128, 4096, 14336, "float16", *H200, "mk", "nk",
                                           split=1)).get("split_k", 1) == 1

    def test_records_persist_in_the_cache_dir_with_what_was_measured(self, cache_dir):
        tuned.record(problem(777, 3000, 1400), self.PARAMS, 13.6e-6, 17.1e-6)
        (entry,) = json.loads((cache_dir / tuned.TunedDesigns.FILE_NAME).read_text()).values()
        assert entry == {"params": self.PARAMS, "seconds": 13.6e-6, "model_pick_seconds": 17.1e-6,
                         "shape": [777, 3000, 1400]}
        assert tuned.TunedDesigns(cache_dir).get(problem(777, 3000, 1400).key())["params"] == self.PARAMS

    def test_a_record_names_the_gpu_the_problem_and_the_code_that_measured_it(self):
        key = problem(777, 3000, 1400).key()
        for part in ("NVIDIA H200", "132 SMs", "777x3000x1400 float16 (mk/kn)", tuned.code_digest()):
            assert part in key

    def test_a_record_in_another_cache_dir_is_not_seen(self, cache_dir, tmp_path_factory, monkeypatch):
        tuned.record(problem(777, 3000, 1400), self.PARAMS, 13.6e-6, 17.1e-6)
        monkeypatch.setenv("TILEGEMM_CACHE_DIR", str(tmp_path_factory.mktemp("elsewhere")))
        assert tuned.lookup(problem(777, 3000, 1400)) is None


class TestRefusals:
    def test_host_arrays_are_refused_they_would_time_copies(self):
        a, b = np.ones((64, 32), np.float16), np.ones((32, 48), np.float16)
        with pytest.raises(tg.ArgumentError, match="device arrays"):
            tg.tune_matmul(a, b)

    def test_scales_are_refused_as_tg_matmul_refuses_them(self, monkeypatch):
        monkeypatch.setattr(tuning, "library_of", lambda x: "torch")   # as if on the GPU: the arguments are checked
        a = np.ones((64, 32), tg.float8_e4m3fn)
        with pytest.raises(tg.ArgumentError, match="scale_a= and scale_b= together"):
            tg.tune_matmul(a, a.T, scale_a=np.ones((64, 1), np.float32))

    def test_mismatched_operands_are_refused_as_tg_matmul_refuses_them(self):
        with pytest.raises(tg.ArgumentError, match=r"a \[M, K\] and b \[K, N\]"):
            tg.tune_matmul(np.ones((64, 32), np.float16), np.ones((48, 32), np.float16))


class TestShowing:
    def tuning(self):
        trials = [tuning.Trial(dict(tile_n=192, schedule="pingpong"), 16.15e-6, measured_s=17.98e-6, error=2e-4),
                  tuning.Trial(dict(tile_m=128, tile_n=160, schedule="cooperative", swap_ab=True, cluster_m=4),
                               14.5e-6, measured_s=14.3e-6, error=2e-4),
                  tuning.Trial(dict(tile_n=128, schedule="cooperative"), 20e-6, reason="its output differs")]
        return tuning.Tuning(problem(777, 3000, 1400), trials, trials[1], recorded=True)

    def test_the_text_names_the_problem_the_choice_and_every_trial(self):
        lines = repr(self.tuning()).splitlines()
        assert lines[0].startswith("tg.tune_matmul 777x3000x1400 float16 (mk/kn) on NVIDIA H200: filling, swapped 128-row: "
                                   "128x160 cooperative, 4 stages, clusters of 4, 1.257x the model's pick (recorded")
        assert lines[2].startswith(" * filling, swapped 128-row: 128x160") and "14.30 us" in lines[2]
        assert "not" not in lines[1] and lines[3].rstrip().endswith("its output differs")

    def test_notebooks_show_it_as_a_table_with_the_choice_in_bold(self):
        t = self.tuning()
        assert "<b>filling, swapped 128-row: 128x160 cooperative, 4 stages, clusters of 4</b>" in t._repr_html_()
        rows = t._repr_markdown_().splitlines()
        assert rows[2] == "|  | design | predicted | measured | vs the model's pick | check |"
        assert rows[6] == "|  | classic 128-row: 128x128 cooperative, 4 stages | 20.00 us | - |  | its output differs |"


def assert_same_float64_sums(actual, expected):
    """The same float64 products summed in another order: equal to rounding, which is relative to the largest
    entry (an entry near zero after cancellation keeps only the absolute error of the sum)."""
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


class TestCheckSample:
    @pytest.mark.parametrize("layouts", [("mk", "kn"), ("km", "nk")])
    def test_the_sample_is_the_float64_product_of_the_sampled_rows_and_columns(self, layouts):
        torch = pytest.importorskip("torch")
        m, n, k = 300, 200, 48
        g = torch.Generator().manual_seed(0)
        a, b = torch.randn(m, k, generator=g).half(), torch.randn(k, n, generator=g).half()
        stored = (a if layouts[0] == "mk" else a.T.contiguous(), b if layouts[1] == "kn" else b.T.contiguous())
        rows, cols, reference = tuning._sample(dispatch.Call(problem(m, n, k, layouts=layouts), stored=stored))
        assert len(rows) == len(cols) == tuning.SAMPLE and len(set(rows)) == tuning.SAMPLE
        assert_same_float64_sums(reference, (a.double() @ b.double()).numpy()[np.ix_(rows, cols)])


def fp8_call(m, n, k, kind, out_dtype=None, promote=False):
    """The dispatch.Call of tg.matmul(a, w.T, ...) on fp8 host arrays with scales of `kind` ('tensor', 'row',
    'block' (row-major), or None), budgeted for an H200, and its arrays (a, w, scale_a, scale_b)."""
    rng = np.random.default_rng(0)
    a, w = (rng.standard_normal(shape, dtype=np.float32).astype(tg.float8_e4m3fn) for shape in ((m, k), (n, k)))
    kb, nb = blockscaling.blocks(k), blockscaling.blocks(n)
    shapes = {"tensor": ((), ()), "row": ((m, 1), (1, n)), "block": ((m, kb), (kb, nb))}
    scales = () if kind is None else tuple(rng.uniform(0.5, 2, shape).astype(np.float32) for shape in shapes[kind])
    call = dispatch.resolve(a, w.T, dispatch._spec(a, "a"), dispatch._spec(w.T, "b"), scales, out_dtype=out_dtype,
                            promote=promote, interpret=True)
    return call, (a, w, *scales)


class TestScaledCalls:
    def test_a_problem_names_what_the_call_adds_to_the_product(self):
        m, n, k = 200, 264, 320
        names = {kind: fp8_call(m, n, k, kind)[0].problem.call for kind in (None, "tensor", "row", "block")}
        assert names == {None: "-> bf16",
                         "tensor": "scaled(scale_a [1, 1], scale_b [1, 1]) -> bf16",
                         "row": "scaled(scale_a [200, 1], scale_b [1, 264]) -> bf16",
                         "block": "block scales mk/kn -> bf16"}
        promoted = fp8_call(m, n, k, "tensor", out_dtype=np.float32, promote=True)[0].problem
        assert promoted.call == "promoted scaled(scale_a [1, 1], scale_b [1, 1]) -> f32"
        assert promoted.name.endswith("(mk/nk) promoted scaled(scale_a [1, 1], scale_b [1, 1]) -> f32")

    def test_a_callers_own_epilogue_function_is_never_keyed(self):
        plain = epilogue.fused(None, {}, 64, 64, None, tg.float16)
        own = epilogue.fused(lambda acc: acc * 2, {}, 64, 64, None, tg.float16)
        assert tuned.call_key() == "" and tuned.call_key(plain) == "-> f16" and tuned.call_key(own) is None
        p = tuned.Problem(64, 64, 64, "float16", *H200, "mk", "kn", None)
        assert tuned.lookup(p) is None
        with pytest.raises(ValueError, match="own epilogue"):
            tuned.record(p, {}, 1e-5, 1e-5)

    def test_a_record_for_one_scaling_is_run_by_calls_scaled_that_way_only(self, cache_dir):
        tensor, _ = fp8_call(2048, 2048, 2048, "tensor")
        row, _ = fp8_call(2048, 2048, 2048, "row")
        picked = dict(tensor.choose())
        recorded = dict(tuning.in_clusters(tensor.problem, picked, 2), trigger_dependents=False)
        assert recorded != picked
        tuned.record(tensor.problem, recorded, 1e-5, 1.1e-5)
        assert dict(tensor.choose()) == recorded
        assert dict(row.choose()) == picked == dict(designs.choose(2048, 2048, 2048, "float8_e4m3fn", "h200", 132,
                                                                   "mk", "nk", fused=row.fused))

    def test_a_block_scaled_record_is_run_by_its_calls_but_not_by_promotion_or_a_split_it_cannot_keep(self,
                                                                                                      cache_dir):
        block, _ = fp8_call(4096, 7168, 16384, "block")
        promoted, _ = fp8_call(4096, 7168, 16384, "tensor", promote=True)
        ranked = [params for params, _ in designs.block_scaled_predictions(
            4096, 7168, 16384, "float8_e4m3fn", "h200", 132, block.block_scales)]
        tall = next(params for params in ranked if params["tile_m"] == 256)
        assert dict(block.choose()) == ranked[0] != tall
        tuned.record(block.problem, tall, 0.7e-3, 0.75e-3)
        assert dict(block.choose()) == dict(block.choose(batch_invariant=True)) == tall
        assert dict(promoted.choose())["tile_m"] == 128
        tuned.record(block.problem, dict(tall, split_k=2, split_reduction="last_slice"), 0.7e-3, 0.75e-3)
        assert dict(block.choose(batch_invariant=True)) == ranked[0]   # one pass, whatever M: not the record

    def test_block_scaled_calls_time_the_models_best_block_scaled_designs_at_each_ring_depth(self):
        call, _ = fp8_call(4096, 7168, 16384, "block")
        found = tuning.candidates(call.problem, fused=call.fused, block_scales=call.block_scales)
        ranked = designs.block_scaled_predictions(4096, 7168, 16384, "float8_e4m3fn", "h200", 132,
                                                  call.block_scales)
        best = [params for params, _ in ranked[:tuning.TOP_K]]
        promoted = [dict(params, l2_promotion=256) for params in best if params["tile_m"] == 256]
        # 128x128 fits five stages; the 256-row tiles also load asking L2 for 256 bytes a miss
        assert [params for params, _ in found] == best + [dict(best[0], stages=4)] + promoted
        assert {(p["tile_m"], p["tile_n"]) for p, _ in found} == {(128, 128), (256, 128), (256, 64)}
        assert len(promoted) == 2
        assert not any(designs.cluster_size(p) > 1 or p.get("swap_ab") for p, _ in found)

    def test_designs_that_cannot_fuse_the_epilogue_are_not_timed(self):
        residual = epilogue.fused(lambda acc, r: acc + r, {"r": ShapeDtype((64, 4096), tg.float16)}, 64, 4096, None,
                                  tg.float16)   # an [M, N] tensor: no swap-AB design runs it on C^T's tiles
        p = problem(64, 4096, 4096, layouts=("mk", "nk"))
        assert any(q.get("swap_ab") for q, _ in tuning.candidates(p))
        found = tuning.candidates(p, fused=residual)
        assert found and not any(q.get("swap_ab") and q.get("split_k", 1) == 1 for q, _ in found)
        assert found[0][0] == dict(designs.choose(64, 4096, 4096, "float16", *H200, "mk", "nk", fused=residual))


class TestScaledCheckSample:
    def test_a_scaled_calls_sample_is_the_float64_product_times_its_scales(self):
        call, (a, w, sa, sb) = fp8_call(300, 200, 64, "row")
        rows, cols, reference = tuning._sample(call)
        full = (a.astype(np.float64) @ w.astype(np.float64).T) * sa * sb
        assert_same_float64_sums(reference, full[np.ix_(rows, cols)])

    def test_a_block_scaled_calls_sample_is_the_product_of_the_dequantized_operands(self):
        m, n, k = 300, 200, 320    # partial 128-wide blocks along K and N
        call, (a, w, sa, sb) = fp8_call(m, n, k, "block")
        rows, cols, reference = tuning._sample(call)
        block = blockscaling.BLOCK
        a_deq = a.astype(np.float64) * np.repeat(sa, block, axis=1)[:, :k]
        w_deq = w.astype(np.float64) * np.repeat(np.repeat(sb.T, block, axis=0), block, axis=1)[:n, :k]
        assert_same_float64_sums(reference, (a_deq @ w_deq.T)[np.ix_(rows, cols)])

    def test_torch_tensors_sample_as_they_are_stored_block_scales_as_torch_scaled_mm_takes_them(self):
        torch = pytest.importorskip("torch")
        m, n, k = 300, 200, 320
        g = torch.Generator().manual_seed(0)
        a, w = (torch.randn(*shape, generator=g).to(torch.float8_e4m3fn) for shape in ((m, k), (n, k)))
        kb, nb = blockscaling.blocks(k), blockscaling.blocks(n)
        sa, sb = (0.5 + torch.rand(*shape, generator=g) for shape in ((kb, m), (nb, kb)))
        sa, sb = sa.t(), sb.t()   # scale_a M-major, scale_b the transpose of a row-major [Nb, Kb]
        call = dispatch.resolve(a, w.T, dispatch._spec(a, "a"), dispatch._spec(w.T, "b"), (sa, sb), interpret=True)
        assert call.problem.call == "block scales km/nk -> bf16"
        rows, cols, reference = tuning._sample(call)
        block = blockscaling.BLOCK
        a_deq = a.double() * sa.double().repeat_interleave(block, dim=1)[:, :k]
        w_deq = w.double() * sb.double().t().repeat_interleave(block, 0).repeat_interleave(block, 1)[:n, :k]
        assert_same_float64_sums(reference, (a_deq @ w_deq.t()).numpy()[np.ix_(rows, cols)])


def row_scale_and_bias(acc, scale, bias):
    return acc * scale + bias


@pytest.mark.slow
@pytest.mark.parametrize("m, n, k, kind", [(777, 4096, 4096, "f16-epilogue"), (777, 4096, 4096, "row"),
                                           (64, 14336, 4096, "row"), (1000, 1032, 1040, "block"),
                                           (8192, 8192, 8192, "tensor")])
def test_every_design_tuning_times_compiles_for_sm90a(m, n, k, kind, cache_dir):
    # the swapped 128x200 tiles at 777x4096x4096 failed to compile with an epilogue reading tensors (an 8-column
    # last store slice; benchmarks/RESULTS.md run 194), and tg.matmul picked them there
    if kind == "f16-epilogue":
        fused = epilogue.fused(row_scale_and_bias, {"scale": ShapeDtype((m, 1), tg.float32),
                                                    "bias": ShapeDtype((n,), tg.float32)}, m, n, None, tg.float16)
        p, block_scales, dtype = problem(m, n, k), None, "float16"
    else:
        call, _ = fp8_call(m, n, k, kind)
        p, fused, block_scales, dtype = call.problem, call.fused, call.block_scales, "float8_e4m3fn"
    found = tuning.candidates(p, fused=fused, block_scales=block_scales)
    assert len(found) > 1
    for params, _ in found:
        designs.build(m, n, k, dtype, tuple(sorted(params.items())), fused, block_scales).compile()


class TestFailures:
    def test_a_compile_failure_says_where_the_source_is_and_what_cute_dsl_found(self):
        error = tg.CompileError("CuTe DSL failed to compile /cache/source/hopper_flagship_ab12.py:\n"
                                "error[INTERNAL]: The compiler could not build valid IR for this code.\n"
                                "  error: IR verification failed: 'vector.broadcast' op source rank higher")
        assert tuning.failure(error) == ("CompileError: CuTe DSL failed to compile /cache/source/hopper_flagship_ab12"
                                         ".py: (error: IR verification failed: 'vector.broadcast' op source rank "
                                         "higher)")

    def test_a_one_line_refusal_is_given_whole(self):
        assert tuning.failure(ValueError("split_k=5 leaves the last slice empty")) == \
            "ValueError: split_k=5 leaves the last slice empty"

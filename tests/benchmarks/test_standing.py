"""benchmarks/standing.py reads each report a device run writes and stamps every figure with its run."""
import json

import standing  # noqa: E402

CALLS = {"rows": [
    {"contender": "call: tg.matmul(a, b)", "m": 2048, "n": 2048, "k": 2048, "dtype": "float16", "vs_reference": 0.97},
    {"contender": "call: tg.matmul(a, b)", "m": 2048, "n": 2048, "k": 2048, "dtype": "bfloat16", "vs_reference": 0.5},
    {"contender": "kernel: tg.matmul's kernel (graph)", "m": 2048, "n": 2048, "k": 2048, "dtype": "float16",
     "vs_reference": 1.01},
    {"contender": "call: tg.matmul(a, w.T)", "m": 8192, "n": 8192, "k": 8192, "dtype": "float16", "vs_reference": 1.04},
], "host_overhead": {"call_overhead_us": 9.5}}


def test_call_figures_are_the_float16_user_call_rows_and_the_host_overhead():
    assert standing.from_calls(CALLS) == {"user_call_ratio_2048": 0.97, "wt_layout_ratio_8192": 1.04,
                                          "call_overhead_us": 9.5}


def test_fuzz_and_sanitizer_figures_are_read_from_their_summaries():
    fuzz = {"summary": {"fuzz_bad_calls": 251, "fuzz_wrong_error_type": 0, "fuzz_silent": 0, "fuzz_faults": 0,
                        "fuzz_good_shapes": 200, "fuzz_good_correct": 200, "cases": 451}}
    assert standing.from_fuzz(fuzz)["fuzz_bad_calls"] == 251 and "cases" not in standing.from_fuzz(fuzz)
    assert standing.from_sanitizer({"memcheck": 0, "sanitizer_errors": 0}) == {"sanitizer_errors": 0}


def test_an_update_keeps_other_keys_and_stamps_the_new_ones(tmp_path):
    path = tmp_path / "standing.json"
    path.write_text(json.dumps({"mutation_score": {"value": 0.9, "date": "d", "run": "r", "device": "CPU"}}))
    standing.update({"fuzz_faults": 0, "call_overhead_us": 9.51234}, "RESULTS.md run 30", "2026-12-01", "H200",
                    path=str(path))
    written = json.loads(path.read_text())
    assert written["mutation_score"]["value"] == 0.9
    assert written["call_overhead_us"] == {"value": 9.5123, "date": "2026-12-01", "run": "RESULTS.md run 30",
                                           "device": "H200"}


def test_tensor_parallel_figures_are_its_summary():
    report = {"summary": {"tp2_speedup": 1.8, "tp2_vs_torch": 1.02, "rounds": 21}}
    assert standing.from_tensor_parallel(report) == {"tp2_speedup": 1.8, "tp2_vs_torch": 1.02}


def test_fp8_figures_are_the_bench_fp8_summary():
    figures = {"fp8_tensorwise_ratio_8192": 1.06, "fp8_rowwise_ratio_8192": 1.1,
               "fp8_blockscaled_tflops_4096x7168x16384": 1420.0}
    report = {"meta": {"summary": figures}, "results": []}
    assert standing.from_fp8(report) == figures


def test_epilogue_figures_are_its_summary():
    report = {"summary": {"fused_epilogue_ratio_4096": 1.08, "fused_vs_compile_ratio_4096": 1.03}, "rows": []}
    assert standing.from_epilogue(report) == {"fused_epilogue_ratio_4096": 1.08, "fused_vs_compile_ratio_4096": 1.03}

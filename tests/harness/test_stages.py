"""harness.stages: the kernels.md stage of each launch name, and per-stage times from a timing dict."""
from harness.stages import stage_names, stage_times


def test_stage_names_and_gpu_stage_times():
    assert stage_names(["k_gate", "k_gate"]) == ["gate", "gate"]
    assert stage_names(["grouped_gemm_up"]) == ["grouped_gemm"]  # one GEMM: not numbered
    # the FP8 GEMM is its own stage (not grouped_gemm), numbered apart from a bf16 GEMM in the same row
    assert stage_names(["grouped_gemm_fp8[512x256]"]) == ["grouped_gemm_fp8"]
    assert stage_names(["grouped_gemm_fp8[a]", "swiglu", "grouped_gemm_fp8[b]", "grouped_gemm[c]"]) == [
        "grouped_gemm_fp8.up", "swiglu", "grouped_gemm_fp8.down", "grouped_gemm"]
    timing = {"basis": "measured", "launch_us": [["gemm_a", 5.0], ["swiglu_k", 1.0], ["gemm_b", 7.0],
                                                 ["gate", 1.5], ["gate", 0.5]]}
    assert stage_times(timing) == {"grouped_gemm.up": 5.0, "swiglu": 1.0, "grouped_gemm.down": 7.0,
                                          "gate": 2.0}

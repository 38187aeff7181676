"""harness/gemm_work.py: useful vs padded FLOPs of GEMM rows."""
from contract import reference as ref
from contract.kernels import get_kernel
from contract.presets import get_preset
from harness.gemm_work import gemm_work


def test_layer_counts_both_gemms_over_the_rows_align_pads_to(seed):
    p = get_preset("tiny")
    inputs = get_kernel("layer").make_inputs(p, "imbalanced", seed)
    padded = int(ref.align(ref.gate(inputs["logits"], inputs["bias"], p)["topk_ids"], p)["total_padded"][0])
    work = gemm_work("layer", inputs, p)
    assert work["padded_rows"] == padded > p.slots
    assert work["useful_flops"] == 2 * p.slots * 3 * p.I * p.H  # up (2I x H) and down (H x I)
    assert work["padded_flops"] == 2 * padded * 3 * p.I * p.H and work["BM"] == p.BM


def test_other_kernels_have_no_gemm_work(seed):
    p = get_preset("tiny")
    assert gemm_work("swiglu", get_kernel("swiglu").make_inputs(p, "balanced", seed), p) is None


def test_fp8_grouped_gemm_counts_its_one_gemm_over_total_padded(seed):
    p = get_preset("tiny")
    for variant, (n, kd) in (("up", (2 * p.I, p.H)), ("down", (p.H, p.I))):
        inputs = get_kernel("grouped_gemm_fp8").make_inputs(p, "imbalanced", seed, variant=variant)
        padded = int(inputs["total_padded"][0])
        work = gemm_work("grouped_gemm_fp8", inputs, p)
        assert work["padded_rows"] == padded and work["routed_rows"] == p.slots
        assert work["useful_flops"] == 2 * p.slots * n * kd and work["padded_flops"] == 2 * padded * n * kd

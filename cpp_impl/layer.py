"""The whole MoE layer on the CUDA C++ kernels (kernels.md "The layer"): contract.layer's composition, bf16 or fp8
(chosen by the arguments), with this package's kernels; the fp8 variant's GEMMs are cpp_impl.grouped_gemm_fp8
(e4m3 dequantised to bf16 in shared memory, wmma)."""
from __future__ import annotations

from contract.layer import check_layer_args, intermediate_specs, is_fp8, run_layer  # noqa: F401 - API
from cpp_impl import act_quant, align, combine, gate, permute, swiglu


def grouped_gemm_run():
    """cpp_impl.grouped_gemm.run, imported on use (a test swaps in a stand-in here)."""
    from cpp_impl import grouped_gemm

    return grouped_gemm.run


def grouped_gemm_fp8_run():
    """cpp_impl.grouped_gemm_fp8.run, imported on use."""
    from cpp_impl import grouped_gemm_fp8

    return grouped_gemm_fp8.run


def run(backend, args, preset, **params):
    """Run the layer: args logits, bias, x, W1, W2 (and W1_scale, W2_scale for fp8) in; out, q, scale out. Returns
    every launch record in order."""
    check_layer_args("cpp layer", args, preset, params)
    stages = {"act_quant": act_quant.run, "gate": gate.run, "align": align.run, "permute": permute.run,
              "permute_scales": permute.run_scales, "swiglu": swiglu.run, "combine": combine.run}
    if is_fp8(args):
        stages["grouped_gemm_fp8"] = grouped_gemm_fp8_run()
    else:
        stages["grouped_gemm"] = grouped_gemm_run()
    return run_layer(backend, args, preset, stages)

"""The whole MoE layer on the hand-written PTX kernels (kernels.md "The layer"): contract.layer's composition, bf16
or fp8 (chosen by the arguments), with this package's kernels; the fp8 variant's GEMMs are the grouped_gemm_fp8
ladder's top rung (ptx_impl.grouped_gemm_fp8.run without a rung)."""
from __future__ import annotations

from contract.layer import check_layer_args, intermediate_specs, is_fp8, run_layer  # noqa: F401 - API
from ptx_impl import act_quant, align, combine, gate, permute, swiglu


def _grouped_gemm_run():
    from ptx_impl import grouped_gemm  # NOTE: imported on use: it is written (and templated) in its own module

    return grouped_gemm.run


def _grouped_gemm_fp8_run():
    from ptx_impl import grouped_gemm_fp8  # the ladder: its run() without `rung` launches the top rung

    return grouped_gemm_fp8.run


def run(backend, args, preset, **params):
    """Run the layer: args logits, bias, x, W1, W2 (and W1_scale, W2_scale for fp8) in; out, q, scale out. Returns
    every launch record in order."""
    check_layer_args("ptx layer", args, preset, params)
    stages = {"act_quant": act_quant.run, "gate": gate.run, "align": align.run, "permute": permute.run,
              "permute_scales": permute.run_scales, "swiglu": swiglu.run, "combine": combine.run}
    if is_fp8(args):
        stages["grouped_gemm_fp8"] = _grouped_gemm_fp8_run()
    else:
        stages["grouped_gemm"] = _grouped_gemm_run()
    return run_layer(backend, args, preset, stages)

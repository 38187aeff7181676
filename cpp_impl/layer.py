"""The whole MoE layer on the CUDA C++ kernels (kernels.md "The layer"): contract.layer's composition of gate,
align, permute, act_quant, grouped_gemm (up and down), swiglu and combine, with this package's kernels."""
from __future__ import annotations

from contract.layer import check_layer_args, intermediate_specs, run_layer  # noqa: F401 - intermediate_specs: API
from cpp_impl import act_quant, align, combine, gate, permute, swiglu


def grouped_gemm_run():
    """cpp_impl.grouped_gemm.run, imported on use (a test swaps in a stand-in here)."""
    from cpp_impl import grouped_gemm

    return grouped_gemm.run


def run(backend, args, preset, **params):
    """Run the layer: args logits, bias, x, W1, W2 in; out, q, scale out. Returns every launch record in order."""
    check_layer_args("cpp layer", args, preset, params)
    stages = {"act_quant": act_quant.run, "gate": gate.run, "align": align.run, "permute": permute.run,
              "grouped_gemm": grouped_gemm_run(), "swiglu": swiglu.run, "combine": combine.run}
    return run_layer(backend, args, preset, stages)

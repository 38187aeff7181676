"""The whole MoE layer on the `cutlass` path (kernels.md "The layer"): contract.layer's composition with CUTLASS's
grouped GEMMs (grouped_gemm for the bf16 layer, grouped_gemm_fp8 for the fp8 one) and, for every other stage (gate,
align, permute, act_quant, swiglu, combine), the `cpp` path's kernels: CUTLASS has no such kernels, so they fall
back to cpp, and the row's launch names say so (cpp_* entries beside the cutlass ones).

The routing is made on the device each call (align), so each GEMM is two launches that need nothing from the host:
cutlass_group_args builds CUTLASS's grouped arguments from block_expert and total_padded in device memory, then
CUTLASS's grouped kernel runs with Params built once on the host (cutlass_impl/device_args.py; docs/cutlass.md,
"The layer"). No host read or synchronisation happens inside a layer call after its first (the arrays and Params are
made on first use and kept on the backend)."""
from __future__ import annotations

from functools import partial

from contract.layer import check_layer_args, is_fp8, run_layer
from cpp_impl import act_quant, align, combine, gate, permute, swiglu


def run(backend, args, preset, **params):
    """Run the layer: args logits, bias, x, W1, W2 (and W1_scale, W2_scale for fp8) in; out, q, scale out. Returns
    every launch record in order (each GEMM stage two: the args kernel, then CUTLASS's)."""
    from cutlass_impl import device_args

    check_layer_args("cutlass layer", args, preset, params)
    stages = {"act_quant": act_quant.run, "gate": gate.run, "align": align.run, "permute": permute.run,
              "permute_scales": permute.run_scales, "swiglu": swiglu.run, "combine": combine.run}
    gemm = "grouped_gemm_fp8" if is_fp8(args) else "grouped_gemm"
    stages[gemm] = partial(device_args.run, gemm)
    return run_layer(backend, args, preset, stages)

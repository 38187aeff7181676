"""Useful vs padded FLOPs of a row's grouped GEMMs: how much of the tensor-core work the routing block wastes.

align pads each expert's rows to a multiple of the routing block BM; the GEMM computes every padded row up to
total_padded (blocks past it are skipped), while only the T*K routed rows are useful.
"""
from __future__ import annotations


def _padded_rows(kernel: str, inputs: dict, preset) -> int:
    if "total_padded" in inputs:
        return int(inputs["total_padded"][0])
    from contract import reference as ref

    routed = ref.gate(inputs["logits"], inputs["bias"], preset)
    return int(ref.align(routed["topk_ids"], preset)["total_padded"][0])


def _one_gemm(inputs: dict, preset) -> list[tuple[int, int]]:
    return [(int(inputs["w"].shape[1]), int(inputs["a"].shape[1]))]


def _layer_gemms(inputs: dict, preset) -> list[tuple[int, int]]:
    return [(2 * preset.I, preset.H), (preset.H, preset.I)]  # up then down


# kernel -> the (N, Kd) of each GEMM its row runs
GEMM_SHAPES = {"grouped_gemm": _one_gemm, "grouped_gemm_fp8": _one_gemm, "layer": _layer_gemms}
GEMM_KERNELS = tuple(GEMM_SHAPES)


def gemm_work(kernel: str, inputs: dict, preset) -> dict | None:
    """{routed_rows, padded_rows, BM, useful_flops, padded_flops, useful_pct} of a GEMM row, None for other kernels.

    useful_flops counts the routed rows only (2*T*K*N*Kd per GEMM); padded_flops the rows the kernel computes.
    """
    if kernel not in GEMM_KERNELS:
        return None
    padded = _padded_rows(kernel, inputs, preset)
    shapes = GEMM_SHAPES[kernel](inputs, preset)
    useful = sum(2 * preset.slots * n * kd for n, kd in shapes)
    computed = sum(2 * padded * n * kd for n, kd in shapes)
    return {"routed_rows": int(preset.slots), "padded_rows": padded, "BM": int(preset.BM), "useful_flops": int(useful),
            "padded_flops": int(computed), "useful_pct": 100.0 * useful / computed if computed else None}

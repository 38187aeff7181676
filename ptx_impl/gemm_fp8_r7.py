"""grouped_gemm_fp8 in hand-written PTX, rung 7 (kernels.md "grouped_gemm_fp8"): rung 6 with the scales brought by
TMA and kept in shared memory, so the promotion after wgmma.wait_group makes no global load.

Rung 7 of the ladder (issue #30, the review's findings (b) and (f)): rungs 4-6 load their scales with ld.global after
each stage's wgmma.wait_group (rung 6: 2 token scales and 1 weight scale a thread a stage), a dependent global
latency on every 128 of K. As DeepGEMM does, rung 7 has the producer bring the tile's 128 token scales of each K
group with the stage's TMA (one 1 x 128 box of an MN-major a_scale), and each consumer warpgroup copy the item's
weight scales into shared memory once an item. The MN-major layout is a preprocessing transpose of a_scale (the
contract's a_scale is token-major: kernels.md): ptx_impl/kernels/scale_transpose.ptx, launched by `run` before the
GEMM into a workspace, its time charged to the row (two launch records). The scales take shared memory: 6 stages of
32 KB + 512 B instead of rung 6's 7 (gemm_fp8_tm_template.STAGES7).

The GEMM kernel is ptx_impl/kernels/grouped_gemm_fp8_tms_m128n128.ptx (gemm_fp8_tm_template.render(tma_scales=True));
parameters as rung 6's (gemm_fp8_r6) with `tm_s`, the tensor map over a_scale_t (Kd/128, P_max), in place of
`a_scale`.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from contract.device import LiveRows
from contract.launch import require
from ptx_impl import gemm_fp8_r4 as r4
from ptx_impl import gemm_fp8_r6 as r6
from ptx_impl import gemm_fp8_tm_rung as tm_rung
from ptx_impl import gemm_fp8_tm_template as template

KERNEL = r4.KERNEL
RUNG = 7
PARAMS = r6.PARAMS[:2] + (("tm_s", "b8[128]"),) + r6.PARAMS[3:]
TRANSPOSE = Path(__file__).parent / "kernels" / "scale_transpose.ptx"
TRANSPOSE_THREADS = 256
# NOTE: a capped grid-stride grid: the simulator runs launches of up to 4096 CTAs whole (--sample auto), and the GEMM
# reads every element of the transposed scales, so the transpose must never be sampled
TRANSPOSE_MAX_CTAS = 1024
FEATURES = {**r6.FEATURES, "tma_scales": True}  # gemm_fp8_tm_template.render's flags of this rung


@functools.cache
def transpose_source() -> str:
    return TRANSPOSE.read_text(encoding="utf-8")


# gemm_fp8_tm_rung: the GEMM's module, then the transpose this rung adds
path, ptx_source, ptx_modules, default_sms = tm_rung.kernel(FEATURES, below=r6,
                                                            extra={TRANSPOSE.stem: transpose_source})


def check_args(args: dict, preset) -> tuple[int, int, int, int, int]:
    """Rung 6's checks, then the K groups a weight-scale area holds."""
    sizes = r6.check_args(args, preset)
    Kd = sizes[1]
    require(f"ptx {KERNEL} rung {RUNG}", Kd // r4.GROUP <= template.KT_MAX, "Kd", Kd,
            f"at most {template.KT_MAX * r4.GROUP} (the weight scales a shared-memory area holds)")
    return sizes


def launch_transpose(backend, args: dict, a_scale_t, P_max: int, groups: int):
    """Launch the a_scale transpose into the workspace array a_scale_t; its LaunchRecord (rungs 7 and up)."""
    ctas = max(1, min(TRANSPOSE_MAX_CTAS, -(-P_max * groups // TRANSPOSE_THREADS)))
    return backend.launch_ptx(transpose_source(), "scale_transpose", (ctas, 1, 1), (TRANSPOSE_THREADS, 1, 1),
                              [args["a_scale"], a_scale_t, np.uint32(P_max), np.uint32(groups), args["total_padded"]],
                              tag="scale_transpose")


def operand_maps(backend, args: dict, a_scale_t, sizes) -> tuple:
    """The tensor maps over w, a and the transposed a_scale (tm_w, tm_a, tm_s), as rungs 7 and up load them."""
    _, Kd, N, _, E = sizes
    tm_w = backend.tensor_map(args["w"], box=(template.TILE_N, r4.GROUP), swizzle=128, shape=(E * N, Kd))
    tm_a = backend.tensor_map(args["a"], box=(template.TILE_M // template.CLUSTER_CTAS, r4.GROUP), swizzle=128)
    tm_s = backend.tensor_map(a_scale_t, box=(1, template.TILE_M), swizzle=0)
    return tm_w, tm_a, tm_s


def run(backend, args: dict, preset, **params) -> list:
    """Launch rung 7: a_scale transposed into a workspace, then c[rows of b] = bf16(dequant(a)[rows] @
    dequant(w[e]).T) for blocks with e >= 0.

    Args:
        backend: a harness Backend (sim or gpu) with tensor_map and workspace.
        args: as rung 4 (gemm_fp8_r4.run).
        preset: supplies BM (a divisor of 128); every other size comes from the array shapes (Kd <= 32768).
        params: `variant` ('up' or 'down', checked) and `sms` (the persistent grid, default default_sms; rounded down
            to whole clusters, at least one).
    Returns:
        [LaunchRecord of the transpose, LaunchRecord of the GEMM].
    Raises:
        InputError: on a missing argument, a wrong dtype or shape, an unknown parameter, or sizes it cannot tile.
    """
    sms = r4.take_params(params, RUNG)
    sizes = check_args(args, preset)
    P_max, Kd, N, BM, E = sizes
    sms = sms if sms is not None else default_sms(backend)
    items = r6.work_items(sizes)
    clusters = max(1, min(sms // template.CLUSTER_CTAS, items.count))
    tmp = backend.workspace(f"{KERNEL}_r{RUNG}", {"a_scale_t": ((Kd // r4.GROUP, P_max), np.float32)})
    try:
        records = [launch_transpose(backend, args, tmp["a_scale_t"], P_max, Kd // r4.GROUP)]
        values = list(operand_maps(backend, args, tmp["a_scale_t"], sizes)) + [args[n] for n, _ in PARAMS[3:7]] + [
            np.uint32(Kd), np.uint32(N), np.uint32(BM), np.uint32(P_max // BM), items]
        values[5] = LiveRows.of(args["total_padded"], BM, args["block_expert"])  # sampled by experts on sim
        records.append(backend.launch_ptx(ptx_source(getattr(backend, "wait_bound", 0)), template.ENTRY7,
                                          (template.CLUSTER_CTAS * clusters, 1, 1), (template.THREADS, 1, 1), values,
                                          shared_bytes=template.shared_bytes(True), tag=f"{KERNEL}[{N}x{Kd}]"))
    finally:
        backend.done_with_workspace(tmp)
    return records

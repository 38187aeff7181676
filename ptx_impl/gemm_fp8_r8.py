"""grouped_gemm_fp8 in hand-written PTX, rung 8 (kernels.md "grouped_gemm_fp8"): rung 7 with a TMA-store epilogue.

Rung 8 of the ladder (issue #30, the review's finding (d)): rungs 6/7 write c with 32 predicated 4-byte
`st.global.b32` a thread an item (each warp's stores touch 8 rows x 32 B: 8 sectors a store). As DeepGEMM's sm90
kernels do, rung 8 packs the accumulators to bf16 into shared memory with `stmatrix` (a 128B-swizzled image, 64
columns at a time in an 8 KB buffer per consumer warpgroup) and has one thread store it with
`cp.async.bulk.tensor ... .bulk_group` through a tensor map over c, waiting (`cp.async.bulk.wait_group.read`) before
the buffer is written again. A box is min(BM, 64) rows x 64 columns, so it holds whole routing blocks: the kernel
stores only the boxes of the tile's run (another expert's rows in the tile belong to another tile). The buffers take
16 KB after the ring; the ring keeps rung 7's 6 stages.

The GEMM kernel is ptx_impl/kernels/grouped_gemm_fp8_tmo_m128n128.ptx
(gemm_fp8_tm_template.render(tma_scales=True, tma_store=True)); parameters as rung 7's (gemm_fp8_r7) with `tm_c`, the
tensor map over c, in place of `c`. The a_scale transpose runs before it, as in rung 7.
"""
from __future__ import annotations

import importlib

import numpy as np

from contract.device import LiveRows
from ptx_impl import gemm_fp8_r4 as r4
from ptx_impl import gemm_fp8_r6 as r6
from ptx_impl import gemm_fp8_r7 as r7
from ptx_impl import gemm_fp8_tm_rung as tm_rung
from ptx_impl import gemm_fp8_tm_store as store
from ptx_impl import gemm_fp8_tm_template as template

KERNEL = r4.KERNEL
RUNG = 8
PARAMS = r7.PARAMS[:6] + (("tm_c", "b8[128]"),) + r7.PARAMS[7:]
FEATURES = {**r7.FEATURES, "tma_store": True}  # gemm_fp8_tm_template.render's flags of this rung


path, ptx_source, ptx_modules, default_sms = tm_rung.kernel(FEATURES, below=r7)  # gemm_fp8_tm_rung


def check_args(args: dict, preset) -> tuple[int, int, int, int, int]:
    """Rung 7's checks (the weight scales a shared area holds, BM dividing 128, N a multiple of 128)."""
    return r7.check_args(args, preset)


def store_box_rows(bm: int) -> int:
    """Rows of a store box: one routing block, at most a consumer warpgroup's 64 (the kernel's min(BM, 64))."""
    return min(bm, 64)


def run(backend, args: dict, preset, **params) -> list:
    """Launch rung 8: a_scale transposed into a workspace, then c[rows of b] = bf16(dequant(a)[rows] @
    dequant(w[e]).T) for blocks with e >= 0, c written by TMA.

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
    return launch(backend, args, preset, params, RUNG, FEATURES, r6.work_items, lambda sizes: [])


def launch(backend, args: dict, preset, params: dict, rung: int, features: dict, work_items, extra) -> list:
    """Rungs 8 and up: the transpose, then the GEMM of the template's `features` over `work_items(sizes)`, with
    `extra(sizes)` after its item range (rung 9: its raster group)."""
    sms = r4.take_params(params, rung)
    sizes = check_args(args, preset)
    P_max, Kd, N, BM, E = sizes
    module = importlib.import_module(f"ptx_impl.gemm_fp8_r{rung}")
    if sms is None:
        sms = module.default_sms(backend)
    items = work_items(sizes)
    clusters = max(1, min(sms // template.CLUSTER_CTAS, items.count))
    tmp = backend.workspace(f"{KERNEL}_r{rung}", {"a_scale_t": ((Kd // r4.GROUP, P_max), np.float32)})
    try:
        records = [r7.launch_transpose(backend, args, tmp["a_scale_t"], P_max, Kd // r4.GROUP)]
        tm_w, tm_a, tm_s = r7.operand_maps(backend, args, tmp["a_scale_t"], sizes)
        tm_c = backend.tensor_map(args["c"], box=(store_box_rows(BM), store.OUT_COLS), swizzle=128)
        values = [tm_w, tm_a, tm_s] + [args[n] for n, _ in PARAMS[3:6]] + [tm_c] + [
            np.uint32(Kd), np.uint32(N), np.uint32(BM), np.uint32(P_max // BM), items, *extra(sizes)]
        values[5] = LiveRows.of(args["total_padded"], BM, args["block_expert"])  # sampled by experts on sim
        ptx = module.ptx_source(getattr(backend, "wait_bound", 0))
        records.append(backend.launch_ptx(ptx, template.entry(**features), (template.CLUSTER_CTAS * clusters, 1, 1),
                                          (template.THREADS, 1, 1), values,
                                          shared_bytes=template.shared_bytes(**features), tag=f"{KERNEL}[{N}x{Kd}]"))
    finally:
        backend.done_with_workspace(tmp)
    return records

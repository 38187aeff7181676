"""grouped_gemm_fp8 in hand-written PTX, rung 6 (kernels.md "grouped_gemm_fp8"): token-major 128 x 128 CTA tiles in a
7-stage ring, 2-CTA clusters multicasting the token tile.

Rung 6 of the ladder (issue #30, the review's findings (a) and (e)): rungs 4/5 "swap AB" (128 weight rows x 16-64
tokens a CTA), so every weight tile loaded serves at most 64 tokens; rung 6 tiles as DeepGEMM does, 128 tokens (wgmma
M, two consumer warpgroups) x 128 weight rows (wgmma N, m64n128k32), and a cluster of two takes one token tile at two
adjacent N tiles, each CTA loading half the token tile and multicasting it to both. Per CTA and stage: 16 KB of
weights + 8 KB of tokens loaded for 128 x 128 x 128 MACs (rung 5 at BM = 64: 8 + 8 KB for 128 x 64 x 128). The ring
has 7 stages of 32 KB (the 227 KB opt-in) instead of 4. Routing blocks shorter than 128 rows make tiles that start at
a "head" block and run over the next blocks of the same expert (gemm_fp8_tm_template.py has the rule); rows past the
run are computed and not stored, so at BM = 16 (decode) most of a tile's tensor-core work is discarded: the price of
not swapping, which rung 6 pays where the experts are short (docs/kernels.md says where it is slower).

Grid (finding (i)): on a GPU the persistent grid is what cuOccupancyMaxActiveClusters says for this kernel's clusters
x 2 (GpuBackend.persistent_ctas, as rung 5's); on the simulator, 132 SMs as 66 clusters.

The kernel is ptx_impl/kernels/grouped_gemm_fp8_tm_m128n128.ptx, written by gemm_fp8_tm_template.py (its header has
the protocol); this module is its tensor maps, argument checks and `run`. Parameters as rung 4's (gemm_fp8_r4), with
`blocks` (P_max / BM) in place of `rtiles`.
"""
from __future__ import annotations

import numpy as np

from contract.device import LiveRows, WorkItems
from contract.launch import require
from ptx_impl import gemm_fp8_r4 as r4
from ptx_impl import gemm_fp8_tm_rung as tm_rung
from ptx_impl import gemm_fp8_tm_template as template

KERNEL = r4.KERNEL
RUNG = 6
PARAMS = r4.PARAMS[:10] + (("blocks", "u32"),) + r4.PARAMS[11:]
PAIR_COLS = template.TILE_N * template.CLUSTER_CTAS  # output columns of a cluster's item
FEATURES: dict[str, bool] = {}  # gemm_fp8_tm_template.render's flags of this rung: none (the base kernel)
path, ptx_source, ptx_modules, default_sms = tm_rung.kernel(FEATURES)  # gemm_fp8_tm_rung


def check_args(args: dict, preset) -> tuple[int, int, int, int, int]:
    """Rung 4's checks (presence, dtypes, shapes, sizes; N a multiple of 128), then BM dividing the 128-row tile."""
    sizes = r4.check_args(args, preset, RUNG)
    _, _, N, BM, _ = sizes
    name = f"ptx {KERNEL} rung {RUNG}"
    require(name, template.TILE_M % BM == 0, "BM", BM, f"a divisor of {template.TILE_M} (the tile's token rows)")
    return sizes


def work_items(sizes) -> WorkItems:
    """Items (block, N-tile pair) ordered by block; R = 128 / BM blocks make an aligned group, inside which every tile
    lies, so a window of whole groups holds whole tiles."""
    P_max, _, N, BM, _ = sizes
    blocks, pairs, group = P_max // BM, -(-N // PAIR_COLS), template.TILE_M // BM
    return WorkItems(blocks * pairs, blocks, min(group, blocks), min(group, blocks) * pairs, blocks * -(-N // 128))


def run(backend, args: dict, preset, **params) -> list:
    """Launch rung 6: c[rows of b] = bf16(dequant(a)[rows] @ dequant(w[e]).T) for blocks with e >= 0.

    Args:
        backend: a harness Backend (sim or gpu) with tensor_map.
        args: as rung 4 (gemm_fp8_r4.run).
        preset: supplies BM (a divisor of 128); every other size comes from the array shapes.
        params: `variant` ('up' or 'down', checked) and `sms` (the persistent grid, default default_sms; rounded down
            to whole clusters, at least one).
    Returns:
        [LaunchRecord] of the single launch, on 2 * min(sms // 2, items) CTAs.
    Raises:
        InputError: on a missing argument, a wrong dtype or shape, an unknown parameter, or sizes it cannot tile.
    """
    sms = r4.take_params(params, RUNG)
    sizes = check_args(args, preset)
    P_max, Kd, N, BM, E = sizes
    sms = sms if sms is not None else default_sms(backend)
    items = work_items(sizes)
    clusters = max(1, min(sms // template.CLUSTER_CTAS, items.count))
    tm_w = backend.tensor_map(args["w"], box=(template.TILE_N, r4.GROUP), swizzle=128, shape=(E * N, Kd))
    tm_a = backend.tensor_map(args["a"], box=(template.TILE_M // template.CLUSTER_CTAS, r4.GROUP), swizzle=128)
    values = [tm_w, tm_a] + [args[n] for n, _ in PARAMS[2:7]] + [
        np.uint32(Kd), np.uint32(N), np.uint32(BM), np.uint32(P_max // BM), items]
    values[5] = LiveRows.of(args["total_padded"], BM, args["block_expert"])  # sampled by experts on sim
    record = backend.launch_ptx(ptx_source(getattr(backend, "wait_bound", 0)), template.ENTRY,
                                (template.CLUSTER_CTAS * clusters, 1, 1), (template.THREADS, 1, 1), values,
                                shared_bytes=template.shared_bytes(), tag=f"{KERNEL}[{N}x{Kd}]")
    return [record]

"""grouped_gemm_fp8 in hand-written PTX, rung 11 (kernels.md "grouped_gemm_fp8"): rung 9 with a CTA tile of 128 tokens
x 256 weight rows (DeepGEMM's BLOCK_N = 256 side), halving the weight bytes a CTA reads from L2 per FLOP's token side.

Why (docs/kernels.md, rung 11): at DeepGEMM's contiguous shapes the timing model prices rung 10 L2-bound: a cluster's
two 128 x 128 tiles read 16 KB of tokens (multicast, read once) and 2 x 16 KB of weights a K group, 5.9 B per kFLOP.
A 128 x 256 tile reads 16 KB of tokens and 2 x 32 KB of weights for twice the FLOPs: 4.9 B per kFLOP (0.83x). A
256-token tile would read less (3.9 B per kFLOP, the multicast side growing), but both need 128 promoted fp32 a
consumer thread; rung 11 issues its 256 columns as two m64n128 halves through rung 9's one 64-register partial set
(128 + 64 fp32, as rung 10's 3 x 64), so rung 10's second set (the overlapped promotion) does not fit beside it and
rung 11 builds on rung 9's lockstep loop (gemm_fp8_tm_wide has the register arithmetic).

The kernel is ptx_impl/kernels/grouped_gemm_fp8_tmw_m128n256.ptx (gemm_fp8_tm_template.render(..., raster=True,
wide=True)); parameters, launch, the scale transpose and the raster group are rung 9's; an item is (block, pair of
256-column tiles), so a cluster covers 512 columns and N / 128 odd leaves the last tile's upper half past N.
"""
from __future__ import annotations

from contract.device import WorkItems
from ptx_impl import gemm_fp8_r8 as r8
from ptx_impl import gemm_fp8_r9 as r9
from ptx_impl import gemm_fp8_tm_rung as tm_rung
from ptx_impl import gemm_fp8_tm_template as template
from ptx_impl import gemm_fp8_tm_wide as wide

KERNEL = r9.KERNEL
RUNG = 11
PARAMS = r9.PARAMS
FEATURES = {**r9.FEATURES, "wide": True}
PAIR_COLS = wide.TILE_N * template.CLUSTER_CTAS  # output columns of a cluster's item


path, ptx_source, ptx_modules, default_sms = tm_rung.kernel(FEATURES, below=r9)  # gemm_fp8_tm_rung


def work_items(sizes) -> WorkItems:
    """Rung 9's raster groups over (block, pair of 256-column tiles) items: a window of whole groups holds whole
    tiles. Its work (harness.sampling's threshold) is rung 9's, blocks x N / 128 tiles: half the items, each twice
    the columns."""
    P_max, _, N, BM, _ = sizes
    blocks, pairs, group = P_max // BM, -(-N // PAIR_COLS), r9.raster_blocks(sizes)
    return WorkItems(blocks * pairs, blocks, group, group * pairs, blocks * -(-N // 128))


def run(backend, args: dict, preset, **params) -> list:
    """Launch rung 11: rung 9's transpose and GEMM launch (gemm_fp8_r8.launch: the same arguments, parameters,
    checks and records) with its own wide-tile kernel and items."""
    import numpy as np

    return r8.launch(backend, args, preset, params, RUNG, FEATURES, work_items,
                     lambda sizes: [np.uint32(r9.raster_blocks(sizes))])

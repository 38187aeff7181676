"""grouped_gemm_fp8 in hand-written PTX, rung 9 (kernels.md "grouped_gemm_fp8"): rung 8 with grouped rasterisation.

Rung 9 of the ladder (issue #30, the review's finding (g)): rungs 6-8 number their (routing block, N-tile pair) items
block-major, so the clusters running at once (consecutive items) take every N-tile pair of a few blocks: where an
expert has many token tiles, each wave of tiles streams the expert's whole weight matrix through L2 again. Rung 9
takes the items in raster groups of `raster_blocks` routing blocks, blocks fastest and pairs slowest (Triton's and
CUTLASS's grouped / swizzled tile order), so concurrent clusters share a pair's weight tiles across many token tiles.

The group is a multiple of R = 128 / BM blocks (so a tile never crosses it, and harness.sampling's windows of whole
groups still hold whole tiles): raster_tiles(sizes) aligned groups, the token tiles an expert has on average
(P_max / (E x 128)), at least 1 and at most RASTER_MAX_TILES. At DeepSeek-V3's decode and prefill shapes an expert
has about one token tile (P_max / (E x 128) = 0.15 and 1.5), so the group is one aligned group: no weight tile there
is shared by two token tiles of one expert, whatever the order (docs/kernels.md says what the model sees).

The kernel is ptx_impl/kernels/grouped_gemm_fp8_tmr_m128n128.ptx (gemm_fp8_tm_template.render(..., raster=True));
parameters as rung 8's with `raster_blocks` (u32) last.
"""
from __future__ import annotations

from contract.device import WorkItems
from ptx_impl import gemm_fp8_r4 as r4
from ptx_impl import gemm_fp8_r6 as r6
from ptx_impl import gemm_fp8_r8 as r8
from ptx_impl import gemm_fp8_tm_rung as tm_rung
from ptx_impl import gemm_fp8_tm_template as template

KERNEL = r4.KERNEL
RUNG = 9
PARAMS = r8.PARAMS + (("raster_blocks", "u32"),)
FEATURES = {**r8.FEATURES, "raster": True}
# NOTE: 8 token tiles a group: 66 clusters then span about 66 / 8 N-tile pairs (at BM = 128) instead of all of them;
# a longer group spreads the concurrent clusters over more token tiles than an L2-resident weight panel needs
RASTER_MAX_TILES = 8


path, ptx_source, ptx_modules, default_sms = tm_rung.kernel(FEATURES, below=r8)  # gemm_fp8_tm_rung


def raster_tiles(sizes) -> int:
    """Aligned groups (token tiles) of a raster group: the token tiles an expert has on average, in [1, 8]."""
    P_max, _, _, _, E = sizes
    return max(1, min(RASTER_MAX_TILES, round(P_max / (E * template.TILE_M))))


def raster_blocks(sizes) -> int:
    """Routing blocks of a raster group (the kernel's gf_raster_blocks): raster_tiles x R, at most every block."""
    P_max, _, _, BM, _ = sizes
    return min(raster_tiles(sizes) * (template.TILE_M // BM), P_max // BM)


def work_items(sizes) -> WorkItems:
    """Items in raster groups of raster_blocks blocks, a window of whole groups holding whole tiles."""
    items = r6.work_items(sizes)
    group = raster_blocks(sizes)
    return WorkItems(items.count, items.blocks, group, group * (items.count // items.blocks), items.tiles)


def run(backend, args: dict, preset, **params) -> list:
    """Launch rung 9: rung 8 (gemm_fp8_r8.run: the same arguments, parameters, checks and records) with its items in
    raster groups."""
    import numpy as np

    return r8.launch(backend, args, preset, params, RUNG, FEATURES, work_items,
                     lambda sizes: [np.uint32(raster_blocks(sizes))])

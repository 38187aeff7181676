"""grouped_gemm_fp8 in hand-written PTX, rung 12 (kernels.md "grouped_gemm_fp8"): rung 11's 128 x 256 CTA tile with the
2-CTA cluster sharing the weight tile by TMA multicast (DeepGEMM's multicast on B) instead of the token tile.

Why (docs/kernels.md, rung 12): a rung-11 cluster reads 16 KB of tokens and 64 KB of weights from L2 a K group for
16.8 MFLOP (4.9 B per kFLOP); a cluster on two token tiles of one expert at one N tile reads 32 KB of tokens and the
32 KB weight tile once: 3.9 B per kFLOP. Where the two token tiles belong to different experts (most pairs at
dsv3-decode, finding (h)) each CTA loads its own weights, as with no cluster (gemm_fp8_tm_mcw).

The kernel is ptx_impl/kernels/grouped_gemm_fp8_tmwb_m128n256.ptx (gemm_fp8_tm_template.render(..., wide=True,
mcw=True)); parameters, launch and the scale transpose are rung 11's. An item is (slot, 256-column N tile): slot s is
block s + (s / R) R of an even aligned group (R = 128 / BM) and its partner R blocks on, one per CTA; its raster
groups hold pairs of aligned groups (gf_raster_blocks counts slots).
"""
from __future__ import annotations

from contract.device import WorkItems
from ptx_impl import gemm_fp8_r8 as r8
from ptx_impl import gemm_fp8_r9 as r9
from ptx_impl import gemm_fp8_r11 as r11
from ptx_impl import gemm_fp8_tm_rung as tm_rung
from ptx_impl import gemm_fp8_tm_template as template
from ptx_impl import gemm_fp8_tm_wide as wide

KERNEL = r11.KERNEL
RUNG = 12
PARAMS = r11.PARAMS
FEATURES = {**r11.FEATURES, "mcw": True}


path, ptx_source, ptx_modules, default_sms = tm_rung.kernel(FEATURES, below=r11)  # gemm_fp8_tm_rung


def slots(sizes) -> int:
    """Slots of the item space: R blocks of every pair of aligned groups, ceil(blocks / 2R) R (the kernel's)."""
    P_max, _, _, BM, _ = sizes
    R = template.TILE_M // BM  # noqa: N806 - the kernel's name
    return -(-(P_max // BM) // (2 * R)) * R


def raster_slots(sizes) -> int:
    """Slots of a raster group (the kernel's gf_raster_blocks): rung 9's token tiles rounded up to pairs of aligned
    groups, R slots a pair, at most every slot."""
    P_max, _, _, BM, _ = sizes
    return min(-(-r9.raster_tiles(sizes) // 2) * (template.TILE_M // BM), slots(sizes))


def work_items(sizes) -> WorkItems:
    """(slot, N tile) items in raster groups of raster_slots slots, which span twice as many routing blocks (a pair
    of aligned groups for R slots): a window of whole groups holds whole pairs of tiles. Its work (harness
    .sampling's threshold) is every rung's: blocks x N / 128 tiles."""
    P_max, _, N, BM, _ = sizes
    blocks, nt, group = P_max // BM, -(-N // wide.TILE_N), raster_slots(sizes)
    return WorkItems(slots(sizes) * nt, blocks, min(2 * group, blocks), group * nt, blocks * -(-N // 128))


def run(backend, args: dict, preset, **params) -> list:
    """Launch rung 12: rung 11's transpose and GEMM launch (gemm_fp8_r8.launch) with its own kernel and items."""
    import numpy as np

    return r8.launch(backend, args, preset, params, RUNG, FEATURES, work_items,
                     lambda sizes: [np.uint32(raster_slots(sizes))])

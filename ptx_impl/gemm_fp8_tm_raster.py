"""Rung 9's grouped rasterisation (issue #30, finding (g)) as gemm_fp8_tm_template renders it: the item -> (routing
block, N-tile pair) map of the token-major FP8 kernels.

Rungs 6-8 number items block-major (item = b x pairs + pair); rung 9 on takes them in raster groups of gf_raster_blocks
routing blocks (%sgb, its items %sgitems), blocks fastest, so the clusters running at once share an N-tile pair's
weight tiles over many token tiles. The host picks the group (gemm_fp8_r9.raster_blocks); the last group may be short.
"""
from __future__ import annotations

RASTER_REGS = ("    .reg .b32   %sgb, %sgitems;",)

# the kernel header's paragraph
RASTER_HEADER = """
// Rung 9 (grouped rasterisation): items come in raster groups of gf_raster_blocks routing blocks (a multiple of R; the
//   last group may be short): item i of group q is block q x gf_raster_blocks + i % (its blocks), N-tile pair
//   i / (its blocks). Clusters running at once take consecutive items: the same pair (weight tiles) for many blocks,
//   not every pair of a few blocks. Windows of whole raster groups still hold whole tiles (harness.sampling)."""


def raster_setup() -> list[str]:
    """At the start (every role): the raster group's blocks and items, from the gf_raster_blocks parameter."""
    return ["    ld.param.u32        %sgb, [gf_raster_blocks];   // blocks of a raster group",
            "    mul.lo.u32          %sgitems, %sgb, %npairs;    // and its items"]


def item_to_block_pair(raster: bool) -> list[str]:
    """%item -> block %b and N-tile pair %ct: block-major (rungs 6-8), or in raster groups of %sgb blocks, blocks
    fastest (rung 9 on; the last group may hold fewer blocks)."""
    if not raster:
        return ["    div.u32             %b, %item, %npairs;",
                "    mul.lo.u32          %tmp, %b, %npairs;",
                "    sub.u32             %ct, %item, %tmp;"]
    return ["    div.u32             %b, %item, %sgitems;        // raster group",
            "    mul.lo.u32          %tmp, %b, %sgitems;",
            "    sub.u32             %tmp, %item, %tmp;          // item within the group",
            "    mul.lo.u32          %b, %b, %sgb;               // the group's first block",
            "    sub.u32             %tmp2, %nblk, %b;",
            "    min.u32             %tmp2, %tmp2, %sgb;         // its blocks",
            "    div.u32             %ct, %tmp, %tmp2;           // pair: blocks walk fastest",
            "    mul.lo.u32          %tmp2, %ct, %tmp2;",
            "    sub.u32             %tmp, %tmp, %tmp2;",
            "    add.u32             %b, %b, %tmp;"]

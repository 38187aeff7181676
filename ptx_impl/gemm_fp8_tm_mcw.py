"""Rung 12's cluster (issue #30, findings (a) and (h)) as gemm_fp8_tm_template renders it: rung 11's 128 x 256 CTA
tile, but the 1x2 cluster shares the weight tile instead of the token tile (DeepGEMM's multicast "on B").

Why (docs/kernels.md, rung 12): rung 11's pair takes one token tile at two 256-column N tiles, so per K group a
cluster reads 16 KB of tokens (multicast) and 2 x 32 KB of weights for 16.8 MFLOP: 4.9 B per kFLOP from L2, which
the v1 model prices as the bound. A pair on two token tiles of one N tile reads 2 x 16 KB of tokens and the 32 KB
weight tile once (each CTA loads one 128-row box and multicasts it to both): 3.9 B per kFLOP (0.8x).

The pair must share an expert for that: an item is (slot, N tile), a slot being a routing block b0 of an even aligned
group (R = 128 / BM blocks) and its partner b0 + R in the next one; rank r takes block b0 + rR. Each CTA decodes both
blocks (so both agree without messages): where both are live heads of one expert (%p_sh) rank r loads weight box r
multicast (ctaMask 0b11); where only one is (a lone head, two experts: dsv3-decode's usual case, finding (h)) its CTA
loads both boxes itself and the other CTA's producer arrives on each stage with no bytes, its consumers idle (they
still wait and release every stage, so the pair's rings stay in step); neither: both skip the item. Each CTA loads its
own 128 token rows (two 64-row boxes, no multicast) and its token scales. Every item's result is rung 11's, bit for
bit: the same tiles, K order and promotion.
"""
from __future__ import annotations

from ptx_impl.gemm_fp8_tm_raster import item_to_block_pair

MCW_REGS = ("    .reg .pred  %p_hb0, %p_hb1, %p_sh, %p_mc0, %p_mc1, %p_uc, %p_uc1, %p_half, %p_full, %p_tmp;",
            "    .reg .b32   %nbr, %e0, %e1;")

# the kernel header's paragraph
MCW_HEADER = """
// Rung 12 (weights multicast; in place of the token multicast and the (block, N-tile pair) items above): an item is
//   (slot, 256-column N tile), slot s standing for block b0 = s + (s / R) R of an even aligned group and its partner
//   b0 + R; gf_blocks' slots are ceil(blocks / 2R) R (%nblk from then on; %nbr the blocks). Rank r takes block
//   b0 + rR at the same N tile. Both CTAs decode both blocks: where both are live heads of one expert (%p_sh), rank r
//   loads the tile's weight box r (rows 128r..) and multicasts it (ctaMask 0b11), else a CTA whose block is a head
//   loads both boxes itself; a CTA whose block is not a head (%p_nodd) arrives on each full barrier with no bytes
//   and its consumers only release stages; the item is skipped only when neither block is a head. Every CTA with a
//   head loads its own 128 token rows (two 64-row boxes) and token scales; stages are released on both CTAs' empty
//   barriers as before. A cluster reads 2 x 16 KB of tokens and 32 KB of weights a K group (3.9 B per kFLOP)."""


def mcw_setup() -> list[str]:
    """After %rblk: the item space in slots. %nbr = the routing blocks, %nblk = ceil(blocks / 2R) R slots (the raster
    walk and the item count read %nblk), %npairs = the N tiles (both CTAs of a cluster take one)."""
    return ["    mov.u32             %nbr, %nblk;                // routing blocks",
            "    shl.b32             %tmp, %rblk, 1;",
            "    add.u32             %nblk, %nblk, %tmp;",
            "    sub.u32             %nblk, %nblk, 1;",
            "    div.u32             %nblk, %nblk, %tmp;",
            "    mul.lo.u32          %nblk, %nblk, %rblk;        // slots: R blocks of each pair of aligned groups",
            "    mov.u32             %npairs, %nt;               // one N tile an item: the pair shares it"]


def _head(r: int) -> list[str]:
    """%p_hb<r> = block b0 + rR is a live head (below the blocks and total_padded, of an expert, and at its aligned
    group's start or after another expert's block); %e<r> its expert (-1 where it is not a block below
    total_padded)."""
    return [*(["    add.u32             %tmp2, %b, %rblk;"] if r else ["    mov.u32             %tmp2, %b;"]),
            f"    mov.s32             %e{r}, -1;",
            "    setp.lt.u32         %p_q, %tmp2, %nbr;",
            "    mul.lo.u32          %tmp, %tmp2, %bm;",
            "    setp.lt.and.u32     %p_q, %tmp, %tp, %p_q;      // a block below total_padded",
            "    mul.wide.u32        %d1, %tmp2, 4;",
            "    add.s64             %d1, %pbe, %d1;",
            f"    @%p_q ld.global.s32 %e{r}, [%d1];",
            f"    setp.ge.s32         %p_hb{r}, %e{r}, 0;",
            f"    setp.ne.and.u32     %p_q, %pos, 0, %p_hb{r};    // inside an aligned group: a continuation?",
            "    sub.s64             %d1, %d1, 4;",
            "    mov.s32             %ep, -1;",
            "    @%p_q ld.global.s32 %ep, [%d1];",
            f"    setp.ne.s32         %p_q, %ep, %e{r};           // not the previous block's expert",
            f"    and.pred            %p_hb{r}, %p_hb{r}, %p_q;"]


def mcw_decode(role: str, end: str, raster: bool) -> list[str]:
    """Rung 12's item -> my block %b, expert %e, N tile %ct (gemm_fp8_tm_template._decode's registers), with %p_sh =
    both blocks of the pair are heads of one expert, %p_nodd = my block is not a head; skips the item only when
    neither block is one."""
    return [
        f"${role}_item:",
        "    setp.ge.u32         %p_q, %item, %nitems;",
        f"    @%p_q bra.uni       {end};",
        *item_to_block_pair(raster),
        "    div.u32             %tmp, %b, %rblk;",
        "    mad.lo.u32          %b, %tmp, %rblk, %b;        // slot -> the pair's block b0 (even aligned group)",
        "    rem.u32             %pos, %b, %rblk;",
        *_head(0),
        *_head(1),
        "    or.pred             %p_q, %p_hb0, %p_hb1;",
        f"    @!%p_q bra.uni      ${role}_next;               // neither block a live head",
        "    setp.eq.and.s32     %p_sh, %e0, %e1, %p_hb0;",
        "    and.pred            %p_sh, %p_sh, %p_hb1;       // one expert's two heads: share its weight tile",
        "    mad.lo.u32          %b, %rank, %rblk, %b;       // my block",
        "    setp.eq.u32         %p_q, %rank, 0;",
        "    selp.b32            %e, %e0, %e1, %p_q;",
        "    @%p_q not.pred      %p_nodd, %p_hb0;",
        "    @!%p_q not.pred     %p_nodd, %p_hb1;            // my block is not a head: stages only",
        "    mul.lo.u32          %row0, %b, %bm;             // first token row",
        "    mul.wide.u32        %d0, %b, 4;",
        "    add.s64             %d0, %pbe, %d0;",
        "    max.u32             %abase, %tp, 128;",
        "    sub.u32             %abase, %abase, 128;",
        "    min.u32             %abase, %abase, %row0;      // first loaded row: the tile ends by total_padded",
        "    shl.b32             %col0, %ct, 8;              // first output column",
    ]


def mcw_item_preds() -> list[str]:
    """The producer's per-item predicates, after %p_nar: %p_full / %p_half = my block is a head and its tile has both
    weight boxes / the lower one only; %p_mc0 / %p_mc1 = I multicast box 0 / 1 (shared, my rank, box 1 below N);
    %p_uc / %p_uc1 = I load box 0 / 1 alone (my head, not shared)."""
    return ["    not.pred            %p_q, %p_nodd;",
            "    and.pred            %p_half, %p_q, %p_nar;",
            "    not.pred            %p_full, %p_nar;",
            "    and.pred            %p_full, %p_full, %p_q;",
            "    setp.eq.u32         %p_mc0, %rank, 0;",
            "    and.pred            %p_mc0, %p_mc0, %p_sh;      // box 0 multicast by rank 0",
            "    setp.eq.u32         %p_mc1, %rank, 1;",
            "    and.pred            %p_mc1, %p_mc1, %p_sh;",
            "    not.pred            %p_tmp, %p_nar;",
            "    and.pred            %p_mc1, %p_mc1, %p_tmp;     // box 1 (below N) multicast by rank 1",
            "    not.pred            %p_uc, %p_sh;",
            "    and.pred            %p_uc, %p_uc, %p_q;         // alone: both boxes my own",
            "    and.pred            %p_uc1, %p_uc, %p_full;"]


def mcw_produce(a_bytes: int, half_w: int, s_bytes: int, tma: str) -> list[str]:
    """A stage's arrival and loads (mcw_item_preds' predicates): my token rows (two 64-row boxes), the weight boxes
    (shared: box `rank` multicast; alone: both, box 1 only below N), my token scales' bytes counted; no bytes where
    my block is not a head. %dst is the stage."""
    arrive = "mbarrier.arrive.expect_tx.shared::cta.b64 %tok, [%bar]"
    return [
        f"    @%p_full {arrive}, {a_bytes + 2 * half_w + s_bytes};",
        f"    @%p_half {arrive}, {a_bytes + half_w + s_bytes};",
        "    @%p_nodd mbarrier.arrive.shared::cta.b64 %tok, [%bar];  // no bytes: the peer's item",
        f"    @!%p_nodd {tma} [%dst], [%ptma, {{%kc, %abase}}], [%bar];  // my 128 token rows",
        "    add.u32             %tmp, %abase, 64;",
        f"    add.u32             %tmp2, %dst, {a_bytes // 2};",
        f"    @!%p_nodd {tma} [%tmp2], [%ptma, {{%kc, %tmp}}], [%bar];",
        f"    add.u32             %tmp2, %dst, {a_bytes};",
        f"    @%p_mc0 {tma}.multicast::cluster [%tmp2], [%ptmw, {{%kc, %wrow}}], [%bar], %mask;",
        f"    @%p_uc {tma} [%tmp2], [%ptmw, {{%kc, %wrow}}], [%bar];",
        f"    add.u32             %tmp2, %tmp2, {half_w};",
        "    add.u32             %tmp, %wrow, 128;",
        f"    @%p_mc1 {tma}.multicast::cluster [%tmp2], [%ptmw, {{%kc, %tmp}}], [%bar], %mask;",
        f"    @%p_uc1 {tma} [%tmp2], [%ptmw, {{%kc, %tmp}}], [%bar];  // the upper 128 weight rows",
    ]

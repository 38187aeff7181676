"""Rung 11's wide tile (issue #30, finding (a) carried on) as gemm_fp8_tm_template renders it: a CTA computes 128 token
rows x 256 weight rows (DeepGEMM's BLOCK_N = 256 side), the pair's shared token tile still multicast.

Why 256 weight rows and not 256 tokens, and why no second partial-sum set (docs/kernels.md, rung 11): a consumer
thread holds the tile's promoted sums, 64 x 256 / 128 = 128 fp32, plus the wgmma partial sums. One m64n256 partial
set would be another 128 (256 in all: over the 232 registers a consumer gets, so ptxas spills), so the tile is issued
as two m64n128 halves into rung 9's one 64-register partial set: half 0's wgmmas, wait, its promotion into
%acc0..63, then half 1's into %acc64..127 (the wgmma D layout of m64n256: register 64h + j is column 128h + the
column j has in m64n128). Rung 10's second set (overlapping a promotion with the next wgmma) would need 64 more: 256
again, so rung 11 is rung 9 (lockstep) with the wide tile, not rung 10 with it.

Each stage brings the token tile (the pair's multicast halves) and the tile's two 128-row weight boxes (the second
only where it lies below N: N is a multiple of 128, not of 256, so a tile's upper half may lie past N, %p_nar); each
consumer warpgroup keeps both 128-column blocks' weight scales (2 Kd/128, contiguous in w_scale) in shared memory.
Per K group a CTA reads 16 KB of tokens (8 KB its own half, 8 KB the peer's multicast) and 32 KB of weights from L2
for 128 x 256 x 128 x 2 FLOPs: 48 KB per 8.4 MFLOP, where rungs 6-10 read 24 KB per 4.2 MFLOP.
"""
from __future__ import annotations

from ptx_impl.gemm_fp8_tm_stage import stage_wgmmas

TILE_N = 256  # weight rows (output columns) of a CTA tile: two m64n128 halves
HALF_N = 128  # one wgmma's N and one weight-scale block
HALF_W_BYTES = HALF_N * 128  # one 128-row weight box of a stage (128 B of K)
ACC = TILE_N // 2  # promoted fp32 sums a consumer thread holds
PART = HALF_N // 2  # the partial sums of one half
WIDE_REGS = ("    .reg .pred  %p_nar, %p_h0;", "    .reg .b32   %kws;")

# the kernel header's paragraph
WIDE_HEADER = """
// Rung 11 (wide tile): a CTA tile is 128 tokens x 256 weight rows (a cluster item 128 x 512): N tiles of 256, the
//   last one's upper half past N where N / 128 is odd (%p_nar: its weight box is not loaded, its wgmmas, promotion
//   and stores are skipped). A stage holds the token tile and two 128-row weight boxes; each consumer warpgroup
//   copies both weight-scale blocks of its tile (2 x Kd/128, or Kd/128 when narrow) into its area. K loop, per stage:
//   wgmma m64n128 half 0 into %part, commit, token scales, wait_group 0, promote into %acc0..63; then half 1 (B
//   16 KB on) into %part again (wgmma.fence: the promotion's reads first), wait_group 0, promote into %acc64..127
//   with the second block's weight scale; release. 128 + 64 fp32 a thread: no second partial set (rung 10's overlap
//   would need 256). The epilogue stores four 64-column spans (the upper two skipped when narrow)."""


def wide_decode() -> list[str]:
    """After %col0 is known: %p_nar = the tile's upper 128 columns lie past N; %p_h0 = only its lower half is real
    (narrow, not past the last N tile)."""
    return ["    add.u32             %tmp, %col0, 128;",
            "    setp.ge.u32         %p_nar, %tmp, %n;           // my tile's upper half lies past N",
            "    setp.lt.and.u32     %p_h0, %ct, %nt, %p_nar;    // a real tile with its lower half only"]


def wide_produce(stage_bytes: int, a_bytes: int, s_bytes: int, tma: str) -> tuple[list[str], list[str]]:
    """(the expect_tx arrivals of a stage, the upper weight box's load): the full stage, the lower half only, or the
    tokens alone (rank 1 past the last N tile, %p_nodd)."""
    arrive = "mbarrier.arrive.expect_tx.shared::cta.b64 %tok, [%bar]"
    expect = [f"    @!%p_nar {arrive}, {stage_bytes + s_bytes};",
              f"    @%p_h0 {arrive}, {a_bytes + HALF_W_BYTES + s_bytes};",
              f"    @%p_nodd {arrive}, {a_bytes + s_bytes};"]
    upper = [f"    add.u32             %tmp2, %dst, {a_bytes + HALF_W_BYTES};",
             "    add.u32             %tmp, %wrow, 128;",
             f"    @!%p_nar {tma} [%tmp2], [%ptmw, {{%kc, %tmp}}], [%bar];  // the upper 128 weight rows"]
    return expect, upper


def _wgmma_half(half: int, stage_bytes: int, a_bytes: int) -> list[str]:
    """The stage's 4 k32 wgmmas of one 128-column half into %part (descriptors from the stage's start)."""
    parts = ", ".join(f"%part{i}" for i in range(PART))
    upper = f"    add.u32             %tmp, %tmp, {HALF_W_BYTES};  // the upper weight box"
    return stage_wgmmas(stage_bytes, HALF_N, parts,
                        fence_note="                       // the last promotion's reads of %part come first",
                        w_offset_lines=(upper,) if half else ())


def _promote(half: int) -> list[str]:
    """acc[64 half + i] += part[i] x token scale x the half's weight scale of group kt (area: block 0's Kd/128
    scales, then block 1's)."""
    L = ["    shl.b32             %tmp, %kt, 2;",
         "    add.u32             %tmp, %tmp, %sws;",
         *(["    shl.b32             %tmp2, %ktiles, 2;",
            "    add.u32             %tmp, %tmp, %tmp2;"] if half else []),
         "    ld.shared.f32       %ws, [%tmp];",
         "    mul.rn.f32          %s0, %sa0, %ws;",
         "    mul.rn.f32          %s1, %sa1, %ws;"]
    return L + [f"    fma.rn.f32          %acc{PART * half + i}, %part{i}, %s{(i >> 1) & 1}, %acc{PART * half + i};"
                for i in range(PART)]


def wide_loop(stage_bytes: int, a_bytes: int, s_bytes: int, advance: list[str]) -> list[str]:
    """Per stage: half 0's wgmmas, the token scales, wait, promote; half 1's (unless narrow), wait, promote; release
    the stage (own and peer). An idle warpgroup waits for and releases each stage."""
    L = ["$C_k:",
         "    mad.lo.u32          %bar, %stage, 8, %sfull;",
         "$C_wait:",
         "    mbarrier.try_wait.parity.shared::cta.b64 %p_wait, [%bar], %ph;",
         "    @!%p_wait bra       $C_wait;",
         "    @%p_idle bra.uni    $C_release;"]
    L += _wgmma_half(0, stage_bytes, a_bytes)
    L += [f"    mad.lo.u32          %tmp, %stage, {s_bytes}, %ssc;",
          "    shl.b32             %tmp2, %trow, 2;",
          "    add.u32             %tmp, %tmp, %tmp2;",
          "    ld.shared.f32       %sa0, [%tmp];",
          "    ld.shared.f32       %sa1, [%tmp+32];           // token row + 8",
          "    wgmma.wait_group.sync.aligned 0;"]
    L += _promote(0)
    L += ["    @%p_nar bra.uni     $C_release;                 // no upper half"]
    L += _wgmma_half(1, stage_bytes, a_bytes)
    L += ["    wgmma.wait_group.sync.aligned 0;"]
    L += _promote(1)
    L += ["$C_release:",
          "    mad.lo.u32          %bar, %stage, 8, %sempty;",
          "    @%p_lead mbarrier.arrive.shared::cta.b64 %tok, [%bar];",
          "    mad.lo.u32          %bar, %stage, 8, %rbar;",
          "    @%p_lead mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%bar];"]
    L += advance
    return L + ["    @%p_more bra.uni    $C_k;"]

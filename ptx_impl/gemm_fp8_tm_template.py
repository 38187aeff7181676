"""Emit the token-major FP8 grouped GEMM kernels of rungs 6-10 (issue #30) from one readable template.

Rung 6 (`grouped_gemm_fp8_tm_m128n128.ptx`) drops rungs 4/5's "swap AB": a CTA tile is 128 token rows (wgmma M: two
consumer warpgroups x 64) by 128 weight rows (wgmma N: m64n128k32), as DeepGEMM's sm90 FP8 kernels tile (BLOCK_M
128, BLOCK_N up to 192 for its 1D2D scaling: csrc/jit_kernels/heuristics/sm90.hpp caps it there for register
spills). A 2-CTA cluster takes one token tile at two adjacent 128-column N tiles: both CTAs need the same token tile,
so each loads half of it (64 rows) and multicasts it to both (DeepGEMM's multicast "on A"); both CTAs of a pair always
share the expert, so the multicast always fires (rung 5's fired only when two token tiles had one expert). The ring
fills the 227 KB opt-in shared memory: 7 stages of 32 KB (rungs 4/5: 4 stages of 18-24 KB).

Routing blocks (BM = 16, 32 or 64 rows, one expert each) are shorter than the 128-row tile, so a tile starts at a
"head" block: one whose index is a multiple of R = 128 / BM, or whose expert differs from the block before. It runs
over the following blocks of the same expert up to the next multiple of R (so it never crosses an aligned group of R
blocks, which is what harness.sampling's windows need), and its rows past that run (another expert's tokens, or
past P_max: TMA fills zeros) are computed and never stored. The consumer warpgroup whose 64 rows all lie past the
run skips its wgmma, promotion and stores (it still waits and releases each stage).

Every instruction below was chosen by hand; Python only writes out the fixed-trip loops (barrier inits, the 4 k32
wgmma steps, the 64 promotions and 32 stores) and the stage count. `make ptx` rewrites the checked-in file.

The later rungs' pieces live in their own modules, rendered in here: rung 8's TMA-store epilogue
(gemm_fp8_tm_store), rung 9's raster walk (gemm_fp8_tm_raster), rung 10's overlapped K loop (gemm_fp8_tm_overlap),
rung 11's wide tile (gemm_fp8_tm_wide), and every rung's header comment and entry line (gemm_fp8_tm_header);
tests/ptx_impl/test_generated_ptx.py holds every rendered file to the checked-in bytes.
"""
from __future__ import annotations

from pathlib import Path

from ptx_impl.gemm_fp8_tm_header import Facts, header
from ptx_impl.gemm_fp8_tm_mcw import MCW_REGS, mcw_decode, mcw_item_preds, mcw_produce, mcw_setup
from ptx_impl.gemm_fp8_tm_overlap import Ring, overlap_loop, overlap_regs
from ptx_impl.gemm_fp8_tm_raster import RASTER_REGS, item_to_block_pair, raster_setup
from ptx_impl.gemm_fp8_tm_stage import stage_wgmmas
from ptx_impl.gemm_fp8_tm_store import (
    OUT_BYTES,
    STORE_REGS,
    store_setup,
    store_tail,
    tma_store_epilogue,
)
from ptx_impl.gemm_fp8_tm_wide import WIDE_REGS, wide_decode, wide_loop, wide_produce
from ptx_impl.gemm_fp8_ws_template import (
    ALIGN,
    CONSUMER_REGS,
    MAXNREG,  # noqa: F401 - read by the rung modules and tests as this template's
    PRODUCER_REGS,
    THREADS,  # noqa: F401 - read by the rung modules and tests as this template's
    _bounded,
)

KERNELS_DIR = Path(__file__).parent / "kernels"
ENTRY = "grouped_gemm_fp8_tm_m128n128"
PATH = KERNELS_DIR / f"{ENTRY}.ptx"
TILE_M = 128  # token rows of a CTA tile (two consumer warpgroups x wgmma M 64)
TILE_N = 128  # weight rows (output columns) of a CTA tile: wgmma N; one 128 x 128 weight-scale block
CLUSTER_CTAS = 2  # the pair shares the token tile (multicast): a cluster covers 128 tokens x 256 columns
A_BYTES = TILE_M * 128  # token tile of one stage (128 rows x 128 B of K)
W_BYTES = TILE_N * 128  # weight tile of one stage
STAGE_BYTES = A_BYTES + W_BYTES
SMEM_LIMIT = 232448  # bytes of dynamic shared memory a CTA may opt in to on sm_90 (227 KB)
# NOTE: as many stages as the opt-in limit holds with the barriers and the alignment slack: 7 x 32 KB (a stage count
# that is not a power of two: the kernel keeps the stage index and phase in registers rather than masking a counter)
STAGES = (SMEM_LIMIT - ALIGN) // (STAGE_BYTES + 16)
CONSUMER_WARPS = 8
EMPTY_COUNT = CONSUMER_WARPS * CLUSTER_CTAS  # a stage is free when neither CTA's consumers still read it
ACC = TILE_N // 2  # fp32 accumulator registers per consumer thread (m64n128: 64 x 128 / 128 threads)
# Rung 7 (tma_scales): each stage also brings the tile's 128 token scales of its K group by TMA (a row of the
# MN-major a_scale, 512 B, kept apart from the 1024-aligned operand tiles), and each consumer warpgroup keeps the
# item's weight scales (Kd / 128 <= KT_MAX of them) in shared memory: its promotion makes no global load.
ENTRY7 = "grouped_gemm_fp8_tms_m128n128"
PATH7 = KERNELS_DIR / f"{ENTRY7}.ptx"
S_BYTES = TILE_M * 4  # one stage's token scales (fp32)
KT_MAX = 256  # K groups a weight-scale area holds (Kd <= 32768)
STAGES7 = (SMEM_LIMIT - ALIGN - 2 * 4 * KT_MAX) // (STAGE_BYTES + S_BYTES + 16)
# Rung 8 (tma_store, on top of tma_scales; the review's finding (d)): the epilogue writes c through shared memory and
# TMA, as DeepGEMM's does: each consumer warpgroup packs its 64 x 128 fp32 result to bf16 and stmatrix-es it, 64
# columns at a time, into its own 128B-swizzled buffer after the ring; after fence.proxy.async and a named barrier,
# one thread of the warpgroup stores each routing block of the run that lies in its rows with cp.async.bulk.tensor
# (tensor map gf_tm_c over c, box 64 columns x min(BM, 64) rows: a box never reaches another expert's rows, which
# belong to another tile), in a bulk group it waits for (.read) before the buffer is written again.
ENTRY8 = "grouped_gemm_fp8_tmo_m128n128"
PATH8 = KERNELS_DIR / f"{ENTRY8}.ptx"
STAGES8 = (SMEM_LIMIT - ALIGN - 2 * 4 * KT_MAX - OUT_BYTES) // (STAGE_BYTES + S_BYTES + 16)
# Rung 9 (raster, on top of tma_store; the review's finding (g)): grouped rasterisation. Items are taken in raster
# groups of gf_raster_blocks routing blocks (a multiple of R, the host's choice: gemm_fp8_r9), inside which the
# blocks walk fastest and the N-tile pairs slowest, so the clusters running at once work on the same N-tile pair (the
# same weight tiles, where the blocks share an expert) for many token tiles instead of every pair of a few.
ENTRY9 = "grouped_gemm_fp8_tmr_m128n128"
PATH9 = KERNELS_DIR / f"{ENTRY9}.ptx"
# Rung 10 (overlap, on top of raster; the review's finding (c)): each consumer warpgroup keeps two sets of wgmma
# partial sums, %part (even K groups) and %part_b (odd), and waits with wgmma.wait_group 1: the promotion of K group
# k - 1 runs on the CUDA cores while K group k's wgmmas run on the tensor cores. Same ring, scales, TMA-store epilogue
# and raster order as rung 9; the stage of group k - 1 is released after that wait (one stage longer held).
ENTRY10 = "grouped_gemm_fp8_tmro_m128n128"
PATH10 = KERNELS_DIR / f"{ENTRY10}.ptx"
# Rung 11 (wide, on top of raster, instead of overlap; gemm_fp8_tm_wide): a CTA tile of 128 tokens x 256 weight rows,
# two 128-row weight boxes a stage, both 128-column blocks' weight scales in each consumer warpgroup's area.
ENTRY11 = "grouped_gemm_fp8_tmw_m128n256"
PATH11 = KERNELS_DIR / f"{ENTRY11}.ptx"
STAGES11 = (SMEM_LIMIT - ALIGN - 2 * 2 * 4 * KT_MAX - OUT_BYTES) // (STAGE_BYTES + W_BYTES + S_BYTES + 16)
# Rung 12 (mcw, on top of wide; gemm_fp8_tm_mcw): the cluster shares the weight tile (each CTA multicasts one 128-row
# box) over two token tiles of one expert, instead of the token tile over two N tiles; rung 11's ring and scales.
ENTRY12 = "grouped_gemm_fp8_tmwb_m128n256"
PATH12 = KERNELS_DIR / f"{ENTRY12}.ptx"


def _features(tma_scales: bool, tma_store: bool, raster: bool = False, overlap: bool = False,
              wide: bool = False, mcw: bool = False) -> None:
    if tma_store and not tma_scales:
        raise ValueError("tma_store=True needs tma_scales=True (rung 8 is rung 7 with the TMA-store epilogue)")
    if raster and not tma_store:
        raise ValueError("raster=True needs tma_store=True (rung 9 is rung 8 with grouped rasterisation)")
    if overlap and not raster:
        raise ValueError("overlap=True needs raster=True (rung 10 is rung 9 with the promotion overlapped)")
    if wide and (overlap or not raster):
        raise ValueError(f"wide=True needs raster=True and overlap=False, not overlap={overlap!r}, raster={raster!r} "
                         "(rung 11 is rung 9 with the 128 x 256 tile: a second partial-sum set does not fit)")
    if mcw and not wide:
        raise ValueError("mcw=True needs wide=True (rung 12 is rung 11 with the weight tile multicast)")


def stages(tma_scales: bool = False, tma_store: bool = False, raster: bool = False, overlap: bool = False,
           wide: bool = False, mcw: bool = False) -> int:
    _features(tma_scales, tma_store, raster, overlap, wide, mcw)
    return STAGES11 if wide else STAGES8 if tma_store else STAGES7 if tma_scales else STAGES


def entry(tma_scales: bool = False, tma_store: bool = False, raster: bool = False, overlap: bool = False,
          wide: bool = False, mcw: bool = False) -> str:
    _features(tma_scales, tma_store, raster, overlap, wide, mcw)
    if wide:
        return ENTRY12 if mcw else ENTRY11
    return ENTRY10 if overlap else ENTRY9 if raster else ENTRY8 if tma_store else ENTRY7 if tma_scales else ENTRY


def path(tma_scales: bool = False, tma_store: bool = False, raster: bool = False, overlap: bool = False,
         wide: bool = False, mcw: bool = False) -> Path:
    _features(tma_scales, tma_store, raster, overlap, wide, mcw)
    if wide:
        return PATH12 if mcw else PATH11
    return PATH10 if overlap else PATH9 if raster else PATH8 if tma_store else PATH7 if tma_scales else PATH


def shared_bytes(tma_scales: bool = False, tma_store: bool = False, raster: bool = False,
                 overlap: bool = False, wide: bool = False, mcw: bool = False) -> int:
    """Dynamic shared memory: the ring, full[STAGES] and empty[STAGES] mbarriers, ALIGN bytes of slack (rung 7:
    also a token-scale row a stage and two weight-scale areas; rung 8: also the two output buffers; rung 11: a
    second weight box a stage and weight-scale areas twice the size; rung 12: rung 11's)."""
    n = stages(tma_scales, tma_store, raster, overlap, wide, mcw)
    if tma_scales:
        return (n * (_stage_bytes(wide) + S_BYTES) + 2 * 8 * n + 2 * 4 * KT_MAX * (1 + wide) + ALIGN
                + tma_store * OUT_BYTES)
    return n * STAGE_BYTES + 2 * 8 * n + ALIGN


def _stage_bytes(wide: bool) -> int:
    """Operand bytes of a stage: the token tile and one weight box (rung 11: two)."""
    return STAGE_BYTES + wide * W_BYTES


def _decode(role: str, end: str = "$L_end", raster: bool = False, wide: bool = False) -> list[str]:
    """Item -> block %b, its expert %e, the N tile %ct; skips items whose block is past total_padded, of expert -1 or
    not a head. Leaves %pos = b % R and %d0 = &block_expert[b]. Past the last item the role goes to `end`."""
    return [
        f"${role}_item:",
        "    setp.ge.u32         %p_q, %item, %nitems;",
        f"    @%p_q bra.uni       {end};",
        *item_to_block_pair(raster),
        "    shl.b32             %ct, %ct, 1;",
        "    add.u32             %ct, %ct, %rank;            // my N tile of the pair",
        "    setp.ge.u32         %p_nodd, %ct, %nt;          // rank 1 past an odd N tile count: tokens only",
        "    mul.lo.u32          %row0, %b, %bm;             // first token row",
        "    setp.ge.u32         %p_q, %row0, %tp;",
        f"    @%p_q bra.uni       ${role}_next;               // past total_padded",
        "    mul.wide.u32        %d0, %b, 4;",
        "    add.s64             %d0, %pbe, %d0;",
        "    ld.global.s32       %e, [%d0];",
        "    setp.lt.s32         %p_q, %e, 0;",
        f"    @%p_q bra.uni       ${role}_next;               // a padding block of no expert",
        "    rem.u32             %pos, %b, %rblk;",
        "    setp.eq.u32         %p_q, %pos, 0;",
        f"    @%p_q bra.uni       ${role}_head;               // an aligned group starts here",
        "    sub.s64             %d1, %d0, 4;",
        "    ld.global.s32       %ep, [%d1];",
        "    setp.eq.s32         %p_q, %ep, %e;",
        f"    @%p_q bra.uni       ${role}_next;               // inside the tile of an earlier head",
        f"${role}_head:",
        "    max.u32             %abase, %tp, 128;",
        "    sub.u32             %abase, %abase, 128;",
        "    min.u32             %abase, %abase, %row0;      // first loaded row: the tile ends by total_padded",
        f"    shl.b32             %col0, %ct, {8 if wide else 7};              // first output column",
        *(wide_decode() if wide else []),
        "    mad.lo.u32          %wrow, %e, %n, %col0;       // first weight row in the (E*N, Kd) view",
        "    mov.u32             %kt, 0;",
    ]


def _advance(n_stages: int) -> list[str]:
    """The next stage of the ring: index + 1, wrapping to 0 with the phase flipped."""
    return ["    add.u32             %stage, %stage, 1;",
            f"    setp.eq.u32         %p_q, %stage, {n_stages};",
            "    @%p_q mov.u32       %stage, 0;",
            "    @%p_q xor.b32       %ph, %ph, 1;",
            "    add.u32             %kt, %kt, 1;",
            "    setp.lt.u32         %p_more, %kt, %ktiles;"]


def _producer(ts: bool, to: bool = False, rs: bool = False, wd: bool = False, mc: bool = False) -> list[str]:
    tma = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
    L = ["",
         "    // ---- producer warpgroup: one thread feeds the ring ------------------------------------------------",
         "$P_start:",
         f"    setmaxnreg.dec.sync.aligned.u32 {PRODUCER_REGS};",
         "    @!%p_lead bra       $L_end;                 // threads 1..127 have nothing to do",
         "    mov.u32             %stage, 0;",
         "    mov.u32             %ph, 0;",
         "    mov.u32             %item, %first;"]
    L += _mcw_decode("P", "$L_end", rs) + mcw_item_preds() if mc else _decode("P", raster=rs, wide=wd)
    expect, upper = wide_produce(_stage_bytes(wd), A_BYTES, ts * S_BYTES, tma) if wd else (
        [f"    @!%p_nodd mbarrier.arrive.expect_tx.shared::cta.b64 %tok, [%bar], {STAGE_BYTES + ts * S_BYTES};",
         f"    @%p_nodd mbarrier.arrive.expect_tx.shared::cta.b64 %tok, [%bar], {A_BYTES + ts * S_BYTES};"], [])
    L += ["$P_k:",
          "    xor.b32             %pw, %ph, 1;                // the previous phase: free on the first pass",
          "    mad.lo.u32          %bar, %stage, 8, %sempty;",
          "$P_wait:",
          "    mbarrier.try_wait.parity.shared::cta.b64 %p_wait, [%bar], %pw;",
          "    @!%p_wait bra       $P_wait;",
          "    mad.lo.u32          %bar, %stage, 8, %sfull;",
          f"    mad.lo.u32          %dst, %stage, {_stage_bytes(wd)}, %sbase;",
          "    shl.b32             %kc, %kt, 7;                // K coordinate (elements = bytes)"]
    L += mcw_produce(A_BYTES, W_BYTES, ts * S_BYTES, tma) if mc else [
        *expect,
        "    shl.b32             %tmp, %rank, 13;            // my half: token rows 64*rank.. at byte 8192*rank",
        "    add.u32             %tmp2, %dst, %tmp;",
        "    shl.b32             %tmp, %rank, 6;",
        "    add.u32             %tmp, %abase, %tmp;",
        f"    {tma}.multicast::cluster [%tmp2], [%ptma, {{%kc, %tmp}}], [%bar], %mask;",
        f"    add.u32             %tmp2, %dst, {A_BYTES};",
        f"    @!%p_nodd {tma} [%tmp2], [%ptmw, {{%kc, %wrow}}], [%bar];",
        *upper]
    if ts:
        L += [f"    mad.lo.u32          %tmp2, %stage, {S_BYTES}, %ssc;",
              f"    {'@!%p_nodd ' if mc else ''}{tma} [%tmp2], [%ptms, {{%abase, %kt}}], [%bar];  "
              "// the tile's token scales of group kt"]
    L += _advance(stages(ts, to, rs, False, wd))
    L += ["    @%p_more bra.uni    $P_k;",
          "$P_next:",
          "    add.u32             %item, %item, %step;",
          "    bra.uni             $P_item;"]
    return L


def _run_rows() -> list[str]:
    """%rows = the tile's valid token rows: blocks b, b + 1, ... of expert %e below the next multiple of R and below
    total_padded; %p_idle = this warpgroup's 64 rows all lie past them."""
    return ["    sub.u32             %nbmax, %rblk, %pos;        // blocks to the end of the aligned group",
            "    mov.u32             %nb, 1;",
            "$C_run:",
            "    setp.ge.u32         %p_q, %nb, %nbmax;",
            "    @%p_q bra.uni       $C_ran;",
            "    add.u32             %tmp, %b, %nb;",
            "    mul.lo.u32          %tmp, %tmp, %bm;",
            "    setp.ge.u32         %p_q, %tmp, %tp;",
            "    @%p_q bra.uni       $C_ran;",
            "    mul.wide.u32        %d1, %nb, 4;",
            "    add.s64             %d1, %d0, %d1;",
            "    ld.global.s32       %ep, [%d1];",
            "    setp.ne.s32         %p_q, %ep, %e;",
            "    @%p_q bra.uni       $C_ran;",
            "    add.u32             %nb, %nb, 1;",
            "    bra.uni             $C_run;",
            "$C_ran:",
            "    mul.lo.u32          %rows, %nb, %bm;",
            "    sub.u32             %nb, %row0, %abase;         // the run's first row in the tile",
            "    add.u32             %nbmax, %nb, %rows;         // and its end",
            "    shl.b32             %tmp, %cw, 6;",
            "    setp.le.or.u32      %p_idle, %nbmax, %tmp, %p_nodd;",
            "    add.u32             %tmp, %tmp, 64;",
            "    setp.ge.or.u32      %p_idle, %nb, %tmp, %p_idle;  // my 64 rows hold none of the run, or no N tile"]


def _ws_to_shared(to: bool = False, count: str = "%ktiles") -> list[str]:
    """Rung 7, at an item's start: the warpgroup copies w_scale[e][ct][0..Kd/128) into its shared area, between two
    named barriers of its 128 threads (the first: nobody still reads the previous item's scales). Rung 8 drops the
    first: its epilogue's barriers already order the last item's promotion reads before this copy. Rung 11 copies
    `count` (%kws) scales: both 128-column blocks of its tile, contiguous in w_scale."""
    return ["    @%p_idle bra.uni    $C_wsdone;",
            *([] if to else ["    bar.sync            %bid, 128;"]),
            "    and.b32             %tmp2, %thr, 127;",
            "    mov.u32             %tmp, 0;",
            "$C_ws:",
            "    add.u32             %nb, %tmp, %tmp2;",
            f"    setp.lt.u32         %p_in, %nb, {count};",
            "    mul.wide.u32        %d1, %nb, 4;",
            "    add.s64             %d2, %pwsg, %d1;",
            "    @%p_in ld.global.nc.f32 %ws, [%d2];",
            "    shl.b32             %nb, %nb, 2;",
            "    add.u32             %nb, %nb, %sws;",
            "    @%p_in st.shared.f32 [%nb], %ws;",
            "    add.u32             %tmp, %tmp, 128;",
            f"    setp.lt.u32         %p_q, %tmp, {count};",
            "    @%p_q bra.uni       $C_ws;",
            "    bar.sync            %bid, 128;",
            "$C_wsdone:"]


def _mcw_decode(role: str, end: str, rs: bool) -> list[str]:
    """Rung 12's decode (gemm_fp8_tm_mcw.mcw_decode), then what _decode does after %col0: the wide tile's halves, the
    weight row, the K counter."""
    return [*mcw_decode(role, end, rs), *wide_decode(),
            "    mad.lo.u32          %wrow, %e, %n, %col0;       // first weight row in the (E*N, Kd) view",
            "    mov.u32             %kt, 0;"]


def _consumer(ts: bool, to: bool = False, rs: bool = False, ov: bool = False, wd: bool = False,
              mc: bool = False) -> list[str]:
    L = ["",
         "    // ---- consumer warpgroups: wgmma, promotion, epilogue -----------------------------------------------",
         "$C_start:",
         f"    setmaxnreg.inc.sync.aligned.u32 {CONSUMER_REGS};",
         "    sub.u32             %cw, %wg, 1;                // token rows 64*cw.. of the tile",
         "    and.b32             %lane, %thr, 31;",
         "    shr.u32             %warp, %thr, 5;",
         "    and.b32             %warp, %warp, 3;",
         "    shr.u32             %g, %lane, 2;",
         "    and.b32             %t, %lane, 3;",
         "    setp.eq.u32         %p_lead, %lane, 0;          // lane 0 releases stages for its warp",
         "    setp.eq.u32         %p_zero, %wg, 0;            // false here: scale-d of each stage's first wgmma",
         "    setp.ne.u32         %p_one, %wg, 0;             // true",
         "    shl.b32             %tmp, %cw, 13;",
         "    add.u32             %sa_a, %sbase, %tmp;        // token rows 64*cw.. of stage 0",
         f"    add.u32             %sa_w, %sbase, {A_BYTES};         // weights of stage 0",
         "    shl.b32             %trow, %cw, 6;              // my first token row of the tile: 64cw + 16w + g",
         "    shl.b32             %tmp, %warp, 4;",
         "    add.u32             %trow, %trow, %tmp;",
         "    add.u32             %trow, %trow, %g;",
         "    mul.wide.u32        %nbytes, %n, 16;            // 8 c rows",
         "    mapa.shared::cluster.u32 %rbar, %sempty, %peer;  // the peer's empty barriers",
         *(["    add.u32             %bid, %cw, 1;               // my warpgroup's named barrier",
            f"    mad.lo.u32          %sws, %cw, {4 * KT_MAX * (1 + wd)}, %sws;     // my weight-scale area"]
           if ts else []),
         *(store_setup() if to else []),
         "    mov.u32             %stage, 0;",
         "    mov.u32             %ph, 0;",
         "    mov.u32             %item, %first;"]
    L += _mcw_decode("C", "$C_end", rs) if mc else _decode("C", "$C_end" if to else "$L_end", rs, wd)
    L += _run_rows()
    L += [f"    mov.f32             %acc{i}, 0f00000000;" for i in range(ACC * (1 + wd))]
    L += ["    add.u32             %r0, %abase, %trow;"]
    if not ts:
        L += ["    // scale pointers: a_scale rows row0 + trow and + 8, clamped into the run (rows past it are",
              "    // computed from other rows' data and never stored, their scale loads must stay in a_scale)",
              "    add.u32             %tmp2, %row0, %rows;",
              "    sub.u32             %tmp2, %tmp2, 1;            // the run's last row",
              "    max.u32             %tmp, %r0, %row0;",
              "    min.u32             %tmp, %tmp, %tmp2;",
              "    mul.wide.u32        %d1, %tmp, %ktiles;",
              "    shl.b64             %d1, %d1, 2;",
              "    add.s64             %pas0, %pas, %d1;",
              "    add.u32             %tmp, %r0, 8;",
              "    max.u32             %tmp, %tmp, %row0;",
              "    min.u32             %tmp, %tmp, %tmp2;",
              "    mul.wide.u32        %d1, %tmp, %ktiles;",
              "    shl.b64             %d1, %d1, 2;",
              "    add.s64             %pas1, %pas, %d1;"]
    L += ["    shr.u32             %tmp, %n, 7;",
          "    shl.b32             %tmp2, %ct, 1;",
          "    mad.lo.u32          %tmp, %e, %tmp, %tmp2;      // w_scale[e][2 ct][.], then block 2 ct + 1",
          "    shl.b32             %kws, %ktiles, 1;",
          "    @%p_nar mov.u32     %kws, %ktiles;              // both blocks' scales, one when narrow"] if wd else [
          "    mad.lo.u32          %tmp, %e, %nt, %ct;         // w_scale[e][ct][.]"]
    L += ["    mul.wide.u32        %d1, %tmp, %ktiles;",
          "    shl.b64             %d1, %d1, 2;",
          "    add.s64             %pwsg, %pws, %d1;"]
    if ts:
        L += _ws_to_shared(to, "%kws" if wd else "%ktiles")
    advance = _advance(stages(ts, to, rs, ov, wd))
    if wd:
        L += wide_loop(_stage_bytes(wd), A_BYTES, S_BYTES, advance)
    else:
        L += overlap_loop(Ring(STAGE_BYTES, S_BYTES, TILE_N, tuple(advance))) if ov else _lockstep_loop(ts, to)
    return L + _epilogue(to, wd)


def _lockstep_loop(ts: bool, to: bool) -> list[str]:
    """Rungs 6-9: each stage's wgmmas, then wait_group 0, the release and the promotion, in lockstep."""
    L: list[str] = []
    L += ["$C_k:",
          "    mad.lo.u32          %bar, %stage, 8, %sfull;",
          "$C_wait:",
          "    mbarrier.try_wait.parity.shared::cta.b64 %p_wait, [%bar], %ph;",
          "    @!%p_wait bra       $C_wait;",
          "    @%p_idle bra.uni    $C_release;"]
    L += stage_wgmmas(STAGE_BYTES, TILE_N, ", ".join(f"%part{i}" for i in range(ACC)))
    if ts:  # the stage's token scales, read while the wgmma runs (before the stage is released)
        L += [f"    mad.lo.u32          %tmp, %stage, {S_BYTES}, %ssc;",
              "    shl.b32             %tmp2, %trow, 2;",
              "    add.u32             %tmp, %tmp, %tmp2;",
              "    ld.shared.f32       %sa0, [%tmp];",
              "    ld.shared.f32       %sa1, [%tmp+32];           // token row + 8"]
    L += ["    wgmma.wait_group.sync.aligned 0;",
          "$C_release:",
          "    mad.lo.u32          %bar, %stage, 8, %sempty;",
          "    @%p_lead mbarrier.arrive.shared::cta.b64 %tok, [%bar];",
          "    mad.lo.u32          %bar, %stage, 8, %rbar;",
          "    @%p_lead mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%bar];",
          "    @%p_idle bra.uni    $C_kdone;",
          "    // promotion of this scale group: 2 token scales x the block's weight scale, fma into fp32"]
    if ts:
        L += ["    shl.b32             %tmp, %kt, 2;",
              "    add.u32             %tmp, %tmp, %sws;",
              "    ld.shared.f32       %ws, [%tmp];"]
    else:
        L += ["    mul.wide.u32        %d1, %kt, 4;",
              "    add.s64             %d2, %pwsg, %d1;",
              "    ld.global.nc.f32    %ws, [%d2];",
              "    add.s64             %d2, %pas0, %d1;",
              "    ld.global.nc.f32    %sa0, [%d2];",
              "    add.s64             %d2, %pas1, %d1;",
              "    ld.global.nc.f32    %sa1, [%d2];"]
    L += ["    mul.rn.f32          %s0, %sa0, %ws;",
          "    mul.rn.f32          %s1, %sa1, %ws;"]
    for i in range(ACC):
        L += [f"    fma.rn.f32          %acc{i}, %part{i}, %s{(i >> 1) & 1}, %acc{i};"]
    L += ["$C_kdone:"]
    L += _advance(stages(ts, to))
    return L + ["    @%p_more bra.uni    $C_k;"]


def _epilogue(to: bool, wd: bool = False) -> list[str]:
    """The idle test, then the epilogue (rung 8 on: TMA store; before: bf16 stores of the run's rows); the next item."""
    L = ["    @%p_idle bra.uni    $C_next;"]
    if to:
        return L + (tma_store_epilogue(2 * TILE_N, "%p_nar") if wd else tma_store_epilogue(TILE_N)) + store_tail()
    L += ["    // epilogue: c[abase + trow (+8)][col0 + 8j + 2t, +1] = bf16x2(acc), rows inside the run only",
          "    add.u32             %tmp2, %row0, %rows;",
          "    setp.lt.u32         %p_r0, %r0, %tmp2;",
          "    setp.ge.and.u32     %p_r0, %r0, %row0, %p_r0;",
          "    add.u32             %tmp, %r0, 8;",
          "    setp.lt.u32         %p_r1, %tmp, %tmp2;",
          "    setp.ge.and.u32     %p_r1, %tmp, %row0, %p_r1;",
          "    shl.b32             %tmp, %t, 1;",
          "    add.u32             %tmp, %tmp, %col0;",
          "    mad.lo.u32          %tmp, %r0, %n, %tmp;",
          "    mul.wide.u32        %d1, %tmp, 2;",
          "    add.s64             %d1, %pc, %d1;",
          "    add.s64             %d2, %d1, %nbytes;          // token row + 8"]
    for j in range(TILE_N // 8):
        for h, (reg, pred) in enumerate((("%d1", "%p_r0"), ("%d2", "%p_r1"))):
            i = 4 * j + 2 * h
            L += [f"    cvt.rn.bf16x2.f32   %hh, %acc{i + 1}, %acc{i};",
                  f"    @{pred} st.global.b32 [{reg}+{16 * j}], %hh;"]
    L += ["$C_next:",
          "    add.u32             %item, %item, %step;",
          "    bra.uni             $C_item;"]
    return L


_PRED_REGS = ("    .reg .pred  %p_lead, %p_q, %p_wait, %p_more, %p_zero, %p_one, %p_idle, %p_r0, %p_r1, %p_nodd;")


def render(wait_bound: int = 0, tma_scales: bool = False, tma_store: bool = False, raster: bool = False,
           overlap: bool = False, wide: bool = False, mcw: bool = False) -> str:
    """The complete PTX module of rung 6 (tma_scales=False), rung 7 (True), rung 8 (and tma_store=True), rung 9
    (and raster=True), rung 10 (and overlap=True), rung 11 (raster=True and wide=True) or rung 12 (and mcw=True).
    wait_bound > 0: every mbarrier wait loop traps after that many failed try_waits (gemm_fp8_ws_template._bounded;
    not in the checked-in files)."""
    if not isinstance(wait_bound, int) or wait_bound < 0:
        raise ValueError(f"wait_bound={wait_bound!r}; expected an int >= 0 (0: unbounded waits)")
    ts, to, rs, ov, wd, mc = tma_scales, tma_store, raster, overlap, wide, mcw
    n_stages = stages(ts, to, rs, ov, wd, mc)
    need = shared_bytes(ts, to, rs, ov, wd, mc)
    if need > SMEM_LIMIT:
        raise ValueError(f"{n_stages} stages need {need} B of shared memory; sm_90 allows {SMEM_LIMIT}")
    stage_bytes = _stage_bytes(wd)
    out = to * OUT_BYTES  # the output buffers sit between the ring and the token-scale rows
    facts = Facts(A_BYTES, W_BYTES, S_BYTES, TILE_N, KT_MAX, EMPTY_COUNT, CLUSTER_CTAS, n_stages, stage_bytes,
                  entry(ts, to, rs, ov, wd, mc), need)
    L = [header(facts, ts, to, rs, ov, wd, mc)]
    L += [_PRED_REGS,
          "    .reg .b16   %mask;",
          "    .reg .b32   %thr, %wg, %sbase, %sfull, %sempty, %kd, %n, %bm, %nblk, %npairs, %nitems, %ktiles;",
          "    .reg .b32   %tp, %nt;",
          "    .reg .b32   %rblk, %first, %step, %item, %kt, %kc, %b, %pos, %ct, %row0, %col0, %e, %ep, %wrow;",
          "    .reg .b32   %abase;",
          "    .reg .b32   %stage, %ph, %pw, %bar, %dst, %sa_a, %sa_w, %tmp, %tmp2, %rank, %peer, %rbar, %hh;",
          "    .reg .b32   %lane, %warp, %g, %t, %cw, %trow, %r0, %nb, %nbmax, %rows;",
          "    .reg .b64   %ptmw, %ptma, %pas, %pws, %pbe, %ptp, %pc, %d0, %d1, %d2, %tok, %da, %db;",
          "    .reg .b64   %pas0, %pas1, %pwsg, %nbytes;",
          *(["    .reg .pred  %p_in;", "    .reg .b32   %ssc, %sws, %bid;", "    .reg .b64   %ptms;"] if ts else []),
          *(STORE_REGS if to else ()),
          *(RASTER_REGS if rs else ()),
          f"    .reg .f32   %acc<{ACC * (1 + wd)}>, %part<{ACC}>, %sa0, %sa1, %s0, %s1, %ws;",
          *(WIDE_REGS if wd else ()),
          *(MCW_REGS if mc else ()),
          *(overlap_regs(ACC) if ov else ()),
          "",
          "    // ---- setup (all threads): parameters, barriers, this cluster's first item -------------------------",
          "    mov.u32             %thr, %tid.x;",
          "    shr.u32             %wg, %thr, 7;",
          "    mov.u32             %sbase, smem;",
          f"    add.u32             %sbase, %sbase, {ALIGN - 1};",
          f"    and.b32             %sbase, %sbase, 0x{-ALIGN & 0xFFFFFFFF:08X};      "
          f"// aligned up to {ALIGN} (the slack)",
          f"    add.u32             %sfull, %sbase, {n_stages * (stage_bytes + ts * S_BYTES) + out};",
          f"    add.u32             %sempty, %sfull, {8 * n_stages};",
          *([f"    add.u32             %sout, %sbase, {n_stages * stage_bytes};         // output buffers"]
            if to else []),
          *([f"    add.u32             %ssc, %sbase, {n_stages * stage_bytes + out};         // token-scale rows",
             f"    add.u32             %sws, %sempty, {8 * n_stages};          // weight-scale areas"] if ts else []),
          "    mov.b64             %ptmw, gf_tm_w;             // the tensor maps' generic addresses (nvcc's form)",
          "    cvta.param.u64      %ptmw, %ptmw;",
          "    mov.b64             %ptma, gf_tm_a;",
          "    cvta.param.u64      %ptma, %ptma;",
          *(["    mov.b64             %ptms, gf_tm_s;", "    cvta.param.u64      %ptms, %ptms;"] if ts else []),
          *(["    mov.b64             %ptmc, gf_tm_c;", "    cvta.param.u64      %ptmc, %ptmc;"] if to else [])]
    globals_ = (() if ts else (("a_scale", "%pas"),)) + (
        ("w_scale", "%pws"), ("block_expert", "%pbe"), ("total_padded", "%ptp")) + (() if to else (("c", "%pc"),))
    for name, reg in globals_:
        L += [f"    ld.param.u64        {reg}, [gf_{name}];", f"    cvta.to.global.u64  {reg}, {reg};"]
    L += ["    ld.param.u32        %kd, [gf_kd];",
          "    ld.param.u32        %n, [gf_n];",
          "    ld.param.u32        %bm, [gf_bm];",
          "    ld.param.u32        %nblk, [gf_blocks];",
          "    ld.global.u32       %tp, [%ptp];",
          "    shr.u32             %ktiles, %kd, 7;            // stages per item = scale groups",
          *(["    add.u32             %nt, %n, 128;",
             "    shr.u32             %nt, %nt, 8;                // N tiles of 256 (the last may be half past N)"]
            if wd else ["    shr.u32             %nt, %n, 7;                 // N tiles"]),
          "    add.u32             %npairs, %nt, 1;",
          "    shr.u32             %npairs, %npairs, 1;        // N-tile pairs (the last one half if N tiles are odd)",
          f"    mov.u32             %tmp, {TILE_M};",
          "    div.u32             %rblk, %tmp, %bm;           // R: routing blocks of an aligned group",
          *(mcw_setup() if mc else []),
          "    mul.lo.u32          %nitems, %nblk, %npairs;    // (block, N-tile pair) items",
          "    ld.param.u32        %tmp2, [gf_item_end];",
          "    min.u32             %nitems, %nitems, %tmp2;    // this launch's items: [item_begin, item_end)",
          *(raster_setup() if rs else []),
          "    mov.u32             %rank, %cluster_ctarank;",
          "    xor.b32             %peer, %rank, 1;",
          "    mov.u32             %first, %clusterid.x;",
          "    mov.u32             %step, %nclusterid.x;",
          "    mov.u16             %mask, 3;",
          "    ld.param.u32        %tmp, [gf_item_begin];",
          "    add.u32             %first, %first, %tmp;",
          "    setp.eq.u32         %p_lead, %thr, 0;",
          "    @!%p_lead bra       $L_inited;"]
    L += [f"    mbarrier.init.shared::cta.b64 [%sfull+{8 * s}], 1;" for s in range(n_stages)]
    L += [f"    mbarrier.init.shared::cta.b64 [%sempty+{8 * s}], {EMPTY_COUNT};" for s in range(n_stages)]
    L += ["    fence.mbarrier_init.release.cluster;",
          "    fence.proxy.async.shared::cta;",
          "$L_inited:",
          # NOTE: the non-.aligned cluster barrier: warp 0 has just diverged around the inits (as in rung 5)
          "    barrier.cluster.arrive.release;",
          "    barrier.cluster.wait.acquire;",
          "    setp.ne.u32         %p_q, %wg, 0;",
          "    @%p_q bra.uni       $C_start;"]
    L += _producer(ts, to, rs, wd, mc)
    L += _consumer(ts, to, rs, ov, wd, mc)
    L += ["$L_end:",
          "    barrier.cluster.arrive.release;             // no remote arrival or copy may reach an exited CTA",
          "    barrier.cluster.wait.acquire;",
          "    ret;", "}"]
    if wait_bound:
        L = _bounded(L, wait_bound)
        L[L.index(_PRED_REGS)] = _PRED_REGS + "\n    .reg .pred  %p_spin;\n    .reg .b32   %spin;"
    return "\n".join(line for line in L if line != "") + "\n"

"""Emit the warp-specialised FP8 grouped GEMM kernels of rungs 4 and 5 (issue #16) from one readable template.

Rung 4 (`grouped_gemm_fp8_ws_m{T}n128.ptx`): a producer warpgroup issuing TMA into a 4-stage mbarrier ring, two
consumer warpgroups on wgmma, `setmaxnreg` moving registers from the producer to the consumers, and a persistent
schedule over (token tile, N tile) items. Rung 5 (`grouped_gemm_fp8_mc_m{T}n128.ptx`) adds 2-CTA clusters: the two
CTAs of a pair take adjacent token tiles and, when both belong to the same expert, each loads half of the shared
weight tile and multicasts it to both (`.multicast::cluster`), as DeepGEMM does for its grouped contiguous layout.
Each rung has one kernel per token tile T = 16, 32, 64 (wgmma m64nTk32); `token_tile(BM)` picks the largest that
divides the routing block, so a tile never straddles two experts and the weight tile is reloaded as rarely as BM allows.

Every instruction below was chosen by hand; Python only writes out the fixed-trip loops (the stages' barrier inits,
the 4 k32 wgmma steps, the T/2 promotions and stores) and the lines where the rungs and tiles differ.
`python -m ptx_impl.gemm_fp8_ws_template` rewrites the six checked-in files (atomically); a test checks they are
current.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

KERNELS_DIR = Path(__file__).parent / "kernels"
TOKEN_TILES = (16, 32, 64)  # wgmma N: token rows of a tile
STAGES = 4  # ring depth (a power of two: stage = it & 3, phase = it >> 2 & 1)
W_BYTES = 128 * 128  # weight tile of one stage: 128 rows (wgmma M, two consumer warpgroups) x 128 B of K
THREADS = 384  # warpgroup 0: producer; 1 and 2: consumers
CONSUMER_WARPS = 8  # each releases a stage (lane 0 arrives on empty[s]) after its own wgmma.wait_group
ALIGN = 1024  # 128B-swizzle atoms (TMA destinations, wgmma descriptors) start 1024-byte aligned
# NOTE: setmaxnreg needs the per-thread count at launch fixed (.maxnreg; without it ptxas allocates 39 and the
# consumers' inc would wait for registers nobody frees): 384 x 168 = 64512 = 128 x 40 (producer) + 256 x 232
MAXNREG, PRODUCER_REGS, CONSUMER_REGS = 168, 40, 232
# wgmma matrix descriptor bits above the start address: SBO = 1024 B (8 rows of 128 B) at bits 32-45, 128B swizzle
# (code 1) at bits 62-63; LBO is unused for swizzled K-major layouts
DESC_HI = (1024 >> 4) << 32 | 1 << 62


def token_tile(bm: int) -> int:
    """The largest token tile that divides the routing block BM (0 if none: BM is not a multiple of 16)."""
    return next((t for t in reversed(TOKEN_TILES) if bm % t == 0), 0)


def entry(cluster: bool, tokens: int) -> str:
    """The entry name of rung 4 (cluster=False) or rung 5 (cluster=True) with `tokens`-row tiles."""
    return f"grouped_gemm_fp8_{'mc' if cluster else 'ws'}_m{tokens}n128"


def path(cluster: bool, tokens: int) -> Path:
    """The checked-in kernel file of `entry(cluster, tokens)`."""
    return KERNELS_DIR / f"{entry(cluster, tokens)}.ptx"


def stage_bytes(tokens: int) -> int:
    """One ring stage: the weight tile, then the token tile (tokens x 128 B); a multiple of 1024, so every tile starts
    1024-aligned as the 128B swizzle atoms need."""
    return W_BYTES + tokens * 128


def shared_bytes(tokens: int) -> int:
    """Dynamic shared memory: the ring, then full[STAGES] and empty[STAGES] mbarriers, and ALIGN bytes of slack: the
    kernel aligns its base up to ALIGN in code rather than trusting `.extern .align` of the dynamic window."""
    return STAGES * stage_bytes(tokens) + 2 * 8 * STAGES + ALIGN


def empty_count(cluster: bool) -> int:
    """Arrivals that complete a phase of an empty barrier: every consumer warp of the CTA, and for rung 5 of the peer
    too (a stage is free only when neither CTA still reads it: the peer's producer multicasts into it)."""
    return CONSUMER_WARPS * (2 if cluster else 1)


def _header(cluster: bool, T: int) -> str:
    rung = "5" if cluster else "4"
    name, sb, shared = entry(cluster, T), stage_bytes(T), shared_bytes(T)
    pair = f"""
//   Cluster pairs (rung 5, .reqnctapercluster 2): pair item p covers token tiles 2p (rank 0) and 2p + 1
//   (rank 1) at one N tile, item = p x N tiles + N tile; cluster j takes pair items item_begin + j, + clusters, ...
//   below item_end; both CTAs walk the same items and stages in lockstep. When both tiles are live and of
//   the same expert, each producer loads weight rows 64*rank.. of the tile and multicasts them (ctaMask 0b11) to
//   both CTAs; otherwise each live CTA loads its own 128 rows, and a dead one only arrives on its full barrier so
//   that its consumers still release the stage. Each consumer warp releases a stage on its own AND the peer's
//   empty barrier ({empty_count(True)} arrivals a phase), so no producer multicasts into a stage the peer still reads.
//   barrier.cluster after the barrier inits and before exit: no remote arrival or copy reaches an exited CTA.""" \
        if cluster else ""
    w_box = 64 if cluster else 128
    what = ", 2-CTA clusters multicasting the weight tile" if cluster else ""
    rule = "// " + "=" * 108
    return f"""{rule}
// {name} (rung {rung}): FP8 e4m3 grouped GEMM with DeepSeek-V3's fine-grained scales,
// warp-specialised wgmma + TMA + mbarrier ring, persistent{what}.
// Generated by ptx_impl/gemm_fp8_ws_template.py (fixed-trip loops written out); edit the template, then run
// `python -m ptx_impl.gemm_fp8_ws_template`.
//
// Contract (docs/kernels.md "grouped_gemm_fp8"): a e4m3[P_max, Kd] (tensor map gf_tm_a, box {T} rows x 128 B),
//   a_scale f32[P_max, Kd/128], w e4m3[E, N, Kd] (tensor map gf_tm_w over (E*N, Kd), box {w_box} rows x 128 B),
//   w_scale f32[E, N/128, Kd/128], block_expert i32[P_max/BM], total_padded i32[1] -> c bf16[P_max, N]; rows >=
//   total_padded and blocks of expert -1 are never written.
//
// Tiling ("swap AB"): wgmma's M is 64 per warpgroup, but a routing block (one expert) is only BM = 16, 32 or 64
//   rows, so the weight rows are wgmma's M and the tokens its N: m64n{T}k32, {T} tokens a tile (for BM % {T} == 0),
//   128 weight rows a tile (two consumer warpgroups x 64 = one 128 x 128 weight-scale block, so one w_scale per
//   stage). An item is (token tile, N tile), item = token tile x N tiles + N tile; grid = the SMs in use, CTA i
//   takes items item_begin + i, + grid, ... below item_end (and below the item count; a whole launch passes 0 and
//   the count, a sampled one a window of it) and skips items past total_padded or of expert -1. The stage counter
//   runs on across items (the ring never drains).{pair}
//
// Roles: 384 threads (.maxntid 384), .maxnreg {MAXNREG}; registers
//   384 x {MAXNREG} = 128 x {PRODUCER_REGS} + 256 x {CONSUMER_REGS}: the consumers take what the producer frees.
//   warpgroup 0, producer: setmaxnreg.dec {PRODUCER_REGS}; thread 0 waits on empty[s], arrive.expect_tx({sb})
//     on full[s], cp.async.bulk.tensor the weight and token tiles (128B swizzle) into stage s, completing full[s].
//   warpgroups 1, 2, consumers: setmaxnreg.inc {CONSUMER_REGS}; wait on full[s]; 4 x wgmma.mma_async m64n{T}k32 e4m3
//     (descriptors: SBO 1024, 128B swizzle, +32 B of K a step; the first with scale-d false), commit,
//     wait_group 0; lane 0 of each consumer warp arrives on empty[s] ({empty_count(cluster)} arrivals a phase: a warp
//     releases only after its own wait_group retired its reads, as the per-warp rule asks); then the promotion.
// Promotion, every 128 of K (one stage = one scale group; DeepSeek-V3 technical report, section 3.3): the stage's
//   partial sums are multiplied by a_scale[token][g] * w_scale[e][n/128][g] and added into fp32 registers with
//   fma.rn.f32 on the CUDA cores.
// Accumulators (wgmma D, thread = warp w of its warpgroup, lane 4g + t): register i is weight row 16w + g +
//   8(i>>1 & 1) of the warpgroup's 64, token 8(i>>2) + 2t + (i&1), i < {T // 2}; the epilogue stores each as a bf16.
// Shared memory (dynamic, {shared} B): from the base aligned up to {ALIGN} in code (the window's alignment is
//   not trusted; {ALIGN} B of slack), {STAGES} stages x ({W_BYTES} B weights + {T * 128} B tokens), then
//   full[{STAGES}] and empty[{STAGES}].
{rule}
.version 8.4
.target sm_90a
.address_size 64

.extern .shared .align 1024 .b8 smem[];

.visible .entry {name}(
    .param .align 64 .b8 gf_tm_w[128],
    .param .align 64 .b8 gf_tm_a[128],
    .param .u64 gf_a_scale,
    .param .u64 gf_w_scale,
    .param .u64 gf_block_expert,
    .param .u64 gf_total_padded,
    .param .u64 gf_c,
    .param .u32 gf_kd,
    .param .u32 gf_n,
    .param .u32 gf_bm,
    .param .u32 gf_rtiles,
    .param .u32 gf_item_begin,
    .param .u32 gf_item_end
)
.maxntid {THREADS}, 1, 1
.maxnreg {MAXNREG}{chr(10) + ".reqnctapercluster 2, 1, 1" if cluster else ""}
{{"""


def _expert(prefix: str, rt: str, e: str, shift: int) -> list[str]:
    """%e = expert of token tile %rt, or -1 when the tile is past P_max, at or past total_padded, or on expert -1."""
    return [
        f"    mov.s32             {e}, -1;",
        f"    setp.ge.u32         %p_q, {rt}, %rtiles;",
        f"    shl.b32             %tmp, {rt}, {shift};",
        "    setp.ge.or.u32      %p_q, %tmp, %tp, %p_q;",
        f"    @%p_q bra.uni       {prefix};",
        "    div.u32             %tmp, %tmp, %bm;",
        "    mul.wide.u32        %d0, %tmp, 4;",
        "    add.s64             %d0, %pbe, %d0;",
        f"    ld.global.s32       {e}, [%d0];",
        f"{prefix}:",
    ]


def _decode(role: str, cluster: bool, shift: int) -> list[str]:
    """Item -> token tile %rt, N tile %ct, expert %e (and the peer's %ep, %p_mc, %p_dead); skips dead items."""
    L = [f"${role}_item:",
         "    setp.ge.u32         %p_q, %item, %nitems;",
         "    @%p_q bra.uni       $L_end;",
         "    div.u32             %tmp2, %item, %nt;",
         "    mul.lo.u32          %tmp, %tmp2, %nt;",
         "    sub.u32             %ct, %item, %tmp;           // N tile"]
    if cluster:
        L += ["    shl.b32             %tmp2, %tmp2, 1;",
              "    add.u32             %rt, %tmp2, %rank;          // my token tile",
              "    add.u32             %rtp, %tmp2, %peer;         // the peer's"]
        L += _expert(f"${role}_e", "%rt", "%e", shift) + _expert(f"${role}_ep", "%rtp", "%ep", shift)
        L += ["    max.s32             %tmp, %e, %ep;",
              "    setp.lt.s32         %p_q, %tmp, 0;",
              f"    @%p_q bra.uni       ${role}_next;               // both tiles dead: both CTAs skip the item",
              "    setp.eq.s32         %p_mc, %e, %ep;              // same expert (both live): multicast the weights",
              "    setp.lt.s32         %p_dead, %e, 0;"]
    else:
        L += ["    mov.u32             %rt, %tmp2;"]
        L += _expert(f"${role}_e", "%rt", "%e", shift)
        L += ["    setp.lt.s32         %p_q, %e, 0;",
              f"    @%p_q bra.uni       ${role}_next;"]
    L += [f"    shl.b32             %row0, %rt, {shift};              // first token row",
          "    shl.b32             %col0, %ct, 7;              // first output column",
          "    mad.lo.u32          %wrow, %e, %n, %col0;       // first weight row in the (E*N, Kd) view",
          "    mov.u32             %kt, 0;"]
    return L


def _stage(role: str, bars: str) -> list[str]:
    """%stage, %ph (the parity to wait for) and %bar (the stage's barrier in `bars`) of stage use %it."""
    flip = ["    xor.b32             %ph, %ph, 1;                // the previous phase: free on the first pass"] \
        if role == "P" else []
    return ["    and.b32             %stage, %it, 3;",
            "    shr.u32             %ph, %it, 2;",
            "    and.b32             %ph, %ph, 1;", *flip,
            f"    mad.lo.u32          %bar, %stage, 8, {bars};",
            f"${role}_wait:",
            "    mbarrier.try_wait.parity.shared::cta.b64 %p_wait, [%bar], %ph;",
            f"    @!%p_wait bra       ${role}_wait;"]


def _bounded(lines: list[str], wait_bound: int) -> list[str]:
    """`lines` with each try_wait retry loop (a try_wait, then `@!%p_wait bra <its label>`) counted: past
    `wait_bound` failed tries the thread executes trap, so a phase that never completes ends the launch with an
    error (cuStreamSynchronize returns CUDA_ERROR_ILLEGAL_INSTRUCTION) instead of hanging the GPU."""
    out = []
    for i, line in enumerate(lines):
        waits = line.startswith("    @!%p_wait bra") and i > 0 and "mbarrier.try_wait" in lines[i - 1]
        if not waits:
            out.append(line)
            continue
        label = line.split()[-1].rstrip(";")
        if out[-2] != f"{label}:":
            raise ValueError(f"the wait loop at {label} does not start at its try_wait; cannot bound it")
        out.insert(len(out) - 2, "    mov.u32             %spin, 0;")
        out += [f"    @%p_wait bra        {label}_ok;",
                "    add.u32             %spin, %spin, 1;",
                f"    setp.lt.u32         %p_spin, %spin, {wait_bound};",
                f"    @%p_spin bra        {label};",
                "    trap;                                       // the bound passed: a phase that never completes",
                f"{label}_ok:"]
    return out


def _producer(cluster: bool, T: int) -> list[str]:
    tma = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
    L = ["",
         "    // ---- producer warpgroup: one thread feeds the ring ------------------------------------------------",
         "$P_start:",
         f"    setmaxnreg.dec.sync.aligned.u32 {PRODUCER_REGS};",
         "    @!%p_lead bra       $L_end;                 // threads 1..127 have nothing to do",
         "    mov.u32             %it, 0;",
         "    mov.u32             %item, %first;"]
    L += _decode("P", cluster, T.bit_length() - 1)
    L += ["$P_k:"] + _stage("P", "%sempty")
    L += ["    mad.lo.u32          %bar, %stage, 8, %sfull;",
          f"    mad.lo.u32          %dst, %stage, {stage_bytes(T)}, %sbase;",
          f"    add.u32             %dsta, %dst, {W_BYTES};",
          "    shl.b32             %kc, %kt, 7;                // K coordinate (elements = bytes)"]
    if cluster:
        L += ["    @%p_dead bra.uni    $P_dead;",
              f"    mbarrier.arrive.expect_tx.shared::cta.b64 %tok, [%bar], {stage_bytes(T)};",
              f"    {tma} [%dsta], [%ptma, {{%kc, %row0}}], [%bar];",
              "    @!%p_mc bra.uni     $P_solo;",
              "    shl.b32             %tmp, %rank, 13;            // my half: rows 64*rank.. at byte 8192*rank",
              "    add.u32             %dst, %dst, %tmp;",
              "    shl.b32             %tmp, %rank, 6;",
              "    add.u32             %tmp, %wrow, %tmp;",
              f"    {tma}.multicast::cluster [%dst], [%ptmw, {{%kc, %tmp}}], [%bar], %mask;",
              "    bra.uni             $P_issued;",
              "$P_solo:",
              f"    {tma} [%dst], [%ptmw, {{%kc, %wrow}}], [%bar];",
              "    add.u32             %dst, %dst, 8192;",
              "    add.u32             %tmp, %wrow, 64;",
              f"    {tma} [%dst], [%ptmw, {{%kc, %tmp}}], [%bar];",
              "    bra.uni             $P_issued;",
              "$P_dead:",
              "    mbarrier.arrive.shared::cta.b64 %tok, [%bar];  // no bytes: my consumers only release the stage",
              "$P_issued:"]
    else:
        L += [f"    mbarrier.arrive.expect_tx.shared::cta.b64 %tok, [%bar], {stage_bytes(T)};",
              f"    {tma} [%dst], [%ptmw, {{%kc, %wrow}}], [%bar];",
              f"    {tma} [%dsta], [%ptma, {{%kc, %row0}}], [%bar];"]
    L += ["    add.u32             %it, %it, 1;",
          "    add.u32             %kt, %kt, 1;",
          "    setp.lt.u32         %p_more, %kt, %ktiles;",
          "    @%p_more bra.uni    $P_k;",
          "$P_next:",
          "    add.u32             %item, %item, %step;",
          "    bra.uni             $P_item;"]
    return L


def _consumer(cluster: bool, T: int) -> list[str]:
    L = ["",
         "    // ---- consumer warpgroups: wgmma, promotion, epilogue -----------------------------------------------",
         "$C_start:",
         f"    setmaxnreg.inc.sync.aligned.u32 {CONSUMER_REGS};",
         "    sub.u32             %cw, %wg, 1;                // weight rows 64*cw.. of the tile",
         "    and.b32             %lane, %thr, 31;",
         "    shr.u32             %warp, %thr, 5;",
         "    and.b32             %warp, %warp, 3;",
         "    shr.u32             %g, %lane, 2;",
         "    and.b32             %t, %lane, 3;",
         "    setp.eq.u32         %p_lead, %lane, 0;          // lane 0 releases stages for its warp",
         "    setp.eq.u32         %p_zero, %wg, 0;            // false here: scale-d of each stage's first wgmma",
         "    setp.ne.u32         %p_one, %wg, 0;             // true",
         "    shl.b32             %tmp, %cw, 13;",
         "    add.u32             %sa_w, %sbase, %tmp;        // weight rows 64*cw.. of stage 0",
         f"    add.u32             %sa_a, %sbase, {W_BYTES};         // tokens of stage 0",
         "    mul.wide.u32        %nbytes, %n, 2;             // one c row"]
    if cluster:
        L += ["    mapa.shared::cluster.u32 %rbar, %sempty, %peer;  // the peer's empty barriers"]
    L += ["    mov.u32             %it, 0;",
          "    mov.u32             %item, %first;"]
    L += _decode("C", cluster, T.bit_length() - 1)
    L += [f"    mov.f32             %acc{i}, 0f00000000;" for i in range(T // 2)]
    L += ["    // scale pointers: a_scale row row0 + 2t (tokens 8j + 2t, 8j + 2t + 1), w_scale[e][ct][.]",
          "    add.u32             %tmp, %row0, %t;",
          "    add.u32             %tmp, %tmp, %t;",
          "    mul.wide.u32        %d0, %tmp, %ktiles;",
          "    shl.b64             %d0, %d0, 2;",
          "    add.s64             %pasr, %pas, %d0;",
          "    mul.wide.u32        %grow, %ktiles, 4;          // one a_scale row",
          "    mad.lo.u32          %tmp, %e, %nt, %ct;",
          "    mul.wide.u32        %d0, %tmp, %ktiles;",
          "    shl.b64             %d0, %d0, 2;",
          "    add.s64             %pwsg, %pws, %d0;",
          "$C_k:"]
    L += _stage("C", "%sfull")
    if cluster:
        L += ["    @%p_dead bra.uni    $C_release;"]
    L += [f"    mul.lo.u32          %dst, %stage, {stage_bytes(T)};",
          "    add.u32             %tmp, %sa_w, %dst;",
          "    shr.u32             %tmp, %tmp, 4;",
          "    cvt.u64.u32         %da, %tmp;",
          f"    or.b64              %da, %da, {DESC_HI:#x};",
          "    add.u32             %tmp, %sa_a, %dst;",
          "    shr.u32             %tmp, %tmp, 4;",
          "    cvt.u64.u32         %db, %tmp;",
          f"    or.b64              %db, %db, {DESC_HI:#x};",
          "    wgmma.fence.sync.aligned;"]
    parts = ", ".join(f"%part{i}" for i in range(T // 2))
    for ks in range(4):
        if ks:
            L += ["    add.s64             %da, %da, 2;                // +32 B of K",
                  "    add.s64             %db, %db, 2;"]
        L += [f"    wgmma.mma_async.sync.aligned.m64n{T}k32.f32.e4m3.e4m3 {{{parts}}}, %da, %db, "
              f"{'%p_zero' if ks == 0 else '%p_one'}, 1, 1;"]
    L += ["    wgmma.commit_group.sync.aligned;",
          "    wgmma.wait_group.sync.aligned 0;",
          "$C_release:",
          "    mad.lo.u32          %bar, %stage, 8, %sempty;",
          "    @%p_lead mbarrier.arrive.shared::cta.b64 %tok, [%bar];"]
    if cluster:
        L += ["    mad.lo.u32          %bar, %stage, 8, %rbar;",
              "    @%p_lead mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%bar];",
              "    @%p_dead bra.uni    $C_kdone;"]
    L += [f"    // promotion of this scale group: {T // 4} token scales x the block's weight scale, fma into fp32",
          "    mul.wide.u32        %d0, %kt, 4;",
          "    add.s64             %d1, %pwsg, %d0;",
          "    ld.global.nc.f32    %ws, [%d1];",
          "    add.s64             %d1, %pasr, %d0;"]
    for j in range(T // 8):
        for b in range(2):
            if j or b:
                L += ["    add.s64             %d1, %d1, %grow;" if b else
                      f"    mad.lo.s64          %d1, %grow, 7, %d1;         // token {8 * j} + 2t"]
            L += [f"    ld.global.nc.f32    %sa{2 * j + b}, [%d1];",
                  f"    mul.rn.f32          %s{2 * j + b}, %sa{2 * j + b}, %ws;"]
    for i in range(T // 2):
        L += [f"    fma.rn.f32          %acc{i}, %part{i}, %s{2 * (i >> 2) + (i & 1)}, %acc{i};"]
    L += ["$C_kdone:" if cluster else "",
          "    add.u32             %it, %it, 1;",
          "    add.u32             %kt, %kt, 1;",
          "    setp.lt.u32         %p_more, %kt, %ktiles;",
          "    @%p_more bra.uni    $C_k;"]
    if cluster:
        L += ["    @%p_dead bra.uni    $C_next;"]
    L += ["    // epilogue: c[row0 + token][col0 + 64cw + 16w + g (+8)] = bf16(acc)",
          "    add.u32             %tmp, %row0, %t;",
          "    add.u32             %tmp, %tmp, %t;",
          "    shl.b32             %tmp2, %cw, 6;",
          "    add.u32             %tmp2, %tmp2, %col0;",
          "    shl.b32             %dst, %warp, 4;",
          "    add.u32             %tmp2, %tmp2, %dst;",
          "    add.u32             %tmp2, %tmp2, %g;",
          "    mad.lo.u32          %tmp, %tmp, %n, %tmp2;",
          "    mul.wide.u32        %d0, %tmp, 2;",
          "    add.s64             %d0, %pc, %d0;"]
    for j in range(T // 8):
        if j:
            L += [f"    mad.lo.s64          %d0, %nbytes, 8, %d0;       // token {8 * j} + 2t"]
        L += ["    add.s64             %d1, %d0, %nbytes;          // token + 1"]
        for h in range(2):
            for b in range(2):
                i = 4 * j + 2 * h + b
                L += [f"    cvt.rn.bf16.f32     %h, %acc{i};",
                      f"    st.global.b16       [{'%d1' if b else '%d0'}+{16 * h}], %h;"]
    L += ["$C_next:",
          "    add.u32             %item, %item, %step;",
          "    bra.uni             $C_item;"]
    return L


_PRED_REGS = "    .reg .pred  %p_lead, %p_q, %p_wait, %p_more, %p_zero, %p_one, %p_mc, %p_dead;"


def render(cluster: bool, tokens: int, wait_bound: int = 0) -> str:
    """The complete PTX module of rung 4 (cluster=False) or rung 5 (cluster=True) with `tokens`-row tiles.
    wait_bound > 0: every mbarrier wait loop traps after that many failed try_waits (_bounded; not in the checked-in
    files, which are render(cluster, tokens))."""
    if tokens not in TOKEN_TILES:
        raise ValueError(f"tokens={tokens!r}; expected one of {TOKEN_TILES}")
    if not isinstance(wait_bound, int) or wait_bound < 0:
        raise ValueError(f"wait_bound={wait_bound!r}; expected an int >= 0 (0: unbounded waits)")
    T = tokens
    L = [_header(cluster, T)]
    L += [_PRED_REGS,
          "    .reg .b16   %h, %mask;",
          "    .reg .b32   %thr, %wg, %sbase, %sfull, %sempty, %kd, %n, %bm, %rtiles, %nt, %nitems, %ktiles, %tp;",
          "    .reg .b32   %first, %step, %item, %it, %kt, %kc, %rt, %rtp, %ct, %row0, %col0, %e, %ep, %wrow;",
          "    .reg .b32   %stage, %ph, %bar, %dst, %dsta, %sa_w, %sa_a, %tmp, %tmp2, %rank, %peer, %rbar;",
          "    .reg .b32   %lane, %warp, %g, %t, %cw;",
          "    .reg .b64   %ptmw, %ptma, %pas, %pws, %pbe, %ptp, %pc, %d0, %d1, %tok, %da, %db, %pasr, %pwsg;",
          "    .reg .b64   %grow, %nbytes;",
          f"    .reg .f32   %acc<{T // 2}>, %part<{T // 2}>, %sa<{T // 4}>, %s<{T // 4}>, %ws;",
          "",
          "    // ---- setup (all threads): parameters, barriers, this CTA's first item -----------------------------",
          "    mov.u32             %thr, %tid.x;",
          "    shr.u32             %wg, %thr, 7;",
          "    mov.u32             %sbase, smem;",
          f"    add.u32             %sbase, %sbase, {ALIGN - 1};",
          f"    and.b32             %sbase, %sbase, 0x{-ALIGN & 0xFFFFFFFF:08X};      "
          f"// aligned up to {ALIGN} (the slack)",
          f"    add.u32             %sfull, %sbase, {STAGES * stage_bytes(T)};",
          f"    add.u32             %sempty, %sfull, {8 * STAGES};"]
    L += ["    mov.b64             %ptmw, gf_tm_w;             // the tensor maps' generic addresses (nvcc's form)",
          "    cvta.param.u64      %ptmw, %ptmw;",
          "    mov.b64             %ptma, gf_tm_a;",
          "    cvta.param.u64      %ptma, %ptma;"]
    for name in ("a_scale", "w_scale", "block_expert", "total_padded", "c"):
        reg = {"a_scale": "%pas", "w_scale": "%pws", "block_expert": "%pbe", "total_padded": "%ptp", "c": "%pc"}[name]
        L += [f"    ld.param.u64        {reg}, [gf_{name}];", f"    cvta.to.global.u64  {reg}, {reg};"]
    L += ["    ld.param.u32        %kd, [gf_kd];",
          "    ld.param.u32        %n, [gf_n];",
          "    ld.param.u32        %bm, [gf_bm];",
          "    ld.param.u32        %rtiles, [gf_rtiles];",
          "    ld.global.u32       %tp, [%ptp];",
          "    shr.u32             %ktiles, %kd, 7;            // stages per item = scale groups",
          "    shr.u32             %nt, %n, 7;                 // N tiles = weight blocks",
          "    ld.param.u32        %tmp2, [gf_item_end];"]
    if cluster:
        L += ["    add.u32             %tmp, %rtiles, 1;",
              "    shr.u32             %tmp, %tmp, 1;",
              "    mul.lo.u32          %nitems, %tmp, %nt;         // (token-tile pair, N tile) items",
              "    mov.u32             %rank, %cluster_ctarank;",
              "    xor.b32             %peer, %rank, 1;",
              "    mov.u32             %first, %clusterid.x;",
              "    mov.u32             %step, %nclusterid.x;",
              "    mov.u16             %mask, 3;"]
    else:
        L += ["    mul.lo.u32          %nitems, %rtiles, %nt;      // (token tile, N tile) items",
              "    mov.u32             %first, %ctaid.x;",
              "    mov.u32             %step, %nctaid.x;"]
    L += ["    min.u32             %nitems, %nitems, %tmp2;    // this launch's items: [item_begin, item_end)",
          "    ld.param.u32        %tmp, [gf_item_begin];",
          "    add.u32             %first, %first, %tmp;"]
    L += ["    setp.eq.u32         %p_lead, %thr, 0;",
          "    @!%p_lead bra       $L_inited;"]
    L += [f"    mbarrier.init.shared::cta.b64 [%sfull+{8 * s}], 1;" for s in range(STAGES)]
    L += [f"    mbarrier.init.shared::cta.b64 [%sempty+{8 * s}], {empty_count(cluster)};" for s in range(STAGES)]
    L += ["    fence.mbarrier_init.release.cluster;",
          "    fence.proxy.async.shared::cta;",
          "$L_inited:"]
    # NOTE: the cluster barriers are the non-.aligned forms: warp 0 has just diverged around the inits (and, at the
    # end, producer thread 0 arrives from its loop while lanes 1..31 came straight from setmaxnreg)
    L += (["    barrier.cluster.arrive.release;", "    barrier.cluster.wait.acquire;"] if cluster
          else ["    bar.sync            0;"])
    L += ["    setp.ne.u32         %p_q, %wg, 0;",
          "    @%p_q bra.uni       $C_start;"]
    L += _producer(cluster, T)
    L += _consumer(cluster, T)
    L += ["$L_end:"]
    if cluster:
        L += ["    barrier.cluster.arrive.release;             // no remote arrival or copy may reach an exited CTA",
              "    barrier.cluster.wait.acquire;"]
    L += ["    ret;", "}"]
    if wait_bound:
        L = _bounded(L, wait_bound)
        L[L.index(_PRED_REGS)] = _PRED_REGS + "\n    .reg .pred  %p_spin;\n    .reg .b32   %spin;"
    return "\n".join(line for line in L if line != "") + "\n"


def write() -> list[Path]:
    """Rewrite every checked-in kernel file atomically (temporary file in the same folder, then rename)."""
    out = []
    for cluster, tokens in ((c, t) for c in (False, True) for t in TOKEN_TILES):
        target = path(cluster, tokens)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(render(cluster, tokens))
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; the checked-in file is an ordinary readable source
        os.replace(tmp, target)
        out.append(target)
    return out


if __name__ == "__main__":
    for p in write():
        print(p)

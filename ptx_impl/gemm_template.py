"""Emit the grouped-GEMM PTX (ptx_impl/kernels/grouped_gemm_m*.ptx) from one readable template.

The kernel is written once here as PTX text with its tile constants filled in by Python string formatting and its
short fixed-trip loops (the fragment loads, the MMAs, the copy slots) unrolled by list comprehensions. The output is
deterministic: `python -m ptx_impl.gemm_template` rewrites the checked-in files, and a test checks they are current.

Nothing here is compiler output: every instruction below was chosen by hand; the generator only repeats them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

KERNEL_DIR = Path(__file__).parent / "kernels"
NTHREADS = 128  # 4 warps per CTA
WARPS = NTHREADS // 32
PAD_BYTES = 16  # one 16-byte chunk of padding per output-staging row (see "Bank conflicts" in the header)


@dataclass(frozen=True)
class GemmTile:
    """Tile constants of one generated kernel.

    tm: rows of a CTA tile (divides the routing block BM, so one CTA never straddles two experts).
    tn: columns (output features) of a CTA tile.  bk: K-depth of one pipeline stage.  stages: cp.async ring depth.
    """

    tm: int
    tn: int = 64
    bk: int = 32
    stages: int = 4

    # --- warp layout: WM x WN warps, each owning a (warp_m x warp_n) sub-tile of m16n8 MMA fragments ---
    @property
    def wm(self) -> int:
        return min(self.tm // 16, 2)

    @property
    def wn(self) -> int:
        return WARPS // self.wm

    @property
    def warp_m(self) -> int:
        return self.tm // self.wm

    @property
    def warp_n(self) -> int:
        return self.tn // self.wn

    @property
    def mf(self) -> int:  # m16 fragments per warp
        return self.warp_m // 16

    @property
    def nf(self) -> int:  # n8 fragments per warp
        return self.warp_n // 8

    # --- shared memory ---
    @property
    def srow(self) -> int:  # bytes per pipeline-tile row: bk bf16, no padding (the 16-byte chunks are XOR-swizzled)
        return self.bk * 2

    @property
    def a_bytes(self) -> int:
        return self.tm * self.srow

    @property
    def stage_bytes(self) -> int:
        return (self.tm + self.tn) * self.srow

    @property
    def crow(self) -> int:  # bytes per row of the output staging tile
        return self.tn * 2 + PAD_BYTES

    @property
    def smem_bytes(self) -> int:
        return max(self.stages * self.stage_bytes, self.tm * self.crow)

    # --- copy slots: 16-byte chunks per thread ---
    @property
    def chunks_per_row(self) -> int:
        return self.bk // 8

    @property
    def a_chunks(self) -> int:
        return self.tm * self.chunks_per_row

    @property
    def b_chunks(self) -> int:
        return self.tn * self.chunks_per_row

    @property
    def c_chunks_per_row(self) -> int:
        return self.tn // 8

    @property
    def entry(self) -> str:
        return f"grouped_gemm_bf16_m{self.tm}n{self.tn}k{self.bk}s{self.stages}"

    @property
    def tag(self) -> str:
        return f"{self.tm}n{self.tn}"

    @property
    def filename(self) -> str:
        return f"grouped_gemm_m{self.tag}.ptx"

    def validate(self) -> None:
        """Raise ValueError when the constants cannot tile (a generator bug, never user input)."""
        pow2 = [("tn", self.tn), ("bk", self.bk), ("chunks_per_row", self.chunks_per_row), ("wn", self.wn)]
        for name, value in pow2:
            if value <= 0 or value & (value - 1):
                raise ValueError(f"GemmTile.{name}={value}: expected a power of two")
        if self.tm not in (16, 32, 64) or self.bk != 32 or self.nf % 2 or self.stages < 2:
            raise ValueError(f"unsupported tile {self}: tm in (16, 32, 64), bk == 32 (the swizzle assumes 64-byte "
                             f"rows), even nf, stages >= 2")
        if self.warp_m % 8 or self.warp_n % 8:
            raise ValueError(f"tile {self}: warp offsets must be multiples of 8 rows to keep the swizzle key")
        if self.b_chunks % NTHREADS or (self.a_chunks > NTHREADS and self.a_chunks % NTHREADS):
            raise ValueError(f"tile {self}: copy chunks must spread evenly over {NTHREADS} threads")
        if (self.tm * self.c_chunks_per_row) % NTHREADS or NTHREADS % self.c_chunks_per_row:
            raise ValueError(f"tile {self}: output chunks must spread evenly over {NTHREADS} threads")
        if self.smem_bytes > 48 * 1024:
            raise ValueError(f"tile {self}: {self.smem_bytes} B of static shared memory exceeds 48 KiB")


# NOTE: 64-row tiles use 128 columns when N allows: a 32 x 64 warp tile issues 6 ldmatrix.x4 per 16 MMAs instead of
# 4 per 8 (a quarter less shared-memory traffic per MMA), and each activation slab copied in feeds twice the output
# columns; 4 stages of 64 + 128 swizzled rows are exactly 48 KiB. Narrow (n64) tiles stay for small M, where more
# CTAs matter more. (Chosen on these counts, not yet measured on a GPU.)
# Keyed by tile tag "<rows>n<cols>": the kernel file is grouped_gemm_m<tag>.ptx.
TILES: dict[str, GemmTile] = {t.tag: t for t in (GemmTile(16), GemmTile(32), GemmTile(64), GemmTile(64, tn=128))}


def _log2(x: int) -> int:
    return x.bit_length() - 1


def _header(t: GemmTile) -> str:
    acc = t.mf * t.nf * 4
    return f"""\
// ============================================================================================================
// {t.entry}: grouped (per-expert) GEMM over aligned row blocks, bf16 in, fp32 accumulate, bf16 out.
// Generated by ptx_impl/gemm_template.py from a hand-written template (tile constants filled in, fixed-trip
// loops unrolled); edit the template, then run `python -m ptx_impl.gemm_template`.
//
// Contract (docs/kernels.md section 5):
//   a bf16[P_max, Kd], w bf16[E, N, Kd], block_expert i32[P_max/BM], total_padded i32[1] -> c bf16[P_max, N]
//   for every routing block b with e = block_expert[b] >= 0:  c[rows of b] = bf16_rn(a[rows of b] @ w[e].T)
//   rows >= total_padded are never written.
//
// Grid and tiles:
//   grid = (N / {t.tn}, P_max / {t.tm}, 1), block = {NTHREADS} threads (4 warps). CTA (x, y) computes the
//   {t.tm} x {t.tn} output tile at rows y*{t.tm}.., columns x*{t.tn}.. . {t.tm} divides BM, so the whole tile
//   belongs to routing block row0 / BM and one expert e = block_expert[row0 / BM]; CTAs whose block has e < 0 (or that
//   start at or past total_padded) exit at once, so padding blocks beyond total_padded cost one load.
//   Warps form a {t.wm} x {t.wn} grid; each owns a {t.warp_m} x {t.warp_n} sub-tile = {t.mf} x {t.nf} MMA fragments of
//   m16n8 ({acc} fp32 accumulators per thread).
//
// Phases:
//   0. Which tile, which expert: read total_padded and block_expert, exit early for idle tiles.
//   1. Addresses: per thread, the global source and shared destination of its 16-byte copy slots (A: the
//      {t.tm} x {t.bk} activation slab, B: the {t.tn} x {t.bk} weight slab of expert e) and its ldmatrix row addresses.
//   2. Prologue: issue K-tiles 0..{t.stages - 2} with cp.async.cg (16 B, L2 only: each slab is read once per CTA),
//      one commit_group per tile.
//   3. Main loop over Kd / {t.bk} K-tiles: wait_group {t.stages - 2} (tile kt has landed), bar.sync (everyone's copies
//      visible; everyone is done reading the stage about to be refilled), issue tile kt+{t.stages - 1} into that
//      stage, then for each k16 step: ldmatrix.x4 the A fragments ({t.mf}) and B fragment pairs ({t.nf // 2}),
//      {t.mf * t.nf} x mma.sync m16n8k16. Copies for later tiles run while the tensor cores work.
//   4. Epilogue: cvt.rn.bf16x2.f32 packs accumulator pairs, the tile is staged through shared memory, and each
//      thread writes whole 16-byte row chunks with st.global.v4 (coalesced, no partial sectors).
//
// Why each trick pays (none of them is expressible in Numba CUDA):
//   - mma.sync m16n8k16 bf16 -> fp32: the tensor cores do 2048 multiply-adds per warp instruction.
//   - ldmatrix.x4: one instruction gives a warp four 8x8 bf16 matrices already in MMA fragment order, instead of
//     four 32-bit shared loads per thread per A fragment (two per B fragment) with fragment-order address math.
//   - cp.async.cg + a {t.stages}-stage ring: global->shared copies bypass registers and L1 and overlap compute;
//     wait_group N retires them in order without a full drain.
//   - Bank conflicts: slab rows are {t.srow} B ({t.bk} bf16, 4 chunks of 16 B), two rows per 128-byte bank line. Chunk
//     ch of row r is stored at chunk ch ^ ((r >> 1) & 3) (XOR swizzle). An ldmatrix 8x8 matrix reads one chunk
//     column of 8 consecutive rows: 2 rows per line x 4 distinct swizzled chunks = 8 distinct 16-byte bank
//     groups, conflict-free; each 8-lane phase of a cp.async fill writes 2 whole rows = 8 distinct groups too.
//     (Padding rows to 80 B would fix the reads but leave the fills 2-way conflicted and cost 25% more memory.)
//     The output staging tile uses {t.crow} B rows, so a warp's 32 packed 4-byte writes (8 rows x 4 columns)
//     land in 32 distinct banks.
//   - w is [N, Kd] (K contiguous), which is exactly the "col" B operand: the weight slab is loaded by plain
//     (non-.trans) ldmatrix, no transpose anywhere.
//
// Register roles:
//   %acc*  fp32 accumulators, index (mi*{t.nf} + ni)*4 + i for fragment (mi, ni), element i of the m16n8 C layout
//   %fa*   A fragments (4 x b32 per m16k16 fragment), %fb* B fragments (2 x b32 per k16n8 fragment)
//   %ga* / %gb*  global source of this thread's A / B copy slots (advance {t.bk * 2} B per K-tile)
//   %sa* / %sb*  shared destination of the slots (stage 0; the stage offset %st_wr is added per copy)
//   %lda* / %ldb*  this lane's ldmatrix row address in stage 0 for fragment row/column 0, one per k16 step
//                  (the swizzle makes the chunk, hence the address, differ per step)
//   %st_rd / %st_wr  byte offset of the stage being read / written (ring of {t.stages} x {t.stage_bytes} B)
// Shared memory: {t.smem_bytes} B static; stage s = A slab ({t.a_bytes} B) then B slab ({t.tn * t.srow} B);
//   the epilogue reuses it as the {t.tm} x {t.crow} B output staging tile.
// ============================================================================================================
"""


def _decls(t: GemmTile) -> list[str]:
    n_a = max(1, t.a_chunks // NTHREADS)
    n_b = t.b_chunks // NTHREADS
    n_c = t.tm * t.c_chunks_per_row // NTHREADS
    return [
        "    .reg .pred  %p_exit, %p_load, %p_la, %p_a, %p_wrap, %p_loop;",
        "    .reg .b32   %tx, %lane, %warp, %wm, %wn, %row0, %n0, %tp, %bm, %blk, %e, %kd, %n, %kt, %ktiles, %next;",
        "    .reg .b32   %smem, %st_rd, %st_wr, %t0, %t1, %t2, %t3, %cst, %cld;",
        f"    .reg .b32   %lda<{t.bk // 16}>, %ldb<{t.bk // 16}>;",
        f"    .reg .b32   %sa<{n_a}>, %sb<{n_b}>, %h<2>, %v<{4 * n_c}>;",
        f"    .reg .b64   %pa, %pw, %pbe, %ptp, %pc, %ga<{n_a}>, %gb<{n_b}>, %gc, %cstride, %d0, %d1;",
        f"    .reg .f32   %acc<{t.mf * t.nf * 4}>;",
        f"    .reg .b32   %fa<{t.mf * 4}>, %fb<{t.nf * 2}>;",
    ]


def _phase0(t: GemmTile) -> list[str]:
    return [
        "    // ---- phase 0: which tile, which expert ------------------------------------------------------------",
        "    ld.param.u64        %pa, [gg_a];",
        "    ld.param.u64        %pw, [gg_w];",
        "    ld.param.u64        %pbe, [gg_block_expert];",
        "    ld.param.u64        %ptp, [gg_total_padded];",
        "    ld.param.u64        %pc, [gg_c];",
        "    ld.param.u32        %kd, [gg_kd];",
        "    ld.param.u32        %n, [gg_n];",
        "    ld.param.u32        %bm, [gg_bm];",
        "    cvta.to.global.u64  %pa, %pa;",
        "    cvta.to.global.u64  %pw, %pw;",
        "    cvta.to.global.u64  %pbe, %pbe;",
        "    cvta.to.global.u64  %ptp, %ptp;",
        "    cvta.to.global.u64  %pc, %pc;",
        "    mov.u32             %tx, %tid.x;",
        "    mov.u32             %t0, %ctaid.y;",
        f"    mul.lo.u32          %row0, %t0, {t.tm};           // first output row of this tile",
        "    ld.global.u32       %tp, [%ptp];",
        "    setp.ge.u32         %p_exit, %row0, %tp;",
        "    @%p_exit bra.uni    $L_exit;                    // tile lies in the unwritten tail",
        "    div.u32             %blk, %row0, %bm;           // routing block of the tile",
        "    mul.wide.u32        %d0, %blk, 4;",
        "    add.u64             %d0, %pbe, %d0;",
        "    ld.global.s32       %e, [%d0];",
        "    setp.lt.s32         %p_exit, %e, 0;",
        "    @%p_exit bra.uni    $L_exit;                    // block owned by no expert",
        "    mov.u32             %t0, %ctaid.x;",
        f"    mul.lo.u32          %n0, %t0, {t.tn};            // first output column of this tile",
        f"    shr.u32             %ktiles, %kd, {_log2(t.bk)};          // K-tiles of depth {t.bk}",
        "    mov.u32             %smem, gg_smem;",
    ]


def _copy_slot(t: GemmTile, kind: str, i: int) -> list[str]:
    """Address setup for copy slot i of the A (activation) or B (weight) slab: chunk c = tid + i*NTHREADS."""
    lg = _log2(t.chunks_per_row)
    s, g = (f"%sa{i}", f"%ga{i}") if kind == "A" else (f"%sb{i}", f"%gb{i}")
    region = 0 if kind == "A" else t.a_bytes
    lines = [f"    // {kind} slot {i}: chunk c = tid + {i * NTHREADS}, slab row c >> {lg}, "
             f"16-byte chunk c & {t.chunks_per_row - 1}"]
    lines.append(f"    add.u32             %t0, %tx, {i * NTHREADS};" if i else "    mov.u32             %t0, %tx;")
    lines += [
        f"    shr.u32             %t1, %t0, {lg};",
        f"    and.b32             %t2, %t0, {t.chunks_per_row - 1};",
        f"    mad.lo.u32          {s}, %t1, {t.srow}, %smem;",
        "    shr.u32             %t3, %t1, 1;",
        "    and.b32             %t3, %t3, 3;",
        "    xor.b32             %t3, %t2, %t3;              // swizzled chunk: ch ^ ((row >> 1) & 3)",
        "    shl.b32             %t3, %t3, 4;",
        f"    add.u32             {s}, {s}, %t3;",
    ]
    if region:
        lines.append(f"    add.u32             {s}, {s}, {region};        // weight slab follows the activation slab")
    if kind == "A":
        lines += ["    add.u32             %t1, %t1, %row0;            // global row of a"]
        base = "%pa"
    else:
        lines += [
            "    mad.lo.u32          %t3, %e, %n, %n0;           // row of w viewed as [E*N, Kd]",
            "    add.u32             %t1, %t1, %t3;",
        ]
        base = "%pw"
    lines += [
        "    mul.wide.u32        %d0, %t1, %kd;              // element offset of the row, 64-bit (E*N*Kd > 2^32)",
        "    shl.b32             %t3, %t2, 3;",
        "    cvt.u64.u32         %d1, %t3;",
        "    add.u64             %d0, %d0, %d1;",
        "    shl.b64             %d0, %d0, 1;",
        f"    add.u64             {g}, {base}, %d0;",
    ]
    return lines


def _swizzled_steps(t: GemmTile, dst: str) -> list[str]:
    """dst<k> = row base %t0 + 16 * ((2k + k8 half %t1) ^ key %t3) for each k16 step k of the K-tile."""
    lines = []
    for k in range(t.bk // 16):
        lines += [
            f"    add.u32             %t2, %t1, {2 * k};               // chunk of k16 step {k}",
            "    xor.b32             %t2, %t2, %t3;",
            "    shl.b32             %t2, %t2, 4;",
            f"    add.u32             {dst}{k}, %t0, %t2;",
        ]
    return lines


def _phase1(t: GemmTile) -> list[str]:
    lines = ["    // ---- phase 1: per-thread copy and ldmatrix addresses " + "-" * 46]
    n_a = max(1, t.a_chunks // NTHREADS)
    for i in range(n_a):
        lines += _copy_slot(t, "A", i)
    if t.a_chunks < NTHREADS:
        lines.append(f"    setp.lt.u32         %p_a, %tx, {t.a_chunks};            "
                     f"// only {t.a_chunks} A chunks per tile")
    for i in range(t.b_chunks // NTHREADS):
        lines += _copy_slot(t, "B", i)
    lines += [
        "    and.b32             %lane, %tx, 31;",
        "    shr.u32             %warp, %tx, 5;",
        f"    shr.u32             %wm, %warp, {_log2(t.wn)};             // warp row in the {t.wm} x {t.wn} warp grid",
        f"    and.b32             %wn, %warp, {t.wn - 1};             // warp column",
        "    // ldmatrix A (x4 = the four 8x8 quarters of a 16x16 fragment): lanes 0-7 give rows 0-7 at k 0,",
        "    // 8-15 rows 8-15 at k 0, 16-23 rows 0-7 at k 8, 24-31 rows 8-15 at k 8",
        "    // -> registers a0a1, a2a3, a4a5, a6a7.",
        "    and.b32             %t0, %lane, 15;             // row within the fragment",
        "    shr.u32             %t3, %t0, 1;",
        "    and.b32             %t3, %t3, 3;                // swizzle key (row >> 1) & 3: warp and fragment",
        f"    mad.lo.u32          %t0, %wm, {t.warp_m}, %t0;            // offsets are multiples of 8, key unchanged",
        f"    mad.lo.u32          %t0, %t0, {t.srow}, %smem;",
        "    shr.u32             %t1, %lane, 4;              // k8 half this lane addresses",
        *_swizzled_steps(t, "%lda"),
        "    // ldmatrix B (x4 = two n8 fragments x two k8 halves): lanes 0-7 give n 0-7 at k 0, 8-15 n 0-7 at k 8,",
        "    // 16-23 n 8-15 at k 0, 24-31 n 8-15 at k 8 -> b0b1, b2b3 of fragment 2j, then of fragment 2j+1.",
        "    and.b32             %t0, %lane, 7;",
        "    shr.u32             %t1, %lane, 4;",
        "    shl.b32             %t1, %t1, 3;",
        "    add.u32             %t0, %t0, %t1;              // n within the fragment pair",
        "    shr.u32             %t3, %t0, 1;",
        "    and.b32             %t3, %t3, 3;                // swizzle key",
        f"    mad.lo.u32          %t0, %wn, {t.warp_n}, %t0;",
        f"    mad.lo.u32          %t0, %t0, {t.srow}, %smem;",
        f"    add.u32             %t0, %t0, {t.a_bytes};        // weight slab follows the activation slab",
        "    shr.u32             %t1, %lane, 3;",
        "    and.b32             %t1, %t1, 1;                // k8 half this lane addresses",
        *_swizzled_steps(t, "%ldb"),
        "    mov.u32             %st_rd, 0;",
        "    mov.u32             %st_wr, 0;",
    ]
    lines += [f"    mov.f32             %acc{i}, 0f00000000;" for i in range(t.mf * t.nf * 4)]
    return lines


def _issue_tile(t: GemmTile) -> list[str]:
    """cp.async one K-tile into stage %st_wr under %p_load, commit the group (even if empty), advance the ring."""
    lines = []
    n_a = max(1, t.a_chunks // NTHREADS)
    pred_a = "%p_la" if t.a_chunks < NTHREADS else "%p_load"
    if t.a_chunks < NTHREADS:
        lines.append("    and.pred            %p_la, %p_load, %p_a;")
    for i in range(n_a):
        lines += [
            f"    add.u32             %t0, %sa{i}, %st_wr;",
            f"    @{pred_a} cp.async.cg.shared.global [%t0], [%ga{i}], 16;",
            f"    add.u64             %ga{i}, %ga{i}, {t.bk * 2};",
        ]
    for i in range(t.b_chunks // NTHREADS):
        lines += [
            f"    add.u32             %t0, %sb{i}, %st_wr;",
            f"    @%p_load cp.async.cg.shared.global [%t0], [%gb{i}], 16;",
            f"    add.u64             %gb{i}, %gb{i}, {t.bk * 2};",
        ]
    lines += [
        "    cp.async.commit_group;                          // one group per K-tile keeps wait_group counting exact",
        f"    add.u32             %st_wr, %st_wr, {t.stage_bytes};",
        f"    setp.eq.u32         %p_wrap, %st_wr, {t.stages * t.stage_bytes};",
        "    selp.b32            %st_wr, 0, %st_wr, %p_wrap;",
    ]
    return lines


def _phase2(t: GemmTile) -> list[str]:
    lines = ["    // ---- phase 2: pipeline prologue, K-tiles 0..STAGES-2 " + "-" * 47]
    for s in range(t.stages - 1):
        lines.append(f"    setp.gt.u32         %p_load, %ktiles, {s};           // K-tile {s} exists")
        lines += _issue_tile(t)
    return lines


def _mma_step(t: GemmTile, kk: int) -> list[str]:
    """One k16 step on stage %st_rd: ldmatrix every fragment, then every MMA."""
    lines = [
        f"    // k16 step {kk}: columns {kk * 16}..{kk * 16 + 15} of the stage",
        f"    add.u32             %t1, %lda{kk}, %st_rd;",
        f"    add.u32             %t2, %ldb{kk}, %st_rd;",
    ]
    for mi in range(t.mf):
        regs = ", ".join(f"%fa{mi * 4 + j}" for j in range(4))
        lines.append(f"    ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{regs}}}, [%t1+{mi * 16 * t.srow}];")
    for nj in range(t.nf // 2):
        regs = ", ".join(f"%fb{nj * 4 + j}" for j in range(4))
        lines.append(f"    ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{regs}}}, [%t2+{nj * 16 * t.srow}];")
    for mi in range(t.mf):
        a = ", ".join(f"%fa{mi * 4 + j}" for j in range(4))
        for ni in range(t.nf):
            c = ", ".join(f"%acc{(mi * t.nf + ni) * 4 + j}" for j in range(4))
            b = f"%fb{ni * 2}, %fb{ni * 2 + 1}"
            lines.append(f"    mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{{c}}}, {{{a}}}, {{{b}}}, {{{c}}};")
    return lines


def _phase3(t: GemmTile) -> list[str]:
    lines = [
        "    // ---- phase 3: main loop, one K-tile per trip ---------------------------------------------------------",
        "    mov.u32             %kt, 0;",
        "$L_kloop:",
        f"    cp.async.wait_group {t.stages - 2};                   // K-tile kt has landed (this thread's copies)",
        "    bar.sync            0;                          // ... everyone's; and stage kt-1 is free to refill",
        f"    add.u32             %next, %kt, {t.stages - 1};",
        "    setp.lt.u32         %p_load, %next, %ktiles;",
        *_issue_tile(t),
    ]
    for kk in range(t.bk // 16):
        lines += _mma_step(t, kk)
    lines += [
        f"    add.u32             %st_rd, %st_rd, {t.stage_bytes};",
        f"    setp.eq.u32         %p_wrap, %st_rd, {t.stages * t.stage_bytes};",
        "    selp.b32            %st_rd, 0, %st_rd, %p_wrap;",
        "    add.u32             %kt, %kt, 1;",
        "    setp.lt.u32         %p_loop, %kt, %ktiles;",
        "    @%p_loop bra.uni    $L_kloop;",
    ]
    return lines


def _phase4(t: GemmTile) -> list[str]:
    n_c = t.tm * t.c_chunks_per_row // NTHREADS
    rows_per_pass = NTHREADS // t.c_chunks_per_row
    lines = [
        "    // ---- phase 4: epilogue, bf16 pack -> shared staging tile -> 16-byte coalesced stores --------------",
        "    cp.async.wait_group 0;                          // only empty groups can remain; drain for safety",
        "    bar.sync            0;                          // every warp is done reading the pipeline stages",
        "    // C fragment layout: thread (g = lane>>2, t = lane&3) holds rows g, g+8 x columns 2t, 2t+1.",
        "    shr.u32             %t0, %lane, 2;",
        f"    mad.lo.u32          %t0, %wm, {t.warp_m}, %t0;",
        "    and.b32             %t1, %lane, 3;",
        "    shl.b32             %t1, %t1, 1;",
        f"    mad.lo.u32          %t1, %wn, {t.warp_n}, %t1;",
        "    shl.b32             %t1, %t1, 1;",
        f"    mad.lo.u32          %cst, %t0, {t.crow}, %t1;",
        "    add.u32             %cst, %cst, %smem;",
    ]
    for mi in range(t.mf):
        for ni in range(t.nf):
            base = (mi * t.nf + ni) * 4
            off = mi * 16 * t.crow + ni * 16
            lines += [
                f"    cvt.rn.bf16x2.f32   %h0, %acc{base + 1}, %acc{base};         "
                "// (high, low) = (col 2t+1, col 2t), row g",
                f"    cvt.rn.bf16x2.f32   %h1, %acc{base + 3}, %acc{base + 2};         // row g+8",
                f"    st.shared.b32       [%cst+{off}], %h0;",
                f"    st.shared.b32       [%cst+{off + 8 * t.crow}], %h1;",
            ]
    lg = _log2(t.c_chunks_per_row)
    lines += [
        "    bar.sync            0;                          // the staged tile is complete",
        f"    // thread owns output chunks tid + j*{NTHREADS}: row (tid >> {lg}) + j*{rows_per_pass}, "
        f"8 columns at (tid & {t.c_chunks_per_row - 1})*8",
        f"    shr.u32             %t0, %tx, {lg};",
        f"    and.b32             %t1, %tx, {t.c_chunks_per_row - 1};",
        "    shl.b32             %t1, %t1, 4;",
        f"    mad.lo.u32          %cld, %t0, {t.crow}, %t1;",
        "    add.u32             %cld, %cld, %smem;",
        "    add.u32             %t0, %t0, %row0;",
        "    shr.u32             %t1, %t1, 1;",
        "    add.u32             %t1, %t1, %n0;",
        "    mul.wide.u32        %d0, %t0, %n;",
        "    cvt.u64.u32         %d1, %t1;",
        "    add.u64             %d0, %d0, %d1;",
        "    shl.b64             %d0, %d0, 1;",
        "    add.u64             %gc, %pc, %d0;",
        f"    mul.wide.u32        %cstride, %n, {rows_per_pass * 2};          "
        f"// bytes between passes ({rows_per_pass} rows)",
    ]
    for j in range(n_c):
        v = ", ".join(f"%v{4 * j + k}" for k in range(4))
        lines.append(f"    ld.shared.v4.b32    {{{v}}}, [%cld+{j * rows_per_pass * t.crow}];")
    for j in range(n_c):
        v = ", ".join(f"%v{4 * j + k}" for k in range(4))
        lines.append(f"    st.global.v4.b32    [%gc], {{{v}}};")
        if j + 1 < n_c:
            lines.append("    add.u64             %gc, %gc, %cstride;")
    return lines


def render(t: GemmTile) -> str:
    """The complete PTX module for one tile configuration."""
    t.validate()
    params = ",\n".join(
        f"    .param .{ty} {name}"
        for ty, name in (("u64", "gg_a"), ("u64", "gg_w"), ("u64", "gg_block_expert"), ("u64", "gg_total_padded"),
                         ("u64", "gg_c"), ("u32", "gg_kd"), ("u32", "gg_n"), ("u32", "gg_bm"))
    )
    body = [
        *_decls(t), "", *_phase0(t), "", *_phase1(t), "", *_phase2(t), "", *_phase3(t), "", *_phase4(t), "",
        "$L_exit:",
        "    ret;",
    ]
    return (
        _header(t)
        + "\n.version 8.4\n.target sm_90\n.address_size 64\n\n"
        + f".shared .align 128 .b8 gg_smem[{t.smem_bytes}];\n\n"
        + f".visible .entry {t.entry}(\n{params}\n)\n.reqntid {NTHREADS}, 1, 1\n{{\n"
        + "\n".join(body)
        + "\n}\n"
    )


def write_all(directory: Path = KERNEL_DIR) -> list[Path]:
    """Regenerate every checked-in kernel file; returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for tile in TILES.values():
        path = directory / tile.filename
        path.write_text(render(tile))
        paths.append(path)
    return paths


if __name__ == "__main__":
    for p in write_all():
        print(p)

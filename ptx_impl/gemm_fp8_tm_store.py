"""Rung 8's TMA-store epilogue (issue #30, finding (d)) as gemm_fp8_tm_template renders it, for rungs 8 on.

Each consumer warpgroup packs its 64-row slice of the tile to bf16 and stmatrix-es it, OUT_COLS columns at a time, into
its own 128B-swizzled buffer after the ring; after fence.proxy.async and a named barrier, thread 0 of the warpgroup
stores each routing block of the run that lies in its rows with cp.async.bulk.tensor (tensor map gf_tm_c over c, box
OUT_COLS columns x min(BM, 64) rows: a box never reaches another expert's rows), in a bulk group it waits for (.read)
before the buffer is written again. The tile's width (`tile_n`, a multiple of OUT_COLS) sets how many spans it takes.
"""
from __future__ import annotations

OUT_COLS = 64  # bf16 columns of a store box: one 128-byte swizzle span
OUT_WG_BYTES = 64 * OUT_COLS * 2  # a consumer warpgroup's buffer: its 64 token rows x 64 columns of bf16
OUT_BYTES = 2 * OUT_WG_BYTES
STORE_REGS = ("    .reg .pred  %p_el;",
              "    .reg .b32   %sout, %sr, %srb, %srow, %cx, %hh0, %hh1, %hh2, %hh3, %brow, %bend, %bsrc, %gcol, "
              "%grow;",
              "    .reg .b64   %ptmc;")


def store_header() -> str:
    """The kernel header's paragraph on the TMA-store epilogue."""
    return f"""
// Rung 8 (TMA-store epilogue): c comes as a tensor map, gf_tm_c over (P_max, N) bf16, box min(BM, 64) rows x
//   {OUT_COLS} columns, 128B swizzle. Each consumer warpgroup has a {OUT_WG_BYTES} B buffer after the ring (its 64
//   token rows x {OUT_COLS} columns, in the swizzled image the tensor map reads). Per item and 64-column half:
//   thread 0 of the warpgroup waits for its previous bulk stores to have read the buffer
//   (cp.async.bulk.wait_group.read 0), bar.sync 1 + cw; every thread packs its accumulators to bf16x2 and writes
//   them with 4 stmatrix m8n8.x4 (matrix k of lane 8k + r: row 16w + 8(k & 1) + r, 16-byte chunk 2q + (k >> 1) of
//   the half, XOR r: the swizzle), fence.proxy.async.shared::cta, bar.sync 1 + cw; thread 0 then issues one
//   cp.async.bulk.tensor store per box of min(BM, 64) rows that lies in the run (whole routing blocks: no box
//   reaches another expert's rows) and commits them as one bulk group; before exit it waits for all of them
//   (cp.async.bulk.wait_group 0). The weight-scale copy needs no barrier before it: the epilogue's order the last
//   item's promotion reads before it."""

def store_setup() -> list[str]:
    """At the consumers' start: the storing thread, the box rows, my buffer and my stmatrix row address."""
    return ["    and.b32             %tmp, %thr, 127;",
            "    setp.eq.u32         %p_el, %tmp, 0;             // thread 0 of my warpgroup issues its stores",
            "    min.u32             %sr, %bm, 64;               // rows of a store box: a routing block, at most 64",
            "    shl.b32             %srb, %sr, 7;               // its bytes in the buffer",
            f"    mad.lo.u32          %sout, %cw, {OUT_WG_BYTES}, %sout;     // my buffer",
            "    // stmatrix: lane 8k + r gives row 16w + 8(k & 1) + r of matrix k, 16-byte chunk 2q + (k >> 1) of the",
            "    // half; the 128B swizzle puts chunk c of row r at c ^ (r & 7): %cx = (k >> 1) ^ r, XORed with 2q",
            "    shr.u32             %tmp, %lane, 3;",
            "    and.b32             %tmp, %tmp, 1;",
            "    shl.b32             %tmp, %tmp, 3;",
            "    and.b32             %cx, %lane, 7;",
            "    add.u32             %tmp, %tmp, %cx;",
            "    shl.b32             %tmp2, %warp, 4;",
            "    add.u32             %tmp, %tmp, %tmp2;",
            "    shl.b32             %tmp, %tmp, 7;",
            "    add.u32             %srow, %sout, %tmp;         // my row of the buffer",
            "    shr.u32             %tmp, %lane, 4;",
            "    xor.b32             %cx, %cx, %tmp;"]


def tma_store_epilogue(tile_n: int, upper_skip: str = "") -> list[str]:
    """The warpgroup's 64 x tile_n result in OUT_COLS-column spans through its buffer, each span's boxes in the run
    stored by thread 0 as one bulk group (accumulator i: column 8(i >> 2) + 2t + (i & 1), as wgmma's D fragment).
    upper_skip: a predicate (uniform over the CTA) under which the upper half's spans are skipped whole (rung 11's
    tile whose upper 128 columns lie past N)."""
    if tile_n % OUT_COLS:
        raise ValueError(f"tile_n={tile_n}; the TMA-store epilogue needs a multiple of {OUT_COLS} columns")
    L = ["    // epilogue (TMA store): the run's rows [row0 - abase, + rows) of the tile, in boxes of %sr rows",
         "    sub.u32             %nb, %row0, %abase;",
         "    add.u32             %nbmax, %nb, %rows;"]
    for half in range(tile_n // OUT_COLS):
        if upper_skip and half >= tile_n // OUT_COLS // 2:
            L += [f"    @{upper_skip} bra.uni     $C_st{half}done;               // the span lies past N"]
        L += ["    @%p_el cp.async.bulk.wait_group.read 0;     // the buffer's last stores have read it",
              "    bar.sync            %bid, 128;"]
        for q in range(OUT_COLS // 16):
            j0 = OUT_COLS // 8 * half + 2 * q
            regs = [(4 * j + 2 * h + 1, 4 * j + 2 * h) for j in (j0, j0 + 1) for h in (0, 1)]
            L += [f"    cvt.rn.bf16x2.f32   %hh{k}, %acc{hi}, %acc{lo};" for k, (hi, lo) in enumerate(regs)]
            L += [f"    xor.b32             %tmp, %cx, {2 * q};" if q else "    mov.u32             %tmp, %cx;",
                  "    shl.b32             %tmp, %tmp, 4;",
                  "    add.u32             %tmp, %tmp, %srow;",
                  "    stmatrix.sync.aligned.m8n8.x4.shared.b16 [%tmp], {%hh0, %hh1, %hh2, %hh3};"]
        L += ["    fence.proxy.async.shared::cta;              // my stmatrix writes, visible to the TMA store",
              "    bar.sync            %bid, 128;",
              f"    @!%p_el bra         $C_st{half}done;",
              "    shl.b32             %brow, %cw, 6;              // a box's first row in the tile: 64cw, + sr, ..",
              "    add.u32             %bend, %brow, 64;",
              "    mov.u32             %bsrc, %sout;",
              f"    add.u32             %gcol, %col0, {OUT_COLS * half};",
              f"$C_st{half}:",
              "    setp.ge.u32         %p_q, %brow, %nb;",
              "    setp.lt.and.u32     %p_q, %brow, %nbmax, %p_q;  // the box is routing blocks of the run",
              "    add.u32             %grow, %abase, %brow;",
              "    @%p_q cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%ptmc, {%gcol, %grow}], [%bsrc];",
              "    add.u32             %brow, %brow, %sr;",
              "    add.u32             %bsrc, %bsrc, %srb;",
              "    setp.lt.u32         %p_q, %brow, %bend;",
              f"    @%p_q bra           $C_st{half};",
              "    cp.async.bulk.commit_group;",
              f"$C_st{half}done:"]
    return L


def store_tail() -> list[str]:
    """After the epilogue: the next item; at the end, the storing thread waits for its bulk stores before exit."""
    return ["$C_next:",
            "    add.u32             %item, %item, %step;",
            "    bra.uni             $C_item;",
            "$C_end:",
            "    @%p_el cp.async.bulk.wait_group 0;          // my stores are done before the CTA exits",
            "    bra.uni             $L_end;"]

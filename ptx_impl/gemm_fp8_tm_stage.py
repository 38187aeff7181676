"""One ring stage's wgmmas for the token-major FP8 rungs (6-11): the stage's A and W shared-memory descriptors, the
wgmma fence, 4 k32 wgmma.mma_async into one register set, and the commit. Rendered in by the template (rungs 6-9),
the overlap loop (rung 10, one of two sets) and the wide loop (rung 11, once per 128-column half)."""
from __future__ import annotations

from ptx_impl.gemm_fp8_ws_template import DESC_HI


def stage_wgmmas(stage_bytes: int, tile_n: int, parts: str, *, fence_note: str = "",
                 w_offset_lines: tuple[str, ...] = ()) -> list[str]:
    """The lines for stage %stage into the registers `parts` ("%part0, ..."); `w_offset_lines` move the weight
    address within the stage (rung 11's upper box) and `fence_note` is the fence line's comment (with its padding)."""
    L = [f"    mul.lo.u32          %dst, %stage, {stage_bytes};",
         "    add.u32             %tmp, %sa_a, %dst;",
         "    shr.u32             %tmp, %tmp, 4;",
         "    cvt.u64.u32         %da, %tmp;",
         f"    or.b64              %da, %da, {DESC_HI:#x};",
         "    add.u32             %tmp, %sa_w, %dst;",
         *w_offset_lines,
         "    shr.u32             %tmp, %tmp, 4;",
         "    cvt.u64.u32         %db, %tmp;",
         f"    or.b64              %db, %db, {DESC_HI:#x};",
         "    wgmma.fence.sync.aligned;" + fence_note]
    for ks in range(4):
        if ks:
            L += ["    add.s64             %da, %da, 2;                // +32 B of K",
                  "    add.s64             %db, %db, 2;"]
        L += [f"    wgmma.mma_async.sync.aligned.m64n{tile_n}k32.f32.e4m3.e4m3 {{{parts}}}, %da, %db, "
              f"{'%p_zero' if ks == 0 else '%p_one'}, 1, 1;"]
    return L + ["    wgmma.commit_group.sync.aligned;"]

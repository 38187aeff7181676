"""bar.warp.sync is a convergence point for its member mask (issue 26): a warp split by the lowest-pc-first schedule
around a loop reconverges there, so the full-mask shfl.sync after it sees all 32 lanes."""
import numpy as np
import pytest

import ptxsim
from ptxsim.errors import DeadlockError, SynccheckError
from tests.ptxsim.ptxkit import HEADER

pytestmark = pytest.mark.sim

# The layout nvcc gives a loop with __syncwarp() at its head and a rarely taken branch whose block it places after
# the loop: lanes 0 and 1 detour through DETOUR (higher pc) every iteration. Without a convergence point the other
# 30 lanes go round the loop alone and run the shfl.sync without lanes 0 and 1.
_LOOP = HEADER + """
.visible .entry k(.param .u64 pout)
{
  .reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pout]; mov.u32 %r0, %tid.x; mul.wide.u32 %rd2, %r0, 4; add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r5, 0; mov.u32 %r7, 0; mov.u32 %r8, 0;
  setp.lt.u32 %p1, %r0, 2;
LOOP:
  bar.warp.sync SYNCMASK;
  add.u32 %r9, %r0, %r8;
  shfl.sync.idx.b32 %r6, %r9, 1, 0x1f, -1;
  add.u32 %r7, %r7, %r6;
  @%p1 bra DETOUR;
TAIL:
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p2, %r5, 3;
  @%p2 bra LOOP;
  st.global.u32 [%rd3], %r7;
  ret;
DETOUR:
  add.u32 %r8, %r8, 100;
  bra TAIL;
}
"""


def _loop(mask: str = "-1", **kw):
    out = np.zeros(32, np.uint32)
    stats = ptxsim.launch(ptxsim.load_ptx(_LOOP.replace("SYNCMASK", mask)).kernel("k"), 1, 32, [out], **kw)
    return out, stats


@pytest.mark.parametrize("mask", ["-1", "0xffffffff"])
def test_loop_head_syncwarp_reconverges_the_warp_before_the_full_mask_shfl(mask):
    # before: synccheck reported "shfl.sync reads lane 1, which is not active" in the second iteration
    out, stats = _loop(mask, sanitize="all")
    assert stats.sanitizer_reports == []
    # lane 1's value is 1 + r8, and lane 1 adds 100 to r8 each iteration: 1 + 101 + 201 for every lane
    assert out.tolist() == [303] * 32


def test_member_mask_in_a_register_and_members_that_exited():
    # lanes 16..31 exit at once; the half-warp mask in a register syncs lanes 0..15, and the full mask of the others
    # counts exited lanes as arrived
    src = HEADER + """
.visible .entry k(.param .u64 pout)
{
  .reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pout]; mov.u32 %r0, %tid.x; mul.wide.u32 %rd2, %r0, 4; add.s64 %rd3, %rd1, %rd2;
  setp.ge.u32 %p3, %r0, 16; @%p3 bra DONE;
  mov.u32 %r4, 0xffff; mov.u32 %r7, 0;
  setp.lt.u32 %p1, %r0, 1;
  @%p1 bra DETOUR;
JOIN:
  bar.warp.sync %r4;
  shfl.sync.idx.b32 %r6, %r7, 0, 0x1f, 0xffff;
  bar.warp.sync -1;
  st.global.u32 [%rd3], %r6;
DONE:
  ret;
DETOUR:
  mov.u32 %r7, 42;
  bra JOIN;
}
"""
    out = np.zeros(32, np.uint32)
    stats = ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 32, [out], sanitize="all")
    assert stats.sanitizer_reports == []
    assert out.tolist() == [42] * 16 + [0] * 16


def test_genuine_divergence_at_an_aligned_barrier_is_still_reported():
    # no bar.warp.sync: half the warp reaches bar.sync 0 (aligned) while the other half waits at another one
    src = HEADER + """
.visible .entry k(.param .u64 pout)
{
  .reg .pred %p<4>; .reg .b32 %r<8>;
  mov.u32 %r0, %tid.x;
  setp.lt.u32 %p1, %r0, 16;
  @%p1 bra OTHER;
  bar.sync 0;
  ret;
OTHER:
  bar.sync 0;
  ret;
}
"""
    with pytest.raises(SynccheckError, match="barrier reached by 16 of the 32 running threads of warp 0"):
        ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 32, [np.zeros(1, np.uint32)], sanitize="synccheck")


def test_a_member_that_never_arrives_is_a_deadlock_naming_the_warp_sync():
    # lanes 16..31 wait at a CTA barrier for lanes 0..15, which wait at bar.warp.sync -1 for them
    src = HEADER + """
.visible .entry k(.param .u64 pout)
{
  .reg .pred %p<4>; .reg .b32 %r<8>;
  mov.u32 %r0, %tid.x;
  setp.lt.u32 %p1, %r0, 16;
  @%p1 bra LOW;
  barrier.sync 0;
  ret;
LOW:
  bar.warp.sync -1;
  barrier.sync 0;
  ret;
}
"""
    line = 1 + src.splitlines().index("  bar.warp.sync -1;")
    with pytest.raises(DeadlockError, match=rf"16 thread\(s\) of warp 0 held at PTX line {line} .*0xffffffff"):
        ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 32, [np.zeros(1, np.uint32)])


_WGMMA_LOOP = HEADER.replace("sm_90", "sm_90a") + """
.shared .align 1024 .b8 sm[1024];
.visible .entry k(.param .u64 pout)
{
  .reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<8>; .reg .f32 %d<4>;
  ld.param.u64 %rd1, [pout]; mov.u32 %r0, %tid.x; mul.wide.u32 %rd2, %r0, 4; add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r1, sm; shl.b32 %r2, %r0, 3; add.u32 %r2, %r2, %r1; mov.u32 %r3, 0;
  st.shared.v2.u32 [%r2], {%r3, %r3};
  fence.proxy.async.shared::cta;  // the generic-proxy writes, made visible to the wgmma's async-proxy reads
  bar.sync 0;
  mov.b64 %rd5, 17179869192;
  mov.u32 %r5, 0x3F803F80; mov.u32 %r8, 0;
  mov.f32 %d0, 0f00000000; mov.f32 %d1, 0f00000000; mov.f32 %d2, 0f00000000; mov.f32 %d3, 0f00000000;
  setp.lt.u32 %p1, %r0, 2;
LOOP:
  bar.warp.sync -1;
  wgmma.fence.sync.aligned;
  wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%d0, %d1, %d2, %d3}, {%r5, %r5, %r5, %r5}, %rd5, 1, 1, 1, 0;
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  @%p1 bra DETOUR;
TAIL:
  add.u32 %r8, %r8, 1;
  setp.lt.u32 %p2, %r8, 3;
  @%p2 bra LOOP;
  mov.b32 %r9, %d0;
  st.global.u32 [%rd3], %r9;
  ret;
DETOUR:
  add.u32 %r10, %r10, 1;
  bra TAIL;
}
"""


def test_loop_head_syncwarp_before_a_wgmma_no_longer_leaves_it_126_threads():
    # the case: two lanes of warp 0 detour every iteration; before, the next wgmma.mma_async ran with 126 of
    # the warpgroup's 128 threads ("needs the 128 threads of each warpgroup converged"); now warp 0 reconverges at
    # its bar.warp.sync and warps 1..3, there first, wait at the wgmma for it (the hardware waits for all four)
    out = np.zeros(128, np.uint32)
    stats = ptxsim.launch(ptxsim.load_ptx(_WGMMA_LOOP).kernel("k"), 1, 128, [out], sanitize="all")
    assert stats.sanitizer_reports == []
    assert (out == 0).all()  # B is zero: 0 after every step (the point is that every step ran converged)


def test_a_warp_that_skips_the_wgmma_is_still_an_error():
    # warp 3 branches past the wgmma to the CTA barrier: warps 0..2 wait for it, nothing else can run, so they run
    # the wgmma without it and its convergence check reports the 96 threads
    src = _WGMMA_LOOP.replace("LOOP:\n  bar.warp.sync -1;", "setp.ge.u32 %p3, %r0, 96;\n  @%p3 bra SKIP;\nLOOP:")
    src = src.replace("  mov.b32 %r9, %d0;", "SKIP:\n  bar.sync 0;\n  mov.b32 %r9, %d0;")
    with pytest.raises(ptxsim.PtxSimError, match=r"needs the 128 threads of each warpgroup converged; .* with 96"):
        ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 128, [np.zeros(128, np.uint32)])

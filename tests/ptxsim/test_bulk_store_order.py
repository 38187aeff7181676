"""racecheck on bulk stores' shared sources across warps: another warp's write of the source must be ordered before
the store's issue, and another warp's write after cp.async.bulk.wait_group.read must be ordered after that wait (a
TMA-store epilogue's two barriers: the buffer written by every warp, stored by one thread, written again)."""
import numpy as np
import pytest

import ptxsim
from ptxsim.errors import RacecheckError
from tests.ptxsim.ptxkit import HEADER

pytestmark = pytest.mark.sim

# warp 1 writes the 32-word buffer; thread 0 stores it (bulk group, waited for .read); warp 1 writes it again
SRC = HEADER + """
.shared .align 128 .b32 sm[32];
.visible .entry k(.param .u64 pdst)
{
  .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pdst];
  mov.u32 %r0, %tid.x; mov.u32 %r1, sm; and.b32 %r2, %r0, 31; shl.b32 %r2, %r2, 2; add.u32 %r2, %r1, %r2;
  setp.ge.u32 %p2, %r0, 32;
  add.u32 %r3, %r0, 100;
  @%p2 st.shared.u32 [%r2], %r3;
  fence.proxy.async.shared::cta;
  BEFORE
  setp.eq.u32 %p1, %r0, 0;
  @!%p1 bra SKIP;
  cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1], 128;
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
SKIP:
  AFTER
  @%p2 st.shared.u32 [%r2], %r0;
  ret;
}
"""
BAR = "bar.sync 0;"


def _run(before: str, after: str, **kw) -> np.ndarray:
    src = SRC.replace("BEFORE", before).replace("AFTER", after)
    dst = np.zeros(32, np.uint32)
    ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 64, [dst], **kw)
    return dst


def test_the_barriers_on_both_sides_of_the_store_run_clean():
    dst = _run(BAR, BAR, sanitize="all")
    assert np.array_equal(dst, np.arange(32, 64) + 100)  # warp 1's first values, not its overwrite


def test_a_source_written_by_another_warp_with_no_barrier_before_the_store_is_a_race():
    with pytest.raises(RacecheckError, match="hazard|cp.async.bulk store reads shared memory warp 1"):
        _run("", BAR, sanitize="racecheck")


def test_an_overwrite_by_another_warp_not_ordered_after_the_read_wait_is_a_race():
    # thread 0's wait_group.read retired the store's reads, but warp 1 never learnt of it: no barrier after the wait
    with pytest.raises(RacecheckError, match="write-after-read hazard with warp 0"):
        _run(BAR, "", sanitize="racecheck")

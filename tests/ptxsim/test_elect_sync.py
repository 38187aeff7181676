"""elect.sync is a convergence point of its member mask (PTX ISA, elect.sync: ".sync ... causes the executing thread to
wait until all threads in the membermask execute the elect instruction before resuming execution"; the same leader
for the same membermask every time). The lowest-pc-first schedule can bring lanes 1-31 to it while lane 0 is on a
detour placed further down the program (CUTLASS's producer warp: its elected lane blocked in the load loop while the
others go round the tile loop to the next elect_one_sync()); electing among the lanes present made lane 1 a second
leader. docs/cutlass.md, "elect.sync"."""
import numpy as np
import pytest

import ptxsim
from ptxsim.errors import DeadlockError
from tests.ptxsim.ptxkit import HEADER

pytestmark = pytest.mark.sim

# every lane records (leader lane, elected?) of each of two elections; lane 0 (DETOUR, higher pc) reaches the first
# one after the others. DETOUR_END is what lane 0 does at the end of its detour: rejoin, exit, or wait forever.
_KERNEL = HEADER + """
.visible .entry k(.param .u64 pout)
{
  .reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pout]; mov.u32 %r0, %tid.x; mul.wide.u32 %rd2, %r0, 16; add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r8, 0;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 bra DETOUR;
JOIN:
  elect.sync %r1|%p2, 0xffffffff;
  selp.u32 %r2, 1, 0, %p2;
  elect.sync %r3|%p3, 0xffffffff;
  selp.u32 %r4, 1, 0, %p3;
  st.global.v4.u32 [%rd3], {%r1, %r2, %r3, %r4};
  ret;
DETOUR:
  add.u32 %r8, %r8, 1;
  setp.lt.u32 %p1, %r8, 3;
  @%p1 bra DETOUR;
  DETOUR_END;
}
"""


def _run(detour_end: str):
    out = np.full((32, 4), 0xDEAD, np.uint32)
    ptxsim.launch(ptxsim.load_ptx(_KERNEL.replace("DETOUR_END", detour_end)).kernel("k"), 1, 32, [out])
    return out


def test_lanes_that_arrive_first_wait_for_the_whole_mask_and_lane_0_is_elected():
    # before: lanes 1-31 ran the first elect.sync alone and elected lane 1; lane 0 then elected itself
    out = _run("bra JOIN")
    assert out[:, 0].tolist() == [0] * 32 and out[:, 2].tolist() == [0] * 32  # one leader, lane 0, both times
    assert out[:, 1].tolist() == [1] + [0] * 31 and out[:, 3].tolist() == [1] + [0] * 31


def test_a_member_that_exits_no_longer_holds_the_others_back():
    out = _run("ret")
    assert out[0].tolist() == [0xDEAD] * 4  # lane 0 stored nothing
    assert out[1:, 0].tolist() == [1] * 31 and out[1:, 1].tolist() == [1] + [0] * 30


def test_a_member_that_never_comes_is_a_deadlock_naming_the_elect():
    # lane 0 waits at a CTA barrier for a second warp that does not exist: on the hardware both sides wait forever
    with pytest.raises(DeadlockError, match=r"held at PTX line \d+ \(`elect.sync.*member mask 0xffffffff; lane\(s\) "
                                            r"\[0\] never reach it"):
        _run("barrier.sync 1, 64; ret")

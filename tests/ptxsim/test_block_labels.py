"""Labels are block-scoped in PTX: inlined asm (CUTLASS's mbarrier wait) defines the same labels in each `{ }` copy."""
import numpy as np
import pytest

import ptxsim
from ptxsim.errors import DecodeError
from tests.ptxsim.ptxkit import HEADER

pytestmark = pytest.mark.sim

# The shape nvcc gives an mbarrier wait written as inline asm with its own `{ }` block and labels (as in CUTLASS's
# ClusterBarrier::wait), inlined twice: each copy defines LAB_WAIT and DONE.
_WAIT = """
  {
  .reg .pred P1;
  LAB_WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 P1, [%r1+OFF], %r2;
  @P1 bra DONE;
  bra LAB_WAIT;
  DONE:
  }
"""

_SRC = HEADER.replace("sm_90", "sm_90a") + """
.shared .align 8 .b64 bars[2];
.visible .entry k(.param .u64 pout)
{
  .reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [pout]; mov.u32 %r0, %tid.x; mul.wide.u32 %rd2, %r0, 4; add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r1, bars; mov.u32 %r2, 0; mov.u32 %r3, 0;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r1], 32;
  @%p1 mbarrier.init.shared::cta.b64 [%r1+8], 32;
  bar.sync 0;
  mbarrier.arrive.shared::cta.b64 %rd4, [%r1];
""" + _WAIT.replace("OFF", "0") + """
  add.u32 %r3, %r3, 1;
  mbarrier.arrive.shared::cta.b64 %rd4, [%r1+8];
""" + _WAIT.replace("OFF", "8") + """
  add.u32 %r3, %r3, 10;
  st.global.u32 [%rd3], %r3;
  ret;
}
"""


def test_inlined_wait_twice_loads_and_each_branch_goes_to_its_own_block():
    # before block scoping: DecodeError "label LAB_WAIT is already defined"
    k = ptxsim.load_ptx(_SRC).kernel("k")
    bras = [i for i in k.program.instrs if i.op == "bra"]
    waits = [i.pc for i in k.program.instrs if i.op == "mbarrier" and i.aux.action == "try_wait"]
    assert len(bras) == 4 and len(waits) == 2
    # each copy's `bra LAB_WAIT` goes back to its own try_wait, its `@P1 bra DONE` to just after its own block
    assert [b.target for b in bras] == [waits[0] + 3, waits[0], waits[1] + 3, waits[1]]
    out = np.zeros(32, np.uint32)
    ptxsim.launch(k, 1, 32, [out])
    assert out.tolist() == [11] * 32  # each add ran once: no branch went to the other copy's label


def test_inner_label_shadows_the_enclosing_one_and_outer_labels_stay_visible():
    src = HEADER + """
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<4>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pout]; mov.u32 %r1, 0;
  {
  bra DONE;
  add.u32 %r1, %r1, 100;
  DONE:
  add.u32 %r1, %r1, 1;
  bra OUT;
  }
  add.u32 %r1, %r1, 1000;
DONE:
  add.u32 %r1, %r1, 10000;
OUT:
  st.global.u32 [%rd1], %r1;
  ret;
}
"""
    out = np.zeros(1, np.uint32)
    ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 1, [out])
    assert out[0] == 1  # the inner DONE (not the outer one), then the outer OUT


def test_duplicate_label_in_one_block_is_an_error_naming_its_line():
    src = _SRC.replace("  DONE:\n  }", "  DONE:\n  DONE:\n  }", 1)
    first = src.splitlines().index("  DONE:") + 1
    with pytest.raises(DecodeError, match=rf"line {first + 1}: label DONE is already defined at line {first}\b"):
        ptxsim.load_ptx(src).kernel("k")


def test_branch_into_a_nested_block_is_refused_as_ptxas_does():
    # ptxas: "Unknown symbol 'LAB_WAIT'": a nested block's labels are invisible outside it
    src = _SRC.replace("  bar.sync 0;\n", "  bar.sync 0;\n  bra LAB_WAIT;\n", 1)
    with pytest.raises(DecodeError, match="unknown identifier 'LAB_WAIT'"):
        ptxsim.load_ptx(src).kernel("k")

"""A persistent grid-stride PTX kernel, shared by the simulator's phased-launch tests (tests/ptxsim/test_phases.py) and
the sim backend's persistent launches (tests/harness/test_backends_sim_phases.py); both tiers can import it.

Entry `k(pa, pout, begin, end)`: CTA i takes items begin + i, begin + i + grid, ... < end; item t's 32 threads read
a[(t // 4) * 32 + tid] (4 consecutive items share a 128-byte slice) and write out[t * 32 + tid] = that + 1.
"""

STRIDE = """.version 8.4
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 pout, .param .u32 begin, .param .u32 end)
{
  .reg .pred %p; .reg .b32 %r<10>; .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [pout]; ld.param.u32 %r1, [begin]; ld.param.u32 %r2, [end];
  cvta.to.global.u64 %rd1, %rd1; cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r3, %tid.x; mov.u32 %r4, %ctaid.x; mov.u32 %r5, %nctaid.x; add.u32 %r4, %r4, %r1;
$item:
  setp.ge.u32 %p, %r4, %r2;
  @%p bra.uni $done;
  shr.u32 %r6, %r4, 2; mad.lo.u32 %r6, %r6, 32, %r3; mul.wide.u32 %rd3, %r6, 4; add.s64 %rd3, %rd1, %rd3;
  ld.global.u32 %r7, [%rd3]; add.u32 %r7, %r7, 1;
  mad.lo.u32 %r8, %r4, 32, %r3; mul.wide.u32 %rd4, %r8, 4; add.s64 %rd4, %rd2, %rd4; st.global.u32 [%rd4], %r7;
  add.u32 %r4, %r4, %r5;
  bra.uni $item;
$done:
  ret;
}
"""

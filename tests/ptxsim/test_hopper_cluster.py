"""Thread-block clusters: special registers, co-scheduling, barrier.cluster, mapa, ld/st.shared::cluster into a
peer CTA's shared memory, remote mbarrier arrivals and bulk copies into a peer."""
import numpy as np
import pytest

import ptxsim
from ptxsim.errors import LaunchError
from tests.ptxsim.ptxkit import HEADER

pytestmark = pytest.mark.sim


def _kernel(body, directive=""):
    src = HEADER + f"""
.shared .align 1024 .b8 sm[1024];
.shared .align 8 .b64 bar;
.visible .entry k(.param .u64 pout, .param .u64 psrc) {directive}
{{
  .reg .pred %p<8>; .reg .b32 %r<24>; .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [pout]; ld.param.u64 %rd9, [psrc];
  mov.u32 %r0, %tid.x; mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mad.lo.u32 %r3, %r1, %r2, %r0;
  mul.wide.u32 %rd2, %r3, 16; add.s64 %rd3, %rd1, %rd2;
{body}
  ret;
}}
"""
    return ptxsim.load_ptx(src).kernel("k")


SREGS = """
  mov.u32 %r4, %cluster_ctarank; mov.u32 %r5, %clusterid.x; mov.u32 %r6, %cluster_nctarank;
  mov.u32 %r7, %nclusterid.x;
  st.global.v4.u32 [%rd3], {%r4, %r5, %r6, %r7};
"""


def test_special_registers_from_the_launch_argument_and_the_directive():
    out = np.zeros((8 * 32, 4), np.uint32)
    ptxsim.launch(_kernel(SREGS), 8, 32, [out, np.zeros(1, np.uint32)], cluster=(4,))
    cta = np.arange(8 * 32) // 32
    assert out[:, 0].tolist() == (cta % 4).tolist() and out[:, 1].tolist() == (cta // 4).tolist()
    assert set(out[:, 2]) == {4} and set(out[:, 3]) == {2}
    out[:] = 0
    ptxsim.launch(_kernel(SREGS, ".reqnctapercluster 2, 1, 1"), 4, 32, [out[:128], np.zeros(1, np.uint32)])
    assert out[:128, 0].tolist() == ((np.arange(128) // 32) % 2).tolist()


def test_cluster_shapes_are_checked():
    with pytest.raises(LaunchError, match=r"grid \(6, 1, 1\) is not a whole number of clusters \(4, 1, 1\)"):
        ptxsim.launch(_kernel(SREGS), 6, 32, [np.zeros((192, 4), np.uint32), np.zeros(1, np.uint32)], cluster=4)
    with pytest.raises(LaunchError, match="explicitcluster: launch it with cluster="):
        ptxsim.launch(_kernel(SREGS, ".explicitcluster"), 4, 32, [np.zeros((128, 4), np.uint32),
                                                                  np.zeros(1, np.uint32)])


def test_peer_shared_memory_through_mapa_after_barrier_cluster():
    body = """
  mov.u32 %r4, %cluster_ctarank; mov.u32 %r20, sm;
  shl.b32 %r5, %r0, 2; add.u32 %r6, %r20, %r5;
  mad.lo.u32 %r7, %r1, 1000, %r0; st.shared.u32 [%r6], %r7;      // sm[t] = 1000 * ctaid + t
  barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;
  xor.b32 %r8, %r4, 1;                                            // the other CTA of the pair
  mapa.shared::cluster.u32 %r9, %r6, %r8;
  ld.shared::cluster.u32 %r10, [%r9];
  add.u32 %r11, %r10, 7; st.shared::cluster.u32 [%r9+512], %r11;  // write into the peer
  barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;
  ld.shared.u32 %r12, [%r6+512];
  st.global.v2.u32 [%rd3], {%r10, %r12};
"""
    out = np.zeros((4 * 64, 4), np.uint32)
    ptxsim.launch(_kernel(body), 4, 64, [out, np.zeros(1, np.uint32)], cluster=2)
    cta, t = np.arange(256) // 64, np.arange(256) % 64
    peer = cta ^ 1
    assert out[:, 0].tolist() == (1000 * peer + t).tolist()
    assert out[:, 1].tolist() == (1000 * cta + t + 7).tolist()  # the peer wrote our own value back plus 7


def test_remote_mbarrier_arrive_and_bulk_copy_into_the_peer():
    # rank 1 copies 256 bytes into rank 0's shared memory, completing rank 0's mbarrier; rank 0 waits and reads
    body = """
  mov.u32 %r4, %cluster_ctarank; mov.u32 %r20, sm; mov.u32 %r21, bar;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r21], 1;
  barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;
  setp.eq.u32 %p2, %r4, 1;
  and.pred %p3, %p1, %p2;
  @!%p3 bra WAITER;
  mapa.shared::cluster.u32 %r9, %r20, 0; mapa.shared::cluster.u32 %r10, %r21, 0;
  mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%r10], 256;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r9], [%rd9], 256, [%r10];
WAITER:
  @%p2 bra END;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r21], 0;
  @!%p4 bra WAIT;
  shl.b32 %r5, %r0, 2; add.u32 %r6, %r20, %r5; ld.shared.u32 %r12, [%r6];
  st.global.u32 [%rd3], %r12;
END:
"""
    out = np.zeros((2 * 64, 4), np.uint32)
    src = np.arange(64, dtype=np.uint32) * 5
    ptxsim.launch(_kernel(body), 2, 64, [out, src], cluster=2)
    assert out[:64, 0].tolist() == src.tolist()

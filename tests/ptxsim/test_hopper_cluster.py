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
  .reg .pred %p<8>; .reg .b16 %rs<4>; .reg .b32 %r<24>; .reg .b64 %rd<16>;
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
  add.u32 %r15, %r4, 1; atom.shared::cluster.add.u32 %r13, [%r9+768], %r15;  // adds rank + 1 in the peer
  barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;
  ld.shared.u32 %r12, [%r6+512]; ld.shared.u32 %r14, [%r6+768];
  st.global.v4.u32 [%rd3], {%r10, %r12, %r14, %r13};
"""
    out = np.zeros((4 * 64, 4), np.uint32)
    ptxsim.launch(_kernel(body), 4, 64, [out, np.zeros(1, np.uint32)], cluster=2)
    cta, t = np.arange(256) // 64, np.arange(256) % 64
    peer = cta ^ 1
    assert out[:, 0].tolist() == (1000 * peer + t).tolist()
    assert out[:, 1].tolist() == (1000 * cta + t + 7).tolist()  # the peer wrote our own value back plus 7
    assert out[:, 2].tolist() == ((cta % 2 ^ 1) + 1).tolist()  # the peer's rank + 1, added into our word


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


def test_multicast_tensor_copy_lands_in_every_cta_of_the_mask():
    # rank 0 multicasts one 16 x 8 u16 box to ranks 0 and 2 of a cluster of 4; each of those waits on its own barrier
    body = """
  mov.u32 %r4, %cluster_ctarank; mov.u32 %r20, sm; mov.u32 %r21, bar;
  setp.eq.u32 %p1, %r0, 0;
  and.b32 %r13, %r4, 1; setp.eq.u32 %p5, %r13, 0;               // ranks 0 and 2 receive
  @%p1 mbarrier.init.shared::cta.b64 [%r21], 1;
  @%p1 mbarrier.expect_tx.shared::cta.b64 [%r21], 256;
  barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;
  setp.eq.u32 %p2, %r4, 0; and.pred %p3, %p1, %p2;
  @!%p3 bra WAITER;
  mov.u16 %rs1, 5; mov.u32 %r14, 0; mov.u32 %r15, 1;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster
      [%r20], [%rd9, {%r14, %r15}], [%r21], %rs1;
WAITER:
  @%p1 mbarrier.arrive.shared::cta.b64 %rd6, [%r21];
  @!%p5 bra END;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r21], 0;
  @!%p4 bra WAIT;
  shl.b32 %r5, %r0, 2; add.u32 %r6, %r20, %r5; ld.shared.u32 %r12, [%r6];
  st.global.u32 [%rd3], %r12;
END:
"""
    from ptxsim import tensormap

    g = np.arange(4 * 16, dtype=np.uint16).reshape(4, 16)
    dev = ptxsim.Device()
    gb = dev.to_device(g)
    tm = dev.to_device(np.frombuffer(tensormap.encode_tiled(1, 2, gb.addr, (16, 4), (32,), (16, 8), (1, 1)),
                                     np.uint8))
    out = np.zeros((4 * 64, 4), np.uint32)
    k = _kernel(body)
    ptxsim.launch(k, 4, 64, [out, tm], cluster=4, device=dev)
    box = np.zeros((8, 16), np.uint16)
    box[:3] = g[1:4]  # rows 1..3 in bounds, 4..8 zero-filled
    words = box.reshape(-1).view(np.uint32)
    for cta in (0, 2):
        assert out[64 * cta: 64 * cta + 64, 0].tolist() == words.tolist()
    assert not out[64:128].any() and not out[192:].any()


def test_mapa_rank_outside_the_cluster_and_cluster_barrier_deadlock():
    with pytest.raises(ptxsim.PtxSimError, match="target rank 2; the cluster has 2 CTA"):
        ptxsim.launch(_kernel("  mov.u32 %r20, sm; mapa.shared::cluster.u32 %r9, %r20, 2;"), 2, 32,
                      [np.zeros((64, 4), np.uint32), np.zeros(1, np.uint32)], cluster=2)
    body = """
  mov.u32 %r4, %cluster_ctarank; setp.eq.u32 %p1, %r4, 0; mov.u32 %r21, bar;
  @%p1 bra BARRIER;
  mbarrier.init.shared::cta.b64 [%r21], 1;
W:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r21], 0;   // rank 1 blocks here for good
  @!%p2 bra W;
BARRIER:
  barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;
"""
    with pytest.raises(ptxsim.DeadlockError, match=r"(?s)barrier.cluster phase 0: 32 of the cluster's 64 live.*"
                                                   r"phase 0 of the mbarrier"):
        ptxsim.launch(_kernel(body), 2, 32, [np.zeros((64, 4), np.uint32), np.zeros(1, np.uint32)], cluster=2)


def test_without_a_cluster_launch_each_cta_is_a_cluster_of_one():
    body = """
  mov.u32 %r20, sm; shl.b32 %r5, %r0, 2; add.u32 %r6, %r20, %r5; st.shared.u32 [%r6], %r3;
  barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;
  mapa.shared::cluster.u32 %r9, %r6, 0; ld.shared::cluster.u32 %r10, [%r9];
  mov.u32 %r11, %cluster_nctarank; mov.u32 %r12, %clusterid.x; mov.u32 %r13, %is_explicit_cluster;
  st.global.v4.u32 [%rd3], {%r10, %r11, %r12, %r13};
"""
    out = np.zeros((64, 4), np.uint32)
    ptxsim.launch(_kernel(body), 2, 32, [out, np.zeros(1, np.uint32)])
    assert out[:, 0].tolist() == list(range(64)) and set(out[:, 1]) == {1}
    assert out[:, 2].tolist() == [0] * 32 + [1] * 32 and set(out[:, 3]) == {0}


def test_sampling_keeps_whole_clusters():
    out = np.zeros((8 * 32, 4), np.uint32)
    # waves of 3 CTAs would split a cluster: they round down to whole clusters (2 CTAs); 3 CTAs asked -> 2 waves
    stats = ptxsim.launch(_kernel(SREGS), 8, 32, [out, np.zeros(1, np.uint32)], cluster=2, sample_ctas=3,
                          wave_ctas=3)
    ran = sorted(set((np.flatnonzero(out[:, 2]) // 32).tolist()))  # CTAs that wrote %cluster_nctarank (= 2)
    assert stats.simulated_ctas == 4 and len(ran) == 4 and stats.waves["wave_ctas"] == 2
    assert all(c % 2 == 0 and c + 1 in ran for c in ran[::2])  # pairs (0, 1), ... never a lone CTA

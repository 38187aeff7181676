"""Strict asynchronous timing and asynccheck's ordering rules (issue 26, items 1, 2 and 4), on hand-written PTX: each
legal pattern runs clean, each single fault is caught (poisoned data, a sanitizer finding naming both PTX lines, or a
MemoryFault)."""
import numpy as np
import pytest

import ptxsim
from ptxsim.errors import AsynccheckError, MemoryFault, RacecheckError
from tests.ptxsim.ptxkit import HEADER
from tests.ptxsim.test_hopper_wgmma import _desc, _place
from tests.ptxsim.test_hopper_wgmma import _kernel as _wgmma_kernel
from tests.ptxsim.test_hopper_wgmma import _run as _wgmma_run

pytestmark = pytest.mark.sim
POISON32 = 0xFFFFFFFF


def _lines(src: str, text: str) -> int:
    """1-based PTX line of the first line containing text."""
    return next(i for i, s in enumerate(src.splitlines(), 1) if text in s)


# -- bulk copies: poison until a waiter observes the phase ----------------------------------------------------------
# thread 0 initialises the barrier; after bar.sync it copies 256 bytes into sm; every thread waits (WAIT) and reads
BULK = HEADER + """
.shared .align 128 .b8 sm[256];
.shared .align 8 .b64 bar;
.visible .entry k(.param .u64 psrc, .param .u64 pout)
{
  .reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [psrc]; ld.param.u64 %rd2, [pout];
  mov.u32 %r0, %tid.x; mul.wide.u32 %rd3, %r0, 4; add.s64 %rd4, %rd2, %rd3;
  mov.u32 %r1, sm; mov.u32 %r2, bar;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;
  @%p1 INIT_FENCE
  bar.sync 0;
  @!%p1 bra WAIT;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], 256;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 256, [%r2];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], 0;
  RETRY
  shl.b32 %r4, %r0, 2; add.u32 %r4, %r4, %r1; ld.shared.u32 %r5, [%r4];
  st.global.u32 [%rd4], %r5;
  ret;
}
"""


MBAR_FENCE = "fence.mbarrier_init.release.cluster;"


def _bulk(retry: bool, fence=MBAR_FENCE, **kw):
    src = BULK.replace("RETRY", "@!%p2 bra WAIT;" if retry else "").replace("INIT_FENCE", fence)
    data, out = np.arange(64, dtype=np.uint32) + 5, np.zeros(64, np.uint32)
    stats = ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 64, [data, out], **kw)
    return src, data, out, stats


def test_bulk_copy_with_a_retry_loop_is_clean_and_lands():
    _, data, out, stats = _bulk(True, sanitize="all")
    assert np.array_equal(out, data) and stats.sanitizer_reports == []


def test_missing_retry_loop_reads_poison_and_racecheck_names_both_lines():
    _, data, out, _ = _bulk(False, strict_async=True)
    assert set(out.tolist()) == {POISON32}  # the first try fails, the phase is never observed: no bytes landed
    _, _, out, _ = _bulk(False, strict_async=False)  # the forgiving timing of plain runs hides the fault
    assert np.array_equal(out, np.arange(64, dtype=np.uint32) + 5)
    src = BULK.replace("RETRY", "").replace("INIT_FENCE", MBAR_FENCE)
    copy, read = _lines(src, "cp.async.bulk.shared::cluster"), _lines(src, "ld.shared.u32 %r5")
    with pytest.raises(RacecheckError, match=rf"copy issued at PTX line {copy} before a waiter observed.* at PTX "
                                             rf"line {read} "):
        _bulk(False, sanitize="racecheck")


def test_try_wait_fails_once_per_wait_even_on_a_complete_phase():
    # one thread arrives (completing the count-1 phase) and counts its tries at the wait
    src = HEADER + """
.shared .align 8 .b64 bar;
.visible .entry k(.param .u64 pout)
{
  .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [pout]; mov.u32 %r2, bar; mov.u32 %r3, 0;
  mbarrier.init.shared::cta.b64 [%r2], 1;
  mbarrier.arrive.shared::cta.b64 %rd5, [%r2];
W:
  add.u32 %r3, %r3, 1;
  mbarrier.test_wait.parity.shared::cta.b64 %p2, [%r2], 0;
  @!%p2 bra W;
  st.global.u32 [%rd1], %r3;
  ret;
}
"""
    k = ptxsim.load_ptx(src).kernel("k")
    out = np.zeros(1, np.uint32)
    ptxsim.launch(k, 1, 1, [out], strict_async=True)
    assert out[0] == 2
    ptxsim.launch(k, 1, 1, [out], strict_async=False)
    assert out[0] == 1


def test_cp_async_destination_is_poison_until_wait_group():
    src = HEADER + """
.shared .align 16 .b32 s[32];
.visible .entry k(.param .u64 psrc, .param .u64 pout)
{
  .reg .b32 %r<8>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [psrc]; ld.param.u64 %rd2, [pout];
  mov.u32 %r0, %tid.x; mul.wide.u32 %rd3, %r0, 4; add.s64 %rd4, %rd1, %rd3; add.s64 %rd5, %rd2, %rd3;
  mov.u32 %r1, s; shl.b32 %r2, %r0, 2; add.u32 %r2, %r1, %r2;
  cp.async.ca.shared.global [%r2], [%rd4], 4; cp.async.commit_group;
  ld.shared.u32 %r3, [%r2]; st.global.u32 [%rd5], %r3;
  cp.async.wait_group 0;
  ld.shared.u32 %r3, [%r2]; st.global.u32 [%rd5+128], %r3;
  ret;
}
"""
    data, out = np.arange(32, dtype=np.uint32), np.zeros(64, np.uint32)
    ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 32, [data, out], strict_async=True)
    assert set(out[:32].tolist()) == {POISON32} and np.array_equal(out[32:], data)


# -- bulk stores: read their source and land at wait_group -----------------------------------------------------------
STORE = HEADER + """
.shared .align 128 .b32 sm[32];
.visible .entry k(.param .u64 pdst, .param .u64 pout)
{
  .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [pdst]; ld.param.u64 %rd2, [pout];
  mov.u32 %r0, %tid.x; mov.u32 %r1, sm; shl.b32 %r2, %r0, 2; add.u32 %r2, %r1, %r2;
  add.u32 %r3, %r0, 100; st.shared.u32 [%r2], %r3;
  FENCE
  bar.sync 0;
  setp.eq.u32 %p1, %r0, 0;
  @!%p1 bra END;
  cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1], 128;
  cp.async.bulk.commit_group;
  ld.global.u32 %r4, [%rd1]; st.global.u32 [%rd2], %r4;      // before the wait: not landed yet
  EARLY
  cp.async.bulk.wait_group.read 0;
  LATE
END:
  ret;
}
"""
OVERWRITE = "mov.u32 %r5, 7; st.shared.u32 [%r1], %r5;"
PROXY_FENCE = "fence.proxy.async.shared::cta;"


def _store(fence=PROXY_FENCE, early="", late="", **kw):
    src = STORE.replace("FENCE", fence).replace("EARLY", early).replace("LATE", late)
    dst, out = np.zeros(32, np.uint32), np.zeros(1, np.uint32)
    stats = ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 32, [dst, out], **kw)
    return src, dst, out, stats


def test_bulk_store_lands_at_its_wait_and_reads_its_source_then():
    _, dst, out, stats = _store(late=OVERWRITE, sanitize="all")
    assert stats.sanitizer_reports == [] and out[0] == 0  # the store had not landed when thread 0 looked
    assert np.array_equal(dst, np.arange(32) + 100)  # the overwrite after wait_group.read is not seen
    _, dst, _, _ = _store(early=OVERWRITE, strict_async=True)
    assert dst[0] == 7  # overwritten before wait_group.read: the store read the new value
    with pytest.raises(AsynccheckError, match="a cp.async.bulk store still reads"):
        _store(early=OVERWRITE, sanitize="asynccheck")


def test_bulk_store_of_generic_writes_needs_fence_proxy_async():
    src = STORE.replace("FENCE", "").replace("EARLY", "").replace("LATE", "")
    write = _lines(src, "st.shared.u32 [%r2], %r3")
    with pytest.raises(AsynccheckError, match=rf"cp.async.bulk store \(its source\) reads shared memory written "
                                              rf"through the generic proxy at PTX line {write} with no "
                                              "fence.proxy.async"):
        _store(fence="", sanitize="asynccheck")
    with pytest.raises(AsynccheckError, match="with no fence.proxy.async"):  # a fence for global memory only
        _store(fence="fence.proxy.async.global;", sanitize="asynccheck")


# -- wgmma: operands re-read at retire, wgmma.fence, the proxy fence ------------------------------------------------
def _ones_image():
    import ml_dtypes

    ones = np.ones((8, 16), ml_dtypes.bfloat16)  # A and B both name it: rows 8.. of A are the zeros after it
    img = np.zeros(4096, np.uint8)  # every byte the descriptors read is written (initcheck)
    part = _place(ones.view(np.uint8).reshape(8, 32), 0, 128, 256)
    img[:part.size] = part
    return img


def test_wgmma_operand_overwritten_before_wait_group_is_caught():
    img = _ones_image()
    clobber = "  setp.eq.u32 %p3, %r0, 0; @%p3 st.shared.u32 [0], %r0;"  # thread 0 writes A's first bytes
    src = _wgmma_kernel(8, 1, 0, extra=clobber)
    mma, wait = _lines(src, "wgmma.mma_async"), _lines(src, "wgmma.wait_group")
    D = _wgmma_run(src, img, _desc(0, 128, 256, 0), _desc(0, 128, 256, 0), 8, strict_async=True)
    assert np.isnan(D[:16]).all()  # the retiring results are undefined: NaN
    with pytest.raises(AsynccheckError, match=rf"operand of the wgmma.mma_async at PTX line {mma} changed before "
                                              rf"this wgmma.wait_group.*at PTX line {wait} "):
        _wgmma_run(src, img, _desc(0, 128, 256, 0), _desc(0, 128, 256, 0), 8, sanitize="asynccheck")
    legal = _wgmma_kernel(8, 1, 0, extra=clobber.replace("[0]", "[8192]"))  # outside the operands
    D = _wgmma_run(legal, img, _desc(0, 128, 256, 0), _desc(0, 128, 256, 0), 8, sanitize="all")
    assert D[0, 0] == 1.0 + 16.0


def test_wgmma_fence_rules():
    img = _ones_image()
    args = (img, _desc(0, 128, 256, 0), _desc(0, 128, 256, 0), 8)
    src = _wgmma_kernel(8, 1, 0)
    _wgmma_run(src, *args, sanitize="asynccheck")  # fence after the accumulator inits: clean
    with pytest.raises(AsynccheckError, match="no wgmma.fence before it"):
        _wgmma_run(src.replace("  wgmma.fence.sync.aligned;\n", ""), *args, sanitize="asynccheck")
    late = src.replace("  wgmma.fence.sync.aligned;\n", "  wgmma.fence.sync.aligned;\n  mov.b32 %d1, 0f00000000;\n")
    line = _lines(late, "mov.b32 %d1, 0f00000000")
    with pytest.raises(AsynccheckError, match=rf"accumulator register %d1 was accessed at PTX line {line} after"):
        _wgmma_run(late, *args, sanitize="asynccheck")
    # A from registers: written by the ld.global before the fence (clean), or after it (a finding)
    a_src = _wgmma_kernel(8, 1, 0, a_regs=True)
    _wgmma_run(a_src, *args, sanitize="asynccheck")
    load = "  ld.global.v4.b32 {%a0, %a1, %a2, %a3}, [%rd8];\n"
    moved = a_src.replace(load, "").replace("  wgmma.fence.sync.aligned;\n", "  wgmma.fence.sync.aligned;\n" + load)
    with pytest.raises(AsynccheckError, match=r"A-fragment register %a\d was accessed at PTX line"):
        _wgmma_run(moved, *args, sanitize="asynccheck")


def test_wgmma_reading_generic_writes_needs_fence_proxy_async():
    img = _ones_image()
    src = _wgmma_kernel(8, 1, 0).replace("  fence.proxy.async.shared::cta;", "")
    write = _lines(src, "st.shared.u8")
    with pytest.raises(AsynccheckError, match=rf"wgmma.mma_async \(matrix descriptor\) reads shared memory written "
                                              rf"through the generic proxy at PTX line {write} with no "
                                              "fence.proxy.async"):
        _wgmma_run(src, img, _desc(0, 128, 256, 0), _desc(0, 128, 256, 0), 8, sanitize="asynccheck")


# -- mbarrier init visibility ----------------------------------------------------------------------------------------
def test_bulk_copy_signalling_a_barrier_whose_init_the_async_proxy_may_not_see():
    for fence in (MBAR_FENCE, "fence.proxy.async.shared::cta;", "fence.proxy.async;"):  # either is established
        assert _bulk(True, fence, sanitize="asynccheck")[3].sanitizer_reports == []
    for fence in ("", "fence.proxy.async.global;"):  # none, or one for the wrong state space
        with pytest.raises(AsynccheckError, match=r"a bulk copy signals the mbarrier .* neither with "
                                                  "fence.proxy.async"):
            _bulk(True, fence or "bra.uni WAIT0;\nWAIT0:", sanitize="asynccheck")


def test_mbarrier_used_by_other_threads_before_a_barrier_after_init():
    src = BULK.replace("RETRY", "@!%p2 bra WAIT;").replace("INIT_FENCE", MBAR_FENCE)
    data, out = np.arange(64, dtype=np.uint32), np.zeros(64, np.uint32)
    unsynced = src.replace("  bar.sync 0;\n", "", 1)
    with pytest.raises(AsynccheckError, match=rf"used by a thread other than the one that initialised it \(PTX line "
                                              rf"{_lines(src, 'mbarrier.init')}\) with no bar.sync"):
        ptxsim.launch(ptxsim.load_ptx(unsynced).kernel("k"), 1, 64, [data, out], sanitize="asynccheck")


# -- clusters ---------------------------------------------------------------------------------------------------------
CLUSTER = HEADER + """
.shared .align 8 .b64 bar;
.shared .align 4 .b32 word;
.visible .entry k(.param .u64 pout)
{
  .reg .pred %p<8>; .reg .b32 %r<16>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r0, %tid.x; mov.u32 %r1, %cluster_ctarank; mov.u32 %r2, bar; xor.b32 %r3, %r1, 1;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;
  INIT_SYNC
  mapa.shared::cluster.u32 %r4, %r2, %r3;             // the peer's barrier
  setp.eq.u32 %p2, %r1, 0;
  and.pred %p3, %p1, %p2;
  @%p3 mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r4];   // rank 0 arrives on rank 1's barrier
  OBSERVE
  EXIT_SYNC
  ret;
}
"""
RELEASE_SYNC = "barrier.cluster.arrive.release; barrier.cluster.wait.acquire;"
RANK1_WAITS = """setp.eq.u32 %p4, %r1, 1; and.pred %p4, %p4, %p1; @!%p4 bra SKIP;
W: mbarrier.try_wait.parity.shared::cta.b64 %p5, [%r2], 0; @!%p5 bra W;
SKIP:"""


def _cluster(init_sync=RELEASE_SYNC, observe="", exit_sync=RELEASE_SYNC, **kw):
    src = CLUSTER.replace("INIT_SYNC", init_sync).replace("OBSERVE", observe).replace("EXIT_SYNC", exit_sync)
    return src, ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 2, 32, [np.zeros(1, np.uint32)], cluster=(2,),
                              sanitize="asynccheck", **kw)


def test_cluster_init_visibility_and_exit_rules_pass_the_legal_patterns():
    for init_sync in (RELEASE_SYNC, "fence.mbarrier_init.release.cluster; barrier.cluster.arrive.relaxed; "
                                    "barrier.cluster.wait;"):
        assert _cluster(init_sync)[1].sanitizer_reports == []
    # no cluster barrier before exit, but the target observed the phase the remote arrive completed (DeepGEMM)
    assert _cluster(observe=RANK1_WAITS, exit_sync="")[1].sanitizer_reports == []


def test_peer_uses_a_barrier_before_its_init_is_visible_to_the_cluster():
    for init_sync in ("barrier.cluster.arrive.relaxed; barrier.cluster.wait;", "bar.sync 0;"):
        with pytest.raises(AsynccheckError, match=r"a peer CTA uses the mbarrier .* before its mbarrier.init \(PTX "
                                                  r"line \d+\) is visible to the cluster"):
            _cluster(init_sync)


@pytest.mark.parametrize("exit_sync", ["", "barrier.cluster.arrive.release;"])  # none, or an arrive without wait
def test_cta_exiting_with_an_unobserved_remote_arrive_is_a_finding(exit_sync):
    src, stats = _cluster(exit_sync=exit_sync, sanitize_report=True)
    arrive = _lines(src, "mbarrier.arrive.release.cluster")
    (r,) = [r for r in stats.sanitizer_reports if "exits" in r.message]
    assert f"peer's arrive / complete_tx on its mbarrier (PTX line {arrive}, CTA (0, 0, 0)" in r.message
    assert r.cta == (1, 0, 0) and r.line == _lines(src, "ret;")


def test_access_to_an_exited_peer_is_a_memory_fault():
    # rank 1 exits at once; rank 0 then stores into its shared memory
    src = HEADER + """
.shared .align 4 .b32 word;
.visible .entry k(.param .u64 pout)
{
  .reg .pred %p<4>; .reg .b32 %r<8>;
  mov.u32 %r1, %cluster_ctarank; setp.eq.u32 %p1, %r1, 1;
  @%p1 ret;
  mov.u32 %r2, word; mapa.shared::cluster.u32 %r3, %r2, 1;
  st.shared::cluster.u32 [%r3], %r1;
  ret;
}
"""
    with pytest.raises(MemoryFault, match=r"st.shared::cluster.*CTA \(0, 0, 0\) thread \(0, 0, 0\), to the shared "
                                          r"memory of cluster CTA rank 1, which has exited"):
        ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 2, 32, [np.zeros(1, np.uint32)], cluster=(2,))


# -- racecheck: asynchronous overwrites ordered after the reads --------------------------------------------------------
RING = HEADER + """
.shared .align 128 .b8 sm[128];
.shared .align 8 .b64 full;
.shared .align 8 .b64 empty;
.visible .entry k(.param .u64 psrc, .param .u64 pout)
{
  .reg .pred %p<8>; .reg .b32 %r<16>; .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [psrc]; ld.param.u64 %rd2, [pout];
  mov.u32 %r0, %tid.x; mov.u32 %r1, sm; mov.u32 %r2, full; mov.u32 %r3, empty;
  and.b32 %r6, %r0, 31; mul.wide.u32 %rd3, %r6, 4; add.s64 %rd4, %rd2, %rd3;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;
  @%p1 mbarrier.init.shared::cta.b64 [%r3], 1;
  @%p1 fence.mbarrier_init.release.cluster;
  bar.sync 0;
  setp.lt.u32 %p2, %r0, 32;
  @%p2 bra PRODUCER;
  setp.eq.u32 %p3, %r0, 32;                      // warp 1 consumes two rounds
  shl.b32 %r4, %r6, 2; add.u32 %r4, %r4, %r1;
F0: mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r2], 0; @!%p4 bra F0;
  EARLY_RELEASE
  ld.shared.u32 %r5, [%r4]; st.global.u32 [%rd4], %r5;
  LATE_RELEASE
F1: mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r2], 1; @!%p4 bra F1;
  ld.shared.u32 %r5, [%r4]; st.global.u32 [%rd4+128], %r5;
  ret;
PRODUCER:
  @!%p1 bra END;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], 128;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 128, [%r2];
E0: mbarrier.try_wait.parity.shared::cta.b64 %p5, [%r3], 0; @!%p5 bra E0;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], 128;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1+128], 128, [%r2];
END:
  ret;
}
"""
RELEASE = "@%p3 mbarrier.arrive.shared::cta.b64 %rd6, [%r3];"


def test_refill_after_the_consumer_released_the_stage_is_clean():
    src = RING.replace("EARLY_RELEASE", "").replace("LATE_RELEASE", RELEASE)
    data, out = np.arange(64, dtype=np.uint32), np.zeros(64, np.uint32)
    stats = ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 64, [data, out], sanitize="all")
    assert stats.sanitizer_reports == [] and np.array_equal(out, data)


def test_refill_racing_the_consumers_read_is_caught():
    # the consumer releases the stage before reading it: the producer's refill is not ordered after the read
    src = RING.replace("EARLY_RELEASE", RELEASE).replace("LATE_RELEASE", "")
    refill, read = _lines(src, "[%rd1+128]"), _lines(src, "ld.shared.u32 %r5, [%r4]; st.global.u32 [%rd4], %r5;")
    with pytest.raises(RacecheckError, match=rf"asynchronous copy overwrites shared memory that warp 1 of this CTA "
                                             rf"read at PTX line {read} with nothing ordering.* at PTX line {refill} "):
        ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 64, [np.arange(64, dtype=np.uint32),
                                                                np.zeros(64, np.uint32)], sanitize="racecheck")
    # no empty wait at all: the refill lands on the first copy, still in flight
    eager = RING.replace("EARLY_RELEASE", "").replace("LATE_RELEASE", RELEASE).replace(
        "E0: mbarrier.try_wait.parity.shared::cta.b64 %p5, [%r3], 0; @!%p5 bra E0;\n"
        "  mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], 128;\n", "")
    with pytest.raises(RacecheckError, match="copy issued at PTX line \\d+ still has in flight"):
        ptxsim.launch(ptxsim.load_ptx(eager).kernel("k"), 1, 64, [np.arange(64, dtype=np.uint32),
                                                                  np.zeros(64, np.uint32)], sanitize="racecheck")


def test_copy_after_bar_arrive_races_the_other_warps_reads():
    # warp 1 reads sm[0], then the CTA barrier; warp 0's thread 0 then overwrites sm[0] with cp.async
    src = HEADER + """
.shared .align 16 .b32 sm[4];
.visible .entry k(.param .u64 psrc)
{
  .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [psrc]; mov.u32 %r0, %tid.x; mov.u32 %r1, sm;
  setp.lt.u32 %p1, %r0, 32;
  @%p1 bra W0;
  ld.shared.u32 %r5, [%r1];
  bar.sync 0;
  ret;
W0:
  BAR
  setp.eq.u32 %p2, %r0, 0;
  @%p2 cp.async.ca.shared.global [%r1], [%rd1], 4;
  cp.async.commit_group; cp.async.wait_group 0;
  ret;
}
"""
    def run(bar):
        k = ptxsim.load_ptx(src.replace("BAR", bar)).kernel("k")
        return ptxsim.launch(k, 1, 64, [np.arange(4, dtype=np.uint32)], sanitize="racecheck")

    assert run("bar.sync 0;").sanitizer_reports == []
    with pytest.raises(RacecheckError, match=rf"overwrites shared memory that warp 1 of this CTA read at PTX line "
                                             rf"{_lines(src, 'ld.shared.u32 %r5')} "):
        run("bar.arrive 0, 64;")  # arrives without waiting: the other warps' reads are not ordered before the copy

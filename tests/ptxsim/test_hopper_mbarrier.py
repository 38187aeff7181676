"""mbarrier, setmaxnreg and fence.proxy.async corner cases (hand-written PTX), and the asynccheck sanitizer."""
import numpy as np
import pytest

import ptxsim
from ptxsim.errors import AsynccheckError, DeadlockError, MbarrierError, UnsupportedInstruction
from tests.ptxsim.ptxkit import HEADER

pytestmark = pytest.mark.sim


def _kernel(body: str, shared: str = ".shared .align 8 .b64 bar[2];"):
    return ptxsim.load_ptx(_source(body, shared)).kernel("k")


def _source(body: str, shared: str = ".shared .align 8 .b64 bar[2];") -> str:
    return HEADER + f"""
{shared}
.visible .entry k(.param .u64 pout)
{{
  .reg .pred %p<8>; .reg .b32 %r<16>; .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [pout]; mov.u32 %r0, %tid.x; mul.wide.u32 %rd2, %r0, 4; add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r1, bar;
{body}
  ret;
}}
"""


def _run(body, threads=32, **kw):
    # these tests pin the plain runs' forgiving timing (lone waits that block, then return true) unless a sanitizer
    # runs; tests/ptxsim/test_strict_async.py covers strict timing
    kw.setdefault("strict_async", None if "sanitize" in kw else False)
    out = np.zeros(threads, np.uint32)
    stats = ptxsim.launch(_kernel(body), 1, threads, [out], **kw)
    return out, stats


def test_producer_warp_below_consumer_warp_completes_phase_then_releases_waiters():
    # warp 1 (consumers) waits on parity 0 before warp 0 (producer, higher pc) arrives: the waiters block and resume
    body = """
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r1], 32;
  bar.sync 0;
  setp.lt.u32 %p2, %r0, 32;
  @%p2 bra PRODUCER;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r1], 0;
  @!%p3 bra WAIT;
  ld.shared.u32 %r5, [bar+8];
  st.global.u32 [%rd3], %r5;
  bra END;
PRODUCER:
  mov.u32 %r6, 77; st.shared.u32 [bar+8], %r6;
  mbarrier.arrive.release.cta.shared::cta.b64 %rd5, [%r1];
  mbarrier.pending_count.b64 %r7, %rd5;
  st.global.u32 [%rd3], %r7;
END:
"""
    out, _ = _run(body, threads=64)
    assert out[32:].tolist() == [77] * 32  # consumers saw the store that preceded the arrivals
    assert out[:32].tolist() == [0] * 32  # the warp's 32 arrivals used up the count: pending 0 after them


def test_phases_and_parity_alternate_and_state_token_waits():
    # count 1: each arrive completes a phase; parity 0 is complete after phase 0, parity 1 after phase 1
    body = """
  setp.eq.u32 %p1, %r0, 0;
  @!%p1 bra END;
  mbarrier.init.shared.b64 [bar], 1;
  mbarrier.test_wait.parity.shared.b64 %p2, [bar], 1;   // phase "-1" of parity 1: counts as complete
  mbarrier.arrive.shared.b64 %rd5, [bar];               // completes phase 0
  mbarrier.test_wait.shared.b64 %p3, [bar], %rd5;       // token of phase 0: complete
  mbarrier.arrive.shared.b64 %rd6, [bar];               // completes phase 1
  mbarrier.test_wait.parity.shared.b64 %p4, [bar], 1;
  selp.u32 %r2, 1, 0, %p2; selp.u32 %r3, 2, 0, %p3; selp.u32 %r4, 4, 0, %p4;
  or.b32 %r2, %r2, %r3; or.b32 %r2, %r2, %r4;
  shr.u64 %rd7, %rd6, 32; cvt.u32.u64 %r5, %rd7; shl.b32 %r5, %r5, 4; or.b32 %r2, %r2, %r5;
  st.global.u32 [%rd3], %r2;
END:
"""
    out, _ = _run(body, threads=32)
    assert out[0] == 1 | 2 | 4 | (1 << 4)  # the second arrive happened in phase 1


def test_expect_tx_and_complete_tx_gate_the_phase():
    body = """
  setp.eq.u32 %p1, %r0, 0;
  @!%p1 bra END;
  mbarrier.init.shared.b64 [bar], 1;
  mbarrier.arrive.expect_tx.shared.b64 %rd5, [bar], 256;   // arrivals done, 256 bytes outstanding
  mbarrier.complete_tx.shared.b64 [bar], 200;
  mbarrier.expect_tx.shared.b64 [bar], 8;
  mbarrier.complete_tx.shared.b64 [bar], 64;               // 256 + 8 - 264 = 0: the phase completes
  mbarrier.try_wait.parity.shared.b64 %p2, [bar], 0;
  selp.u32 %r2, 1, 0, %p2;
  st.global.u32 [%rd3], %r2;
END:
"""
    out, _ = _run(body, threads=32)
    assert out[0] == 1


def test_wrong_parity_wait_is_a_deadlock_naming_the_barrier():
    body = """
  setp.eq.u32 %p1, %r0, 0;
  @!%p1 bra END;
  mbarrier.init.shared.b64 [bar+8], 2;
  mbarrier.arrive.shared.b64 %rd5, [bar+8];
  mbarrier.try_wait.parity.shared.b64 %p2, [bar+8], 0;   // only 1 of 2 arrivals will ever come
END:
"""
    with pytest.raises(DeadlockError, match=r"phase 0 of the mbarrier at shared address 0x8 .*1 of 2 arrival"):
        _run(body, threads=32)


def test_too_many_arrivals_in_a_phase_is_an_error():
    body = """
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared.b64 [bar], 16;
  bar.sync 0;
  mbarrier.arrive.shared.b64 %rd5, [bar];   // 32 arrivals on a count of 16
"""
    with pytest.raises(MbarrierError, match=r"32 arrival\(s\) .*pending count 16"):
        _run(body, threads=32)


def test_uninitialised_mbarrier_names_the_address():
    with pytest.raises(MbarrierError, match=r"shared address 0x8 is not an initialised mbarrier"):
        _run("  mbarrier.arrive.shared.b64 %rd5, [bar+8];", threads=32)


def test_tx_underflow_is_reported_by_asynccheck_and_deadlocks_without_it():
    body = """
  setp.eq.u32 %p1, %r0, 0;
  @!%p1 bra END;
  mbarrier.init.shared.b64 [bar], 1;
  mbarrier.arrive.expect_tx.shared.b64 %rd5, [bar], 16;
  mbarrier.complete_tx.shared.b64 [bar], 32;
  mbarrier.try_wait.parity.shared.b64 %p2, [bar], 0;
END:
"""
    with pytest.raises(AsynccheckError, match=r"tx-count underflow.*16 more byte"):
        _run(body, threads=32, sanitize="asynccheck")
    with pytest.raises(DeadlockError, match="tx-count -16"):
        _run(body, threads=32)


def test_generic_address_arrive_drop_and_inval():
    body = """
  setp.eq.u32 %p1, %r0, 0;
  @!%p1 bra END;
  mov.u64 %rd8, bar; cvta.shared.u64 %rd8, %rd8;
  mbarrier.init.b64 [%rd8], 2;
  mbarrier.arrive_drop.b64 %rd5, [%rd8];       // phase 0 now needs 1 more, later phases 1
  mbarrier.arrive.b64 %rd6, [%rd8];            // completes phase 0
  mbarrier.arrive.b64 %rd6, [%rd8];            // completes phase 1 alone
  mbarrier.test_wait.parity.b64 %p2, [%rd8], 1;
  selp.u32 %r2, 1, 0, %p2;
  st.global.u32 [%rd3], %r2;
  mbarrier.inval.b64 [%rd8];
  mbarrier.arrive.b64 %rd6, [%rd8];
END:
"""
    with pytest.raises(MbarrierError, match="not an initialised mbarrier"):
        _run(body, threads=32)


def test_setmaxnreg_fence_proxy_async_and_bad_counts():
    # setmaxnreg's register pool and warpgroup rules: tests/ptxsim/test_setmaxnreg.py
    out, _ = _run("""
  fence.proxy.async.shared::cta;
  st.global.u32 [%rd3], %r0;
""")
    assert out.tolist() == list(range(32))
    with pytest.raises(ptxsim.PtxSimError, match="setmaxnreg count 20"):
        _kernel("  setmaxnreg.inc.sync.aligned.u32 20;")
    with pytest.raises(UnsupportedInstruction, match="mbarrier objects are .b64"):
        _kernel("  mbarrier.init.shared.b32 [bar], 1;")


def test_generic_mbarrier_address_outside_shared_memory_is_a_fault():
    with pytest.raises(ptxsim.MemoryFault, match=r"mbarrier object .*generic address 0x10000000000 is not in the "
                                                 r"CTA's shared window"):
        _run("  mov.u64 %rd8, 1099511627776;\n  mbarrier.init.b64 [%rd8], 1;", threads=32)


def test_asynccheck_reports_a_wait_on_a_phase_the_thread_already_waited_for():
    # two rounds of a count-1 barrier; the second wait forgets to flip the parity bit and passes on phase 0 again
    body = """
  setp.eq.u32 %p1, %r0, 0;
  @!%p1 bra END;
  mbarrier.init.shared.b64 [bar], 1;
  mbarrier.arrive.shared.b64 %rd5, [bar];
W0:
  mbarrier.try_wait.parity.shared.b64 %p2, [bar], 0;   // round 0: phase 0 complete
  @!%p2 bra W0;
W1:
  mbarrier.try_wait.parity.shared.b64 %p2, [bar], PARITY;   // round 1 (phase 1 not arrived yet)
  @!%p2 bra W1;
  mbarrier.arrive.shared.b64 %rd5, [bar];
END:
"""
    with pytest.raises(AsynccheckError, match="satisfied by phase 0, which this thread already waited for"):
        _run(body.replace("PARITY", "0"), threads=32, sanitize="asynccheck")
    with pytest.raises(DeadlockError, match="phase 1 of the mbarrier"):  # the flipped bit waits for real
        _run(body.replace("PARITY", "1"), threads=32, sanitize="asynccheck")
    _run(body.replace("PARITY", "0"), threads=32)  # silent without the sanitizer, like hardware


def test_decode_errors_name_the_operand_problem():
    with pytest.raises(ptxsim.PtxSimError, match=r"arrive.expect_tx takes state, \[address\], txCount; got 2"):
        _kernel("  mbarrier.arrive.expect_tx.shared.b64 %rd5, [bar];")
    with pytest.raises(ptxsim.PtxSimError, match="first operand must be a predicate register"):
        _kernel("  mbarrier.try_wait.parity.shared.b64 %r2, [bar], 0;")
    with pytest.raises(ptxsim.PtxSimError, match="mbarrier.init count 0"):
        _kernel("  mbarrier.init.shared.b64 [bar], 0;")


_CP_ARRIVE = """
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared.b64 [bar], 32;
  bar.sync 0;
  setp.lt.u32 %p2, %r0, 32;
  @%p2 bra CONS;
  sub.u32 %r3, %r0, 32; shl.b32 %r4, %r3, 2; mov.u32 %r5, buf; add.u32 %r5, %r5, %r4;
  cp.async.ca.shared.global [%r5], [%rd3], 4;      // warp 1 copies out[32..63] into buf
ARRIVE
  bra END;
CONS:
WAIT:
  mbarrier.try_wait.parity.shared.b64 %p3, [bar], 0;
  @!%p3 bra WAIT;
  shl.b32 %r4, %r0, 2; mov.u32 %r5, buf; add.u32 %r5, %r5, %r4;
  ld.shared.u32 %r6, [%r5];                          // warp 0 reads them once the phase completes
  st.global.u32 [%rd3], %r6;
END:
"""


@pytest.mark.parametrize("arrive", [
    "  cp.async.mbarrier.arrive.noinc.shared::cta.b64 [bar];",  # the copies' arrive is the thread's arrival
    "  cp.async.mbarrier.arrive.shared.b64 [bar];\n  mbarrier.arrive.shared.b64 %rd5, [bar];",  # +1 then -1, and one
])
def test_cp_async_mbarrier_arrive_publishes_the_copies_through_the_barrier(arrive):
    """cp.async.mbarrier.arrive (CUTLASS's FP8 blockwise mainloop loads its scales so): the consumers see the copies
    after the phase completes, with no bar.sync between, and no sanitizer objects."""
    body = _CP_ARRIVE.replace("ARRIVE", arrive)
    kern = _kernel(body, ".shared .align 8 .b64 bar[2];\n.shared .align 16 .b32 buf[32];")
    out = np.zeros(64, np.uint32)
    out[32:] = np.arange(100, 132)
    stats = ptxsim.launch(kern, 1, 64, [out], sanitize="all")
    assert stats.sanitizer_reports == []
    assert out[:32].tolist() == list(range(100, 132))


def test_cp_async_mbarrier_arrive_needs_a_b64_barrier():
    with pytest.raises(UnsupportedInstruction, match=r"\.b64 mbarrier"):
        _kernel("  cp.async.mbarrier.arrive.noinc.shared.b32 [bar];")


def test_trap_ends_the_launch_naming_line_cta_and_thread():
    body = """
  setp.eq.u32 %p1, %r0, 5;
  @%p1 trap;
"""
    line = _trap_line(body)
    with pytest.raises(ptxsim.PtxSimError, match=rf"trap executed in kernel k at PTX line {line}, CTA \(0, 0, 0\), "
                                                  r"thread \(5, 0, 0\)"):
        _run(body, threads=32)
    _run(body.replace("%r0, 5", "%r0, 99"), threads=32)  # no thread traps: the launch ends normally


def _trap_line(body: str) -> int:
    """The 1-based line of the one trap in _source(body)."""
    lines = _source(body).splitlines()
    return next(i for i, text in enumerate(lines, 1) if "trap;" in text)


# a wait bounded as ptx_impl/gemm_fp8_ws_template._bounded bounds it: 3 failed tries, then trap
BOUNDED_WAIT = """
  setp.eq.u32 %p1, %r0, 0;
  @!%p1 bra END;
  mbarrier.init.shared.b64 [bar], 2;
  mbarrier.arrive.shared.b64 %rd5, [bar];      // 1 of 2 arrivals: the phase never completes
  mov.u32 %r4, 0;
WAIT:
  mbarrier.try_wait.parity.shared.b64 %p2, [bar], 0;
  @%p2 bra DONE;
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p3, %r4, 3;
  @%p3 bra WAIT;
  st.global.u32 [%rd3], %r4;
  trap;
DONE:
  st.global.u32 [%rd3], 77;
END:
"""


def test_wait_timeouts_let_a_bounded_wait_reach_its_trap_instead_of_a_deadlock():
    """With wait_timeouts a try_wait blocked when nothing can progress returns false (a hardware time-out): the
    bounded loop counts 3 failed tries and traps; without it the same launch is the deadlock naming the barrier."""
    with pytest.raises(DeadlockError, match=r"phase 0 of the mbarrier .*1 of 2 arrival"):
        _run(BOUNDED_WAIT, threads=32)
    line = _trap_line(BOUNDED_WAIT)
    for strict in (False, True):
        with pytest.raises(ptxsim.PtxSimError, match=rf"trap executed in kernel k at PTX line {line}, CTA \(0, 0, 0\), "
                                                      r"thread \(0, 0, 0\)"):
            _run(BOUNDED_WAIT, threads=32, wait_timeouts=True, strict_async=strict)


def test_wait_timeouts_change_nothing_when_the_phase_completes():
    out, _ = _run(BOUNDED_WAIT.replace("[bar], 2;", "[bar], 1;"), threads=32, wait_timeouts=True)
    assert out[0] == 77


# CUTLASS's consumer fetches the next stage's token with a lone try_wait (no retry loop) before it releases the stage
# the producer's tail waits on: on hardware the try_wait times out (false) and the consumer goes on to the release.
PREFETCH_CYCLE = """
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared.b64 [bar], 1;       // "full": the next stage, never produced
  @%p1 mbarrier.init.shared.b64 [bar+8], 1;     // "empty": released by the consumer
  bar.sync 0;
  setp.lt.u32 %p2, %r0, 32;
  @%p2 bra PRODUCER;
  mbarrier.try_wait.parity.shared.b64 %p3, [bar], 0;   // the consumer's lone try_wait
  selp.u32 %r5, 1, 0, %p3;
  st.global.u32 [%rd3], %r5;
  setp.eq.u32 %p4, %r0, 32;
  @%p4 mbarrier.arrive.shared.b64 %rd5, [bar+8];
  bra END;
PRODUCER:
WAIT:
  mbarrier.try_wait.parity.shared.b64 %p5, [bar+8], 0;
  @!%p5 bra WAIT;
  st.global.u32 [%rd3], 77;
END:
"""


def test_a_lone_try_wait_in_a_wait_cycle_times_out_and_the_cycle_resolves():
    out, _ = _run(PREFETCH_CYCLE, threads=64)
    assert (out[:32] == 77).all() and (out[32:] == 0).all()  # the producer went on; the consumer's try_wait: false


def test_a_cycle_of_retry_loops_is_still_a_deadlock():
    """Timing the waits out changes nothing when both sides retry: no phase completes, and the launch is the
    deadlock it reports (not a livelock)."""
    lone = "  mbarrier.try_wait.parity.shared.b64 %p3, [bar], 0;   // the consumer's lone try_wait\n"
    assert lone in PREFETCH_CYCLE
    looped = PREFETCH_CYCLE.replace(lone, """CWAIT:
  mbarrier.try_wait.parity.shared.b64 %p3, [bar], 0;
  @!%p3 bra CWAIT;
""")
    with pytest.raises(DeadlockError, match=r"phase 0 of the mbarrier"):
        _run(looped, threads=64)

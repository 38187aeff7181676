"""Model v2's warp roles (issue #29 item 1): a warp-specialised kernel (one producer warp filling an mbarrier ring
with bulk copies, consumer warps computing on each slot and releasing it) replays as distinct streams that overlap
through the ring, so the number of stages changes the time as the ring's latency hiding says it should."""
from __future__ import annotations

import numpy as np

import ptxsim
from ptxsim.model.cycle import estimate_v2
from ptxsim.model.cycle_trace import per_pc_counts, warp_roles
from ptxsim.model.devices import get_device
from ptxsim.model.occupancy import occupancy

H100 = get_device("H100 SXM")
SLOT = 2048   # bytes a stage


def ring_ptx(stages: int, fmas: int) -> str:
    """Warp 0 (lane 0) waits on empty[s], arrive.expect_tx on full[s] and bulk-copies SLOT bytes into stage s;
    warps 1-4 wait on full[s], run `fmas` dependent FMAs on a value from the slot and release it (lane 0 arrives on
    empty[s], initialised with 4 arrivals). The producer's first pass over the ring waits on the phase before the
    first (parity 1), which passes free."""
    inits = "\n".join(f"  mbarrier.init.shared::cta.b64 [full+{8 * s}], 1;\n"
                      f"  mbarrier.init.shared::cta.b64 [empty+{8 * s}], 4;" for s in range(stages))
    chain = "\n".join("  fma.rn.f32 %f1, %f1, %f2, %f2;" for _ in range(fmas))
    return f""".version 8.0
.target sm_90
.address_size 64
.shared .align 128 .b8 buf[{stages * SLOT}];
.shared .align 8 .b64 full[{stages}];
.shared .align 8 .b64 empty[{stages}];
.visible .entry ring(.param .u64 psrc, .param .u64 pdst, .param .u32 pk)
{{
  .reg .pred %p<4>; .reg .b32 %r<24>; .reg .b64 %rd<8>; .reg .f32 %f<4>;
  ld.param.u64 %rd1, [psrc]; ld.param.u64 %rd6, [pdst]; ld.param.u32 %r1, [pk];
  mov.u32 %r2, %tid.x; shr.u32 %r3, %r2, 5; and.b32 %r4, %r2, 31;
  setp.ne.u32 %p1, %r2, 0;
  @%p1 bra INITED;
{inits}
INITED:
  bar.sync 0;
  mov.u32 %r5, 0;
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra CONS;
  setp.ne.u32 %p1, %r4, 0;
  @%p1 bra END;
PLOOP:
  rem.u32 %r6, %r5, {stages}; div.u32 %r7, %r5, {stages}; and.b32 %r7, %r7, 1; xor.b32 %r7, %r7, 1;
  mov.u32 %r8, empty; mad.lo.u32 %r8, %r6, 8, %r8;
PWAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r8], %r7;
  @!%p2 bra PWAIT;
  mov.u32 %r9, full; mad.lo.u32 %r9, %r6, 8, %r9;
  mov.u32 %r10, buf; mad.lo.u32 %r10, %r6, {SLOT}, %r10;
  mul.wide.u32 %rd2, %r5, {SLOT}; add.s64 %rd3, %rd1, %rd2;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd4, [%r9], {SLOT};
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r10], [%rd3], {SLOT}, [%r9];
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p3, %r5, %r1;
  @%p3 bra PLOOP;
  bra END;
CONS:
  mov.f32 %f1, 0f00000000;
CLOOP:
  rem.u32 %r6, %r5, {stages}; div.u32 %r7, %r5, {stages}; and.b32 %r7, %r7, 1;
  mov.u32 %r9, full; mad.lo.u32 %r9, %r6, 8, %r9;
CWAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r9], %r7;
  @!%p2 bra CWAIT;
  mov.u32 %r10, buf; mad.lo.u32 %r10, %r6, {SLOT}, %r10; shl.b32 %r11, %r4, 2; add.u32 %r10, %r10, %r11;
  ld.shared.f32 %f2, [%r10];
{chain}
  mov.u32 %r8, empty; mad.lo.u32 %r8, %r6, 8, %r8;
  setp.eq.u32 %p2, %r4, 0;
  @%p2 mbarrier.arrive.shared::cta.b64 %rd4, [%r8];
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p3, %r5, %r1;
  @%p3 bra CLOOP;
  mul.wide.u32 %rd5, %r2, 4; add.s64 %rd5, %rd6, %rd5;
  st.global.f32 [%rd5], %f1;
END:
  ret;
}}
"""


def ring_run(stages: int, fmas: int, k: int = 24, ctas: int = 1):
    kernel = ptxsim.load_ptx(ring_ptx(stages, fmas)).kernel("ring")
    dev = ptxsim.Device()
    stats = dev.launch(kernel, ctas, 160, [dev.alloc(k * SLOT), dev.alloc(160 * 4), np.uint32(k)])
    occ = occupancy(H100, 160, 32, stages * (SLOT + 16))
    return kernel, stats, occ


def ring_estimate(stages: int, fmas: int, k: int = 24, with_roles: bool = True):
    kernel, stats, occ = ring_run(stages, fmas, k)
    counts = per_pc_counts(kernel.program, stats.per_line)
    if not with_roles:
        return estimate_v2(kernel.program, counts, stats.metrics, H100, occ)
    return estimate_v2(kernel.program, counts, stats.metrics, H100, occ, by_warp=stats.by_warp,
                       simulated_ctas=stats.simulated_ctas)


def test_the_simulator_counts_per_warp_and_tells_mbarrier_waits_apart():
    kernel, stats, _ = ring_run(4, 8, k=12)
    counts = stats.by_warp.counts
    assert counts.shape == (5, len(kernel.program.instrs))
    assert counts.sum() == stats.warp_instructions                      # every warp-instruction, once
    # the four consumer warps run the same blocks; the producer warp others
    assert all(np.array_equal(counts[1], counts[w]) for w in (2, 3, 4))
    assert not np.array_equal(counts[0], counts[1])
    waits = stats.by_warp.mbarrier_waits
    by_line = {ins.pc: ins.text for ins in kernel.program.instrs}
    producer = next(pc for pc in waits if "%r8" in by_line[pc])
    consumer = next(pc for pc in waits if "%r9" in by_line[pc])
    free, tx, arrive, _false = waits[producer]
    assert free == 4 and tx == 0 and arrive == 12 - 4                   # one thread: a pass a stage, 4 free
    assert waits[consumer][1] >= waits[consumer][2]                     # full slots: completed by copy bytes


def test_roles_are_the_producer_and_the_consumers():
    kernel, stats, _ = ring_run(4, 8, k=10)   # within LOOP_WARMUP + STEADY_WINDOW: every iteration replayed
    roles = warp_roles(kernel.program.instrs, per_pc_counts(kernel.program, stats.per_line), 1, 5,
                       stats.by_warp.counts, stats.simulated_ctas, 1.0, stats.by_warp.mbarrier_waits)
    assert sorted(role.slots for role in roles) == [(0,), (1, 2, 3, 4)]
    producer = next(role for role in roles if role.slots == (0,))
    consumer = next(role for role in roles if role.slots != (0,))
    text = [ins.text for ins in kernel.program.instrs]
    assert sum("cp.async.bulk" in text[pc] for pc in producer.trace.pcs) == 10
    assert sum("cp.async.bulk" in text[pc] for pc in consumer.trace.pcs) == 0
    assert sum(text[pc].startswith("fma") for pc in consumer.trace.pcs) == 10 * 8
    # a wait's retries (the functional simulation's) are one wait in the replay
    assert sum("try_wait" in text[pc] for pc in consumer.trace.pcs) == 10
    assert producer.free_waits == 4 and consumer.free_waits == 0


def test_a_deeper_ring_hides_the_copy_latency_under_the_consumers_work():
    # each stage: one bulk copy (a memory round trip, hundreds of clocks) and 64 dependent FMAs (4 clk each: 256
    # clk) a consumer warp. One stage serialises copy and compute, exposing the copy's latency every stage; four
    # let the copies run ahead, so the consumers' own stream is what is left.
    one = ring_estimate(1, 64)
    four = ring_estimate(4, 64)
    assert one.details["warp_roles"] == 2 and one.details["forced_waits"] == 0
    assert four.details["forced_waits"] == 0
    latency_clk = four.details["load_latency_clk"]
    hidden_clk = (one.kernel_seconds - four.kernel_seconds) * four.clock_hz
    assert 0.8 * 24 * latency_clk <= hidden_clk <= 24 * (latency_clk + 64)     # + the copy's time on the L2 path
    chain_s = 24 * 64 * 4 / four.clock_hz
    assert chain_s <= four.kernel_seconds <= 2.0 * chain_s


def test_the_ring_is_bound_by_the_copies_when_the_consumers_have_little_work():
    # two FMAs a stage: the consumers wait on the copies; more stages still overlap more copies, and the time is at
    # least the chain of copies the ring lets be in flight (stages copies per DRAM round trip)
    four, one = ring_estimate(4, 2), ring_estimate(1, 2)
    assert four.kernel_seconds < one.kernel_seconds
    latency_clk = four.details["load_latency_clk"]
    assert one.kernel_seconds * one.clock_hz >= 24 * latency_clk
    assert four.kernel_seconds * four.clock_hz >= 24 * latency_clk / 4


def test_without_per_warp_counts_the_averaged_stream_still_runs():
    est = ring_estimate(4, 8, k=12, with_roles=False)
    assert est.details["warp_roles"] == 1 and est.kernel_seconds > 0


def test_a_wait_for_a_slot_no_producer_will_fill_passes_once_the_producer_is_done():
    # a synthetic ring: the producer fills one slot (expect_tx + one bulk copy) and ends; the consumer waits twice
    # (its second wait's slot was filled in iterations the replay capped) and releases. The second wait passes when
    # the producer has finished, not only when every warp waits (a forced wait); the consumer's own release arrive
    # does not make it a producer.
    from ptxsim.model.cycle import (
        ASYNC_COPY,
        MBAR_ARRIVE,
        MBAR_WAIT,
        WAIT_TX,
        _Op,
        simulate_sm,
    )
    from ptxsim.model.cycle_trace import Role, Trace
    from tests.ptxsim.model.test_model_cycle import _memory

    ops = [_Op(MBAR_ARRIVE, "alu", 2.0, 4.0, (), (), 1.0), _Op(ASYNC_COPY, "lsu", 4.0, 0.0, (), (), 1.0),
           _Op(MBAR_WAIT, "", 0.0, 0.0, (), (), WAIT_TX), _Op(MBAR_ARRIVE, "alu", 2.0, 4.0, (), (), 0.0)]
    roles = (Role((0,), Trace((0, 1), ())), Role((1,), Trace((2, 2, 3), ())))
    run = simulate_sm(roles, ops, _memory(copy_l2_bytes=640.0), 1, 2)
    assert run.forced_waits == 0
    assert run.clocks >= 640 / 64 + 500          # the first wait still waited for the copy


STORE_AND_WAIT = """  mov.u32 %r10, buf; mad.lo.u32 %r10, %r6, {slot}, %r10;
  setp.eq.u32 %p2, %r2, 32;
  @!%p2 bra STORED;
  cp.async.bulk.global.shared::cta.bulk_group [%rd6], [%r10], 128;
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
STORED:
  mov.u32 %r8, empty; mad.lo.u32 %r8, %r6, 8, %r8;
  setp.eq.u32 %p2, %r4, 0;"""


def test_a_bulk_store_wait_waits_for_its_own_stores_not_the_ctas_copies_in_flight():
    # consumer warp 1 stores 128 bytes of each slot to global memory and waits for the store's source read
    # (cp.async.bulk.wait_group.read) before releasing it. That wait is for its own bulk group: the producer's copies
    # of the next slots, in flight on their mbarriers, must not hold it (they did: a wait for every bulk copy of the
    # CTA, which serialised the consumers with the copies as a one-stage ring does)
    src = ring_ptx(4, 64)
    release = "  mov.u32 %r8, empty; mad.lo.u32 %r8, %r6, 8, %r8;\n  setp.eq.u32 %p2, %r4, 0;"
    assert src.count(release) == 1
    kernel = ptxsim.load_ptx(src.replace(release, STORE_AND_WAIT.format(slot=SLOT))).kernel("ring")
    dev = ptxsim.Device()
    stats = dev.launch(kernel, 1, 160, [dev.alloc(24 * SLOT), dev.alloc(160 * 4), np.uint32(24)])
    occ = occupancy(H100, 160, 32, 4 * (SLOT + 16))
    stored = estimate_v2(kernel.program, per_pc_counts(kernel.program, stats.per_line), stats.metrics, H100, occ,
                         by_warp=stats.by_warp, simulated_ctas=stats.simulated_ctas)
    four, one = ring_estimate(4, 64), ring_estimate(1, 64)
    assert stored.kernel_seconds <= four.kernel_seconds + 0.25 * (one.kernel_seconds - four.kernel_seconds)

"""Model v2's taken-branch fetch redirect (cycle_table.BRANCH_REDIRECT_CLK): after a taken branch a warp has nothing
to issue until its fetch restarts at the target. Clock counts follow from the table data by hand arithmetic; the loop
counts are differential (iterations a vs b), so the prologue and the loop's warm-up cancel."""
from __future__ import annotations

import pytest

import ptxsim
from ptxsim.model import costs, cycle
from ptxsim.model.cycle import estimate_v2, simulate_sm
from ptxsim.model.cycle_table import BRANCH_REDIRECT_CLK, LATENCY_CLK
from ptxsim.model.cycle_trace import build_trace, per_pc_counts, taken_branches
from ptxsim.model.devices import get_device
from ptxsim.model.occupancy import occupancy

H100 = get_device("H100 SXM")
HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"
CHAINS = 16


def loop_ptx(iters: int, per_pass: int = 1, guard: bool = False) -> str:
    """One warp: `iters` x CHAINS independent FMAs, `per_pass` iterations' FMAs per pass of the loop (the same work
    unrolled). The counter's add and setp sit early in the body so their latencies hide under the FMAs: a pass costs
    its issue slots (FMAs + add + setp + bra) plus the redirect after its back edge. `guard`: a forward branch that
    is never taken, in every pass."""
    fmas = [f"  fma.rn.f32 %v{i}, %v{i}, 0f3F7FFFFF, 0f33800000;" for i in range(CHAINS)] * per_pass
    skip = "  setp.eq.u32 %p2, %r7, 100000;\n  @%p2 bra SKIP;\nSKIP:\n" if guard else ""
    init = "\n".join(f"  mov.f32 %v{i}, 0f3F000000;" for i in range(CHAINS))
    return HEAD + f"""
.visible .entry k()
{{
  .reg .b32 %r<10>; .reg .f32 %v<{CHAINS + 2}>; .reg .pred %p<4>;
{init}
  mov.u32 %r7, 0;
LOOP:
  add.s32 %r7, %r7, 1;
{chr(10).join(fmas[:8])}
  setp.lt.u32 %p1, %r7, {iters // per_pass};
{chr(10).join(fmas[8:])}
{skip}  @%p1 bra LOOP;
  ret;
}}
"""


def clocks(ptx: str) -> float:
    kernel = ptxsim.load_ptx(ptx).kernel("k")
    stats = ptxsim.Device().launch(kernel, 1, 32, [])
    est = estimate_v2(kernel.program, per_pc_counts(kernel.program, stats.per_line), stats.metrics, H100,
                      occupancy(H100, 32, 32, 0))
    return est.details["sm_clocks"]


def per_pass(**kw) -> float:
    """Clocks per extra pass of the loop (48 vs 16 passes: both capped, so both replays have the same shape)."""
    unroll = kw.get("per_pass", 1)
    return (clocks(loop_ptx(48 * unroll, **kw)) - clocks(loop_ptx(16 * unroll, **kw))) / 32


def test_a_loops_back_edge_costs_the_redirect_once_per_pass():
    assert LATENCY_CLK["int"] <= 8        # the add's and setp's latencies hide under the 8 FMAs before each use
    assert per_pass() == pytest.approx(CHAINS + 3 + BRANCH_REDIRECT_CLK)


def test_unrolling_the_same_work_saves_the_redirect_of_every_pass_it_removes():
    once, twice = per_pass(), per_pass(per_pass=2)
    # two iterations' FMAs per pass: half the passes, each with one add, setp, bra and one redirect
    assert twice == pytest.approx(2 * CHAINS + 3 + BRANCH_REDIRECT_CLK)
    assert 2 * once - twice == pytest.approx(3 + BRANCH_REDIRECT_CLK)


def test_a_branch_not_taken_costs_its_issue_slot_and_no_redirect():
    # the guard adds a setp and a bra that falls through: 2 issue slots, no redirect (its setp's latency hides
    # behind nothing, so the bra waits the setp: int latency)
    extra = per_pass(guard=True) - per_pass()
    assert extra == pytest.approx(1 + LATENCY_CLK["int"])


def test_taken_branches_are_the_branches_followed_by_their_target():
    kernel = ptxsim.load_ptx(loop_ptx(8, guard=True)).kernel("k")    # 8 iterations: none multiplied out
    instrs = kernel.program.instrs
    back = next(ins.pc for ins in instrs if ins.op == "bra" and ins.target < ins.pc)
    guard = next(ins.pc for ins in instrs if ins.op == "bra" and ins.target > ins.pc)
    stats = ptxsim.Device().launch(kernel, 1, 32, [])
    trace = build_trace(instrs, per_pc_counts(kernel.program, stats.per_line), 1)
    taken = [trace.pcs[i] for i in sorted(trace.redirects)]
    assert taken and set(taken) == {back}          # the guard falls through (its target is the next instruction)
    assert guard not in taken
    assert not trace.loops and len(taken) == 8 - 1     # every back edge but the loop's last one is taken
    capped = build_trace(instrs, [c * 6 for c in per_pc_counts(kernel.program, stats.per_line)], 1)
    # 48 iterations, 11 simulated: the last simulated back edge stands for taken ones, so all 11 redirect
    assert capped.loops and len(capped.redirects) == sum(1 for pc in capped.pcs if pc == back) == 11
    assert taken_branches(instrs, trace.pcs) == trace.redirects


def test_a_ptxas_unrolled_pass_branches_once():
    """A self-looping block that ptxas unrolled 4x (sass.loop_unrolls) is replayed 4 iterations per pass with one
    back edge, as the SASS has: one redirect per 4 PTX iterations."""
    kernel = ptxsim.load_ptx(loop_ptx(8)).kernel("k")
    instrs = kernel.program.instrs
    stats = ptxsim.Device().launch(kernel, 1, 32, [])
    counts = per_pc_counts(kernel.program, stats.per_line)
    header = next(ins.target for ins in instrs if ins.op == "bra" and ins.target < ins.pc)
    back = next(ins.pc for ins in instrs if ins.op == "bra" and ins.target < ins.pc)
    plain = build_trace(instrs, counts, 1)
    unrolled = build_trace(instrs, counts, 1, loop_unroll={header: 4.0})
    assert sum(1 for pc in unrolled.pcs if pc == back) == 8 // 4
    assert len(unrolled.redirects) == 8 // 4 - 1 < len(plain.redirects) == 8 - 1
    ops = cycle._ops(instrs, H100, costs.MODEL_CONSTANTS)
    t_plain = simulate_sm(plain, ops, _no_memory(), 1, 1).clocks
    t_unrolled = simulate_sm(unrolled, ops, _no_memory(), 1, 1).clocks
    # 6 fewer back edges: 6 bra issue slots and 6 redirects fewer (the adds and setps of the copies remain)
    assert t_plain - t_unrolled == pytest.approx(6 * (1 + BRANCH_REDIRECT_CLK), abs=LATENCY_CLK["int"])


def _no_memory():
    from ptxsim.model.cycle import _Memory

    return _Memory(0, 0, 0, 0, 0, 0, 0, 1.0, 1.0, 1.0, 1.0, 0.0)

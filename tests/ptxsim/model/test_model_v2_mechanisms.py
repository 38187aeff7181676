"""Mechanisms of model v2 (issue 29, docs/model-validation.md "Mechanisms"): (1) sass.sass_loop_issue / loop_issue:
inside a loop whose ptxas schedule is known, a warp issues at the stall counts ptxas encoded in each instruction's
control bits (Jia et al. 2018, section 2.1), plus a refetch after the taken back edge
(cycle_table.SASS_BRANCH_REFETCH_CLK); (2) the multiplied-out loop iterations ask each memory server for the service
the window's iterations asked for, and a run lasts at least its servers' busy time."""
from __future__ import annotations

import ptxsim
from ptxsim.model.cycle import estimate_v2
from ptxsim.model.cycle_table import BRANCH_REDIRECT_CLK, SASS_BRANCH_REFETCH_CLK
from ptxsim.model.cycle_trace import per_pc_counts
from ptxsim.model.devices import get_device
from ptxsim.model.occupancy import occupancy
from ptxsim.model.pair_benches import ilp_bench
from ptxsim.model.sass import loop_issue, sass_loop_issue, sass_loops

# nvdisasm -hex -c of pair_benches.ilp_bench("sin", 1) as ptxas (CUDA 12, sm_90) emitted it, cut to the loop, the
# store after it and the trap loop after EXIT (a real fixture: harness.toolchain.sass_listing(cubin,
# control_words=True)). Stall counts (bits 41-44 of each second word): UIADD3 1, FMUL.RZ 5, ISETP 1, MUFU.SIN 12,
# BRA 5.
LISTING = """
//--------------------- .text.ilp_sin_1           --------------------------
.text.ilp_sin_1:
        /*0050*/                   I2FP.F32.U32 R5, R5 ;                     /* 0x0000000500057245 */
                                                                             /* 0x002fce0000201000 */
.L_x_0:
        /*0060*/                   UIADD3 UR4, UR4, 0x1, URZ ;               /* 0x0000000104047890 */
                                                                             /* 0x000fe2000fffe03f */
        /*0070*/                   FMUL.RZ R5, R5, 0.15915493667125701904 ;  /* 0x3e22f98305057820 */
                                                                             /* 0x002fca000040c000 */
        /*0080*/                   ISETP.LE.U32.AND P0, PT, R0, UR4, PT ;    /* 0x0000000400007c0c */
                                                                             /* 0x004fe2000bf03070 */
        /*0090*/                   MUFU.SIN R5, R5 ;                         /* 0x0000000500057308 */
                                                                             /* 0x000e580000000400 */
        /*00a0*/              @!P0 BRA `(.L_x_0) ;                           /* 0xfffffffc00ec8947 */
                                                                             /* 0x000fea000383ffff */
        /*00c0*/                   STG.E desc[UR6][R2.64], R5 ;              /* 0x0000000502007986 */
                                                                             /* 0x006fe2000c101906 */
.L_x_2:
        /*00d0*/                   EXIT ;                                    /* 0x000000000000794d */
                                                                             /* 0x000fea0003800000 */
.L_x_1:
        /*00e0*/                   BRA `(.L_x_1);                            /* 0xfffffffc00fc7947 */
                                                                             /* 0x000fc0000383ffff */
"""
LOOP_STALLS = 1 + 5 + 1 + 12 + 5


def test_the_stall_counts_of_the_loop_are_read_from_the_control_words():
    (loop,) = sass_loop_issue(LISTING)["ilp_sin_1"]       # the trap loop after EXIT is not a loop
    assert loop["stall"] == LOOP_STALLS
    assert loop["classes"] == {"uniform": 1, "fp32": 1, "int": 1, "sfu": 1, "control": 1}
    # the same text without the control words (plain nvdisasm -c) gives no schedule, and sass_loops still reads it
    plain = "\n".join(line for line in LISTING.splitlines() if not line.strip().startswith("/* 0x"))
    assert sass_loop_issue(plain) == {"ilp_sin_1": []}
    assert sass_loops(LISTING) == sass_loops(plain)


def test_the_stalls_are_spread_over_the_ptx_loop_it_matches():
    bench = ilp_bench("sin", 1)
    instrs = ptxsim.load_ptx(bench.ptx).kernel(bench.entry).program.instrs
    issue = loop_issue(instrs, sass_loop_issue(LISTING)["ilp_sin_1"])
    body = sorted(issue)
    assert body == list(range(body[0], body[-1] + 1)) and instrs[body[-1]].op == "bra"
    # one PTX sin is FMUL.RZ + MUFU.SIN in SASS: the unroll counts only classes both hold (sfu 1:1), so 1, not 2
    assert {unroll for _gap, unroll in issue.values()} == {1.0}
    assert sum(gap for gap, _unroll in issue.values()) == LOOP_STALLS
    # a listing with another number of loops is not matched
    assert loop_issue(instrs, [*sass_loop_issue(LISTING)["ilp_sin_1"]] * 2) == {}


def _clocks_per_step(bench, issue_listing):
    """Model v2's clocks per loop iteration of a one-warp ILP bench, differential over its two step counts."""
    spec = get_device("H100 SXM")
    kernel = ptxsim.load_ptx(bench.ptx).kernel(bench.entry)
    out = []
    for launch in bench.launches:
        dev = ptxsim.Device()
        stats = dev.launch(kernel, 1, 32, launch.args(dev))
        est = estimate_v2(kernel.program, per_pc_counts(kernel.program, stats.per_line), stats.metrics, spec,
                          occupancy(spec, 32, 16, 0), by_warp=stats.by_warp, simulated_ctas=stats.simulated_ctas,
                          sass_loop_issue=issue_listing)
        out.append(est.details["sm_clocks"])
    steps = [launch.work for launch in bench.launches]     # ILP 1: one operation per step
    return (out[1] - out[0]) / (steps[1] - steps[0])


def test_a_one_warp_loop_issues_at_its_stall_counts_plus_the_refetch():
    bench = ilp_bench("sin", 1)
    with_schedule = _clocks_per_step(bench, sass_loop_issue(LISTING)["ilp_sin_1"])
    # the dependent chain (sin 23 clk + loop control) is shorter than ptxas's schedule: the stall counts decide
    assert abs(with_schedule - (LOOP_STALLS + SASS_BRANCH_REFETCH_CLK)) < 0.05
    # without the listing the loop runs at the class latencies and the generic redirect, as before
    without = _clocks_per_step(bench, None)
    assert abs(with_schedule - without) > 1.0 and without < LOOP_STALLS + BRANCH_REDIRECT_CLK


# --- the multiplied-out iterations ask the memory servers for what the window's iterations asked ------------------

def test_a_store_loop_is_not_extrapolated_at_its_issue_rate():
    from ptxsim.model.cycle import STORE, _Memory, _Op, simulate_sm
    from ptxsim.model.cycle_trace import Loop, Trace

    # one warp, a loop of one 512-byte store per iteration: 3 warm-up + 8 window iterations simulated, 100 more
    # multiplied out. Nothing waits for a store, so the window issues one a clock while the DRAM server (16 B/clk)
    # needs 32 clocks for each: the run lasts as long as the server takes for all 111, not 11 x 32 + 100 clocks.
    mem = _Memory(load_l2_bytes=0.0, load_dram_bytes=0.0, load_latency=500.0, store_l2_bytes=0.0,
                  store_dram_bytes=512.0, copy_l2_bytes=0.0, copy_dram_bytes=0.0, shared_wavefronts=1.0,
                  dram_rate=16.0, l2_rate=64.0, shared_rate=1.0, wgmma_shared_wavefronts=0.0)
    ops = [_Op(STORE, "lsu", 1.0, 0.0, (), ())]
    trace = Trace((0,) * 11, (Loop(3, 11, 8, 100.0, 1.0),))
    run = simulate_sm(trace, ops, mem, ctas=1, warps_per_cta=1)
    assert run.clocks >= 111 * 512 / 16
    assert run.clocks < 1.02 * 111 * 512 / 16
    assert run.busy["dram"] <= run.clocks * (1 + 1e-9)
    # four CTAs of the same warp: four times the service, not the time of one
    four = simulate_sm(trace, ops, mem, ctas=4, warps_per_cta=1)
    assert four.clocks >= 4 * 111 * 512 / 16


def test_a_sass_loop_without_the_ptx_loops_classes_is_not_its_loop():
    # ptxas can move a loop (e.g. an mbarrier retry loop, out of line after EXIT): matched in order, the k-loop's
    # PTX would get the retry loop's schedule. A pair whose one-to-one classes differ leaves the mapping unknown.
    bench = ilp_bench("sin", 1)
    instrs = ptxsim.load_ptx(bench.ptx).kernel(bench.entry).program.instrs
    retry_like = [{"stall": 30, "classes": {"control": 1, "int": 1}}]        # no MUFU: not the sin loop
    assert loop_issue(instrs, retry_like) == {}
    fma_only = [{"stall": 24, "classes": {"fp32": 1, "int": 1, "control": 1}}]
    assert loop_issue(instrs, fma_only) == {}

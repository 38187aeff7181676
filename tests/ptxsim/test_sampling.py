"""Sampled simulation by whole waves (ptxsim.launch.plan_waves): which CTAs run, what is extrapolated, what is kept."""
import numpy as np
import pytest
from ptxkit import kernel

import ptxsim
from ptxsim.launch import DEFAULT_WAVE_CTAS, plan_waves

pytestmark = pytest.mark.sim

# CTA c reads the 128-byte slice a[(c // 8) * 32 + tid] (CTAs 8k..8k+7 share it: a wave of 8 reads it once) and
# writes c[global thread] = that value + 1.
GROUPED = ("mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; shr.u32 %r2, %r2, 3; mad.lo.u32 %r3, %r2, 32, %r1;\n"
           "mul.wide.u32 %rd15, %r3, 4; add.s64 %rd16, %rd1, %rd15; ld.global.u32 %r4, [%rd16];\n"
           "add.u32 %r4, %r4, 1; st.global.u32 [%rd9], %r4;")
GRID = 64


def _run(out, **kw):
    a = np.arange(GRID // 8 * 32, dtype=np.uint32)
    return ptxsim.launch(kernel(GROUPED), GRID, 32, [a, np.zeros(1, np.uint32), out, np.zeros(1, np.uint32)], **kw)


def test_plan_takes_whole_waves_from_the_middle_of_equal_strata():
    plan = plan_waves(1000, 300, 100)
    assert plan.total_waves == 10 and plan.waves == (1, 5, 8) and plan.simulated_ctas == 300
    assert plan_waves(1000, 10, 100).waves == (5,)  # at least one wave, never a partial one
    assert plan_waves(1000, 2000, 100).simulated_ctas == 1000  # asking for more than the grid runs all of it
    assert plan_waves(10_000, 16, None).wave_ctas == DEFAULT_WAVE_CTAS
    batches = list(plan_waves(1000, 300, 100).batches(64))
    assert all(len({int(i) // 100 for i in ids}) == 1 for _, ids in batches)  # a batch never straddles two waves
    assert [w for w, _ in batches] == [1, 1, 5, 5, 8, 8]


def test_wave_sampling_keeps_the_reuse_scattered_sampling_loses():
    full = _run(np.zeros(GRID * 32, np.uint32))
    assert full.metrics["dram__bytes_read.sum"] == GRID // 8 * 128  # each group's slice once
    out = np.zeros(GRID * 32, np.uint32)
    waves = _run(out, sample_ctas=16, wave_ctas=8)
    assert waves.waves == {"wave_ctas": 8, "total_waves": 8, "simulated_waves": 2} and waves.simulated_ctas == 16
    assert waves.metrics["dram__bytes_read.sum"] == full.metrics["dram__bytes_read.sum"]
    scattered = _run(np.zeros(GRID * 32, np.uint32), sample_ctas=16, wave_ctas=1)
    assert scattered.metrics["dram__bytes_read.sum"] == 4 * full.metrics["dram__bytes_read.sum"]
    ran = np.flatnonzero(out.reshape(GRID, 32).any(axis=1))
    assert ran.tolist() == list(range(16, 24)) + list(range(48, 56))  # waves 2 and 6, whole


def test_simulated_counters_are_exact_and_extrapolated_ones_scaled():
    full = _run(np.zeros(GRID * 32, np.uint32))
    s = _run(np.zeros(GRID * 32, np.uint32), sample_ctas=16, wave_ctas=8)
    per_cta = full.metrics["smsp__inst_executed.sum"] / GRID  # every CTA runs the same straight-line code
    assert s.simulated_metrics["smsp__inst_executed.sum"] == 16 * per_cta
    assert s.simulated_metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] == 16 * 4
    assert s.simulated_metrics["dram__bytes_read.sum"] == 2 * 128
    assert s.metrics["smsp__inst_executed.sum"] == full.metrics["smsp__inst_executed.sum"]
    assert s.metrics["dram__bytes_write.sum"] == full.metrics["dram__bytes_write.sum"]
    assert full.simulated_metrics == full.metrics


def test_l2_capacity_ages_data_between_waves():
    # every wave re-reads slice 0 too: with an L2 too small to keep a wave, the re-reads go to DRAM again
    body = GROUPED.replace("ld.global.u32 %r4, [%rd16];", "ld.global.u32 %r4, [%rd16];\n"
                           "mul.wide.u32 %rd17, %r1, 4; add.s64 %rd18, %rd1, %rd17; ld.global.u32 %r5, [%rd18];")
    a = np.arange(GRID // 8 * 32, dtype=np.uint32)
    args = [a, np.zeros(1, np.uint32), np.zeros(GRID * 32, np.uint32), np.zeros(1, np.uint32)]
    big = ptxsim.launch(kernel(body), GRID, 32, args, wave_ctas=8, l2_bytes=1 << 20)
    tiny = ptxsim.launch(kernel(body), GRID, 32, args, wave_ctas=8, l2_bytes=128)
    assert big.metrics["dram__bytes_read.sum"] == 8 * 128
    assert tiny.metrics["dram__bytes_read.sum"] == 8 * 128 + 7 * 128  # slice 0 again in waves 1..7


@pytest.mark.parametrize("kw, msg", [({"wave_ctas": 0}, "wave_ctas must be a positive integer, got 0"),
                                     ({"l2_bytes": True}, "l2_bytes must be a positive integer, got True")])
def test_bad_wave_options_are_launch_errors(kw, msg):
    with pytest.raises(ptxsim.LaunchError, match=msg):
        _run(np.zeros(GRID * 32, np.uint32), **kw)


# GROUPED, but CTAs 40.. exit at once: a grid whose tail does no work (a grouped GEMM's padding blocks)
TAILED = ("mov.u32 %r2, %ctaid.x; setp.ge.u32 %p1, %r2, 40; @%p1 ret;\n" + GROUPED)


def _run_tailed(out, **kw):
    a = np.arange(GRID // 8 * 32, dtype=np.uint32)
    return ptxsim.launch(kernel(TAILED), GRID, 32, [a, np.zeros(1, np.uint32), out, np.zeros(1, np.uint32)], **kw)


def test_stratified_waves_weigh_each_stratum_by_the_ctas_it_stands_for():
    full = _run_tailed(np.zeros(GRID * 32, np.uint32), wave_ctas=8)
    # waves 0-4 live, 5-7 the tail: one wave of each, weighted 5 and 3
    out = np.zeros(GRID * 32, np.uint32)
    s = _run_tailed(out, wave_ctas=8, sample_ranges=[(16, 24, 5), (48, 56, 3)])
    for k in ("smsp__inst_executed.sum", "smsp__thread_inst_executed.sum", "dram__bytes_read.sum",
              "dram__bytes_write.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"):
        assert s.metrics[k] == full.metrics[k], k
    assert s.simulated_ctas == 16 and s.sample_fraction == 16 / GRID
    assert s.simulated_metrics["dram__bytes_write.sum"] == 8 * 32 * 4  # wave 2's stores only: counted, not weighed
    assert sum(v["inst_executed"] for v in s.per_line.values()) == full.metrics["smsp__inst_executed.sum"]
    assert np.flatnonzero(out.reshape(GRID, 32).any(axis=1)).tolist() == list(range(16, 24))
    # the same two waves weighted alike (sample_ctas) count the tail's waves as live: the bias strata remove
    uniform = _run_tailed(np.zeros(GRID * 32, np.uint32), wave_ctas=8, sample_ctas=16)
    assert uniform.metrics["smsp__inst_executed.sum"] != full.metrics["smsp__inst_executed.sum"]


@pytest.mark.parametrize("kw, msg", [
    ({"sample_ranges": [(16, 24, 5), (48, 56, 2)]}, "stand for 56 CTAs; the grid has 64"),
    ({"sample_ranges": [(60, 72, 8)]}, r"\(60, 72\) is not a range of the grid's 64 CTAs"),
    ({"sample_ranges": [(16, 24, 4), (20, 28, 4)]}, r"\(20, 28\) is not a range .* ascending and disjoint"),
    ({"sample_ranges": [(0, 8, 0.5), (8, 16, 7.5)]}, r"\(0, 8\) has weight 0.5"),
    ({"sample_ranges": []}, "sample_ranges is empty"),
    ({"sample_ranges": [(16, 24, 8)], "sample_ctas": 8}, "excludes sample_ctas and phases"),
])
def test_bad_stratified_samples_are_launch_errors(kw, msg):
    with pytest.raises(ptxsim.LaunchError, match=msg):
        _run_tailed(np.zeros(GRID * 32, np.uint32), wave_ctas=8, **kw)


def test_stratified_ranges_need_not_be_whole_waves():
    """Ranges of any length (a grouped GEMM's runs of one expert's blocks): 12 live CTAs standing for 40, 4 of the
    tail for 24; the L2 sees one wave per range."""
    full = _run_tailed(np.zeros(GRID * 32, np.uint32), wave_ctas=8)
    s = _run_tailed(np.zeros(GRID * 32, np.uint32), wave_ctas=8, sample_ranges=[(8, 20, 40 / 12), (50, 54, 6)])
    for k in ("smsp__inst_executed.sum", "dram__bytes_write.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"):
        assert s.metrics[k] == pytest.approx(full.metrics[k], rel=1e-12), k
    assert s.simulated_ctas == 16 and s.waves["simulated_waves"] == 2


def test_a_plan_value_runs_what_its_keywords_run():
    """launch(plan=LaunchPlan(...)) is the keywords of the same names, for a systematic and a stratified sample."""
    stratified = {"sample_ranges": ((16, 24, 5.0), (48, 56, 3.0)), "wave_ctas": 8}
    for fields in ({"sample_ctas": 16, "wave_ctas": 8}, stratified):
        by_kw_out, by_plan_out = np.zeros(GRID * 32, np.uint32), np.zeros(GRID * 32, np.uint32)
        by_kw = _run_tailed(by_kw_out, **{k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()})
        by_plan = _run_tailed(by_plan_out, plan=ptxsim.LaunchPlan(**fields))
        assert by_plan.metrics == by_kw.metrics and by_plan.waves == by_kw.waves, fields
        assert np.array_equal(by_plan_out, by_kw_out) and by_plan_out.any()


def test_a_plan_and_a_keyword_it_sets_are_refused_together():
    with pytest.raises(ptxsim.LaunchError, match="also given: wave_ctas"):
        _run(np.zeros(GRID * 32, np.uint32), plan=ptxsim.LaunchPlan(sample_ctas=16), wave_ctas=8)
    with pytest.raises(ptxsim.LaunchError, match="expected a ptxsim.plan.LaunchPlan"):
        _run(np.zeros(GRID * 32, np.uint32), plan={"sample_ctas": 16})

"""harness/sampling.py: which launches a sim row simulates in part (--sample auto|off|N)."""
from dataclasses import replace

import numpy as np
import pytest

from contract.device import LiveRows
from contract.presets import get_preset
from harness.errors import InputError
from harness.sampling import AUTO_MIN_CTAS, AUTO_UNMARKED_WAVES, AUTO_WAVES, SamplePolicy, long_runs, parse_sample


def test_parse_auto_off_and_a_number():
    assert parse_sample(None) == parse_sample("auto") == SamplePolicy(AUTO_WAVES, AUTO_MIN_CTAS, "auto",
                                                                      unmarked_waves=AUTO_UNMARKED_WAVES)
    assert parse_sample("off").off and parse_sample(" OFF ").text == "off"
    assert parse_sample("3").waves == 3 and parse_sample(3).text == "3"
    # @C: launches up to C CTAs run whole (the gemm_table benchmark's auto@0 samples every routed launch)
    assert parse_sample("auto@0") == SamplePolicy(AUTO_WAVES, 0, "auto@0", unmarked_waves=AUTO_UNMARKED_WAVES)
    assert parse_sample("3@100").min_ctas == 100 and parse_sample("3@100").text == "3@100"


@pytest.mark.parametrize("bad", ["0", "-2", "many", "1.5", "", "auto@", "auto@-1", "off@0", "0@5"])
def test_a_bad_value_names_itself_and_the_choices(bad):
    with pytest.raises(InputError, match=rf"--sample '{bad}'.*auto, off, or a positive number of waves"):
        parse_sample(bad)


def test_only_big_gemm_launches_sample_whole_grid_rows():
    policy = SamplePolicy(6, 4096, rows_per_wave=2)
    assert policy.launch_plan("plain", (10_000, 1, 1)).ptxsim_options() == {}  # elementwise kernels run whole
    assert policy.launch_plan("rows", (8, 95, 1)).ptxsim_options() == {}  # small's GEMM: 760 CTAs, whole
    big = policy.launch_plan("rows", (64, 304, 1)).ptxsim_options()
    assert big == {"sample_ctas": 64 * 6 * 2, "wave_ctas": 64 * 2}  # 6 waves of 2 grid rows each
    assert policy.sampled_fraction((64, 304, 1)) == pytest.approx(12 / 304)
    assert policy.launch_plan("rows", (64, 12, 1)).ptxsim_options() == {}  # asking for every row runs the grid whole
    assert SamplePolicy(None).launch_plan("rows", (64, 304, 1)).ptxsim_options() == {}


def test_waves_hold_about_one_experts_routing_blocks():
    assert SamplePolicy(6).for_preset(get_preset("dsv3-decode")).rows_per_wave == 1  # 304 blocks, 256 experts
    assert SamplePolicy(6).for_preset(get_preset("dsv3-prefill")).rows_per_wave == 3  # 764 blocks
    assert SamplePolicy(6).for_preset(get_preset("small")).rows_per_wave == 3


def test_the_layers_up_and_down_gemms_sample_the_same_routing_blocks():
    """Different column tiles (64 vs 112 per row), same row blocks: the same grid rows run, so the down GEMM reads
    rows of the swiglu output that the up GEMM's simulated CTAs produced."""
    from ptxsim.launch import plan_waves

    policy = SamplePolicy(6, 4096).for_preset(get_preset("dsv3-prefill"))
    rows = []
    for gx in (64, 112):
        opts = policy.launch_plan("rows", (gx, 764, 1)).ptxsim_options()
        plan = plan_waves(gx * 764, opts["sample_ctas"], opts["wave_ctas"])
        ctas = [int(c) for _, ids in plan.batches(10_000) for c in ids]
        assert len(ctas) == gx * 18  # 6 waves of 3 whole grid rows
        rows.append(sorted({c // gx for c in ctas}))
    assert rows[0] == rows[1] and len(rows[0]) == 18


def _experts(run_lengths, rows: int) -> np.ndarray:
    """Experts per row: run i of run_lengths[i] rows is expert i; -1 after them (past total_padded)."""
    out = np.full(rows, -1, np.int64)
    out[: sum(run_lengths)] = np.repeat(np.arange(len(run_lengths)), run_lengths)
    return out


def test_runs_of_one_expert_and_the_dead_tail_are_separate_strata():
    """With each row's expert known (a LiveRows), `waves` runs of one expert's rows (so a sampled run reads its
    expert's weights once, as the device's blocks of that expert do), weighted by the live rows over theirs, and the
    tail's middle rows_per_wave rows, weighted by the tail's rows over theirs."""
    policy = SamplePolicy(2, 4096, rows_per_wave=3)
    experts = _experts([3, 2, 4, 3, 3, 2, 4, 3, 3, 2, 4, 3, 3, 2, 4, 3, 3, 2, 4, 3, 3, 2, 4, 3], 100)  # 72 live
    plan = policy.launch_plan("rows", (64, 100, 1), experts)
    opts = plan.ptxsim_options()
    # mean run 3 rows: runs 7 ([21, 24)) and 19 ([57, 60)), the 3-row runs nearest the middles 6 and 18: 6 rows for
    # 72; the tail's middle 3 of its 28 rows
    assert opts == {"sample_ranges": [(21 * 64, 24 * 64, 12.0), (57 * 64, 60 * 64, 12.0),
                                      (84 * 64, 87 * 64, 28 / 3)], "wave_ctas": 64 * 3}
    assert plan.simulated_ctas((64, 100, 1)) == 9 * 64
    assert policy.sampled_fraction((64, 100, 1), experts=experts) == pytest.approx(9 / 100)
    # no tail: only runs (of 3 rows: whole; of 33, long_runs: each chosen run's head and body); nothing live: the
    # tail's rows alone
    assert policy.launch_plan("rows", (512, 9, 1), _experts([3] * 3, 9)).ptxsim_options()["sample_ranges"] == [
        (0, 3 * 512, 1.5), (6 * 512, 9 * 512, 1.5)]
    assert policy.launch_plan("rows", (64, 99, 1), _experts([33] * 3, 99)).ptxsim_options()["sample_ranges"] == [
        (0, 64, 1.5), (64, 128, 48.0), (66 * 64, 67 * 64, 1.5), (67 * 64, 68 * 64, 48.0)]
    assert policy.launch_plan("rows", (64, 99, 1), _experts([], 99)).sample_ranges == ((48 * 64, 51 * 64, 33.0),)
    # the same launch without experts: systematic, the unmarked strata (here `waves`: 2)
    assert policy.launch_plan("rows", (64, 100, 1)).ptxsim_options() == {"sample_ctas": 64 * 6, "wave_ctas": 64 * 3}
    assert policy.launch_plan("rows", (64, 9, 1), _experts([3, 2], 9)).ptxsim_options() == {}  # every row anyway: whole


@pytest.mark.parametrize("seed", range(3))
def test_strata_weights_always_stand_for_the_whole_grid(seed):
    """ptxsim refuses weights whose CTAs do not add up to the grid: random runs of experts and tails all pass, and
    every sampled live range is whole runs of one expert."""
    from ptxsim.launch import _stratified_plan

    rng = np.random.default_rng(seed)
    print("seed", seed)
    for _ in range(200):
        rows, per, waves = int(rng.integers(1, 400)), int(rng.integers(1, 5)), int(rng.integers(1, 7))
        width = int(rng.integers(1, 80))
        runs = list(rng.integers(1, 6, size=int(rng.integers(0, 100))))
        while sum(runs) > rows:
            runs.pop()
        experts = _experts(runs, rows)
        policy = SamplePolicy(waves, 0, rows_per_wave=per)
        opts = policy.launch_plan("rows", (width, rows, 1), experts).ptxsim_options()
        if opts:
            plan, weights = _stratified_plan(width * rows, opts["sample_ranges"], opts["wave_ctas"], 1, None)
            assert plan.simulated_ctas < width * rows and all(w >= 1 for w in weights.values())
            starts = np.cumsum([0] + runs[:-1]).tolist()
            for a, b, _ in opts["sample_ranges"]:
                first, end = a // width, b // width
                if experts[first] >= 0 and long_runs(list(zip(starts, np.cumsum(runs).tolist(), strict=True))):
                    assert end == first + 1 and (first in starts or first - 1 in starts)  # a run's head or body
                elif experts[first] >= 0:  # a live range: whole runs, one expert
                    assert len(set(experts[first:end])) == 1
                    assert first == 0 or experts[first - 1] != experts[first]
                    assert end == rows or experts[end] != experts[first]


@pytest.mark.parametrize("runs, tail", [([128] * 4, 0), ([16] * 8, 0), ([8, 12, 9, 30, 8], 7), ([64], 3)])
def test_long_runs_sample_each_chosen_runs_head_and_the_block_after_it(runs, tail):
    """Runs of at least LONG_RUN_GROUPS rows (a GEMM shape's groups: 4 x 8192 rows are 4 runs of 128 blocks) are not
    simulated whole: each of `waves` runs gives its first row (cold: it reads the expert's weights) and the next
    (warm, the next L2 wave), the heads weighted for every run's head, the bodies for the other live rows; the
    weights stand for the whole grid (ptxsim checks), the bodies directly follow their heads."""
    from harness.sampling import LONG_RUN_GROUPS
    from ptxsim.launch import _stratified_plan

    assert min(runs) >= LONG_RUN_GROUPS
    rows, width, live = sum(runs) + tail, 32, sum(runs)
    plan = SamplePolicy(2, 0, rows_per_wave=runs[0]).launch_plan("rows", (width, rows, 1), _experts(runs, rows))
    ranges = list(plan.sample_ranges)
    _stratified_plan(width * rows, ranges, plan.wave_ctas, 1, None)  # raises unless the weights add up to the grid
    live_ranges = [(a // width, b // width, w) for a, b, w in ranges if a // width < live]
    starts = set(np.cumsum([0] + runs[:-1]).tolist())
    k = min(2, len(runs))
    assert len(live_ranges) == 2 * k
    for (h0, h1, hw), (b0, b1, bw) in zip(live_ranges[::2], live_ranges[1::2], strict=True):
        assert h0 in starts and (h1, b0, b1) == (h0 + 1, h0 + 1, h0 + 2)
        assert hw == pytest.approx(len(runs) / k) and bw == pytest.approx((live - len(runs)) / k)
    assert len(ranges) == 2 * k + (1 if tail else 0)


def test_a_run_shorter_than_long_run_groups_keeps_every_chosen_run_whole():
    """One short run among long ones (dsv3-prefill's routed runs are 1-21 blocks): the whole-run sample, unchanged."""
    from harness.sampling import LONG_RUN_GROUPS

    runs = [40, LONG_RUN_GROUPS - 1, 40, 40]
    plan = SamplePolicy(2, 0, rows_per_wave=30).launch_plan("rows", (8, sum(runs), 1), _experts(runs, sum(runs)))
    experts = _experts(runs, sum(runs))
    for a, b, _ in plan.sample_ranges:
        first, end = a // 8, b // 8
        assert len(set(experts[first:end])) == 1 and (first == 0 or experts[first - 1] != experts[first])
        assert end == sum(runs) or experts[end] != experts[first]


def test_long_runs_of_a_persistent_kernel_sample_a_head_group_and_the_next():
    """A persistent launch (WorkItems) over long runs: each chosen run's first group of items and the next, whole
    groups, in consecutive L2 waves, the weighted items adding up to the launch's items (every block live)."""
    from contract.device import WorkItems

    blocks, per_group, nt = 512, 2, 32  # contiguous 4 x 8192 at BM = 64: 128-row token tiles of 2 blocks, 32 N tiles
    items = WorkItems(blocks // per_group * nt, blocks, per_group, nt)
    experts = np.repeat(np.arange(4), 128)
    windows = SamplePolicy(2, 4096, rows_per_wave=128).stratified_windows(items, experts)
    assert [(w.begin, w.end) for w in windows] == [(2048, 2080), (2080, 2112), (6144, 6176), (6176, 6208)]
    assert windows[1].wave == windows[0].wave + 1 and windows[3].wave == windows[2].wave + 1
    assert sum(w.weight * (w.end - w.begin) for w in windows) == pytest.approx(items.count)
    assert [w.weight for w in windows] == pytest.approx([2.0, 126.0, 2.0, 126.0])
    assert SamplePolicy(2, 4096, rows_per_wave=128).sampled_fraction((132, 1, 1), "items", items, experts
                                                                      ) == pytest.approx(128 / 8192)


def test_a_sampled_launch_gets_a_budget_for_its_ctas(monkeypatch):
    """ptxsim's runaway budget is per launch; six sampled waves of a dsv3-prefill GEMM exceed the default, so the sim
    backend raises it in proportion to the CTAs simulated (the wall-clock limit still applies)."""
    from harness.backends.sim import SAMPLED_BUDGET_PER_CTA, SimBackend
    from ptxsim.config import CONFIG

    seen = []

    class Device:  # records the launch plan the backend passes
        def launch(self, kernel, grid, block, params, shared_bytes=0, plan=None, **kw):
            assert not {"sample_ctas", "budget", "wave_ctas"} & kw.keys()  # the sampling travels as the one plan
            seen.append(plan)

    sim = SimBackend(device=Device(), sample=SamplePolicy(6, 4096, rows_per_wave=3))
    monkeypatch.setattr(sim, "module", lambda ptx: type("M", (), {"kernel": lambda self, e: None})())
    monkeypatch.setattr("harness.backends.sim.wave_shape", lambda *a: {})
    monkeypatch.setattr(sim, "row_experts", lambda params, tag, rows: None)  # experts unknown: systematic
    routed = LiveRows((1,), np.dtype(np.int32), 0x1000)  # the launch declares its grid rows routing blocks
    sim.launch_ptx("", "k", (64, 764, 1), 128, [routed], tag="k")
    sim.launch_ptx("", "k", (4096, 1, 1), 128, [], tag="k")  # a plain grid: whole
    assert seen[0].sample_ctas == 64 * 18
    assert seen[0].budget == max(CONFIG.budget, 64 * 18 * SAMPLED_BUDGET_PER_CTA) > CONFIG.budget
    assert seen[1].budget is None and seen[1].sample_ctas is None and seen[1].whole


def test_a_persistent_gemm_at_dsv3_is_refused_with_the_reason_not_simulated_for_hours():
    """A one-row grid with fewer CTAs than routing blocks (PTX rungs 4-5: one CTA per SM looping over tiles) cannot
    be sampled by grid rows: at dsv3 the row is skipped naming the flags that help; at small it runs whole; with
    --sample off it runs whole anyway; a non-persistent GEMM at dsv3 is still sampled."""
    from contract.presets import get_preset
    from harness.errors import TooSlowToSimulate
    from harness.sampling import parse_sample

    auto = parse_sample("auto")
    decode = auto.for_preset(get_preset("dsv3-decode"))
    with pytest.raises(TooSlowToSimulate, match=r"grouped_gemm_fp8_ws.*132 CTAs.*304 routing blocks.*--backend gpu"):
        decode.launch_plan("rows", (132, 1, 1), name="grouped_gemm_fp8_ws")
    assert auto.for_preset(get_preset("small")).launch_plan("rows", (132, 1, 1)).ptxsim_options() == {}
    assert parse_sample("off").for_preset(get_preset("dsv3-decode")).launch_plan("rows", (132, 1, 1)).whole
    assert decode.launch_plan("rows", (64, 304, 1)).ptxsim_options()["sample_ctas"] > 0
    assert decode.launch_plan("plain", (132, 1, 1)).ptxsim_options() == {}  # a plain grid


def _grid_rows(policy, blocks: int, cols: int = 64) -> list[int]:
    """The grid rows (routing blocks) grid-row sampling simulates for a (cols, blocks) GEMM grid."""
    from ptxsim.launch import plan_waves

    opts = policy.launch_plan("rows", (cols, blocks, 1)).ptxsim_options()
    plan = plan_waves(cols * blocks, opts["sample_ctas"], opts["wave_ctas"])
    return sorted({int(c) // cols for _, ids in plan.batches(1 << 20) for c in ids})


def _blocks(windows, per_block: int) -> list[int]:
    return sorted({i // per_block for _, begin, end in windows for i in range(begin, end)})


@pytest.mark.parametrize("preset", ["dsv3-decode", "dsv3-prefill"])
def test_persistent_windows_are_the_routing_blocks_grid_rows_sample(preset):
    """Rung 4 (an item inside one block): the windows hold exactly the items of the blocks a grid path's sampled GEMM
    runs, at every N (up and down differ in N tiles), so the fp8 layer's up and down GEMMs sample the same blocks."""
    from contract.device import WorkItems

    p = get_preset(preset)
    policy = parse_sample("auto").for_preset(p)
    rows = _grid_rows(policy, p.n_blocks)
    for nt in (2 * p.I // 128, p.H // 128):  # up, down
        windows = policy.work_windows(WorkItems(p.n_blocks * nt, p.n_blocks, 1, nt))
        assert len(windows) == AUTO_UNMARKED_WAVES and _blocks(windows, nt) == rows
        assert all(begin % nt == 0 and end % nt == 0 for _, begin, end in windows)  # whole blocks: every N tile
        assert policy.sampled_fraction((132, 1, 1), "items", WorkItems(p.n_blocks * nt, p.n_blocks, 1, nt)
                                       ) == pytest.approx(len(rows) / p.n_blocks)
    waves = [w for w, _, _ in windows]
    assert waves == sorted(set(waves)) and waves == sorted({r // policy.rows_per_wave for r in rows})


def test_rung5_pair_windows_widen_to_whole_pairs_without_overlap():
    """Rung 5 at BM = T: a pair item spans blocks 2p and 2p + 1, so each window grows to whole pairs (dsv3-decode's
    one-block waves become two blocks) and up and down still sample the same blocks; windows that the widening
    makes overlap are trimmed, so no item runs twice."""
    from contract.device import WorkItems

    p = get_preset("dsv3-decode")
    policy = parse_sample("auto").for_preset(p)
    rows = _grid_rows(policy, p.n_blocks)
    got = []
    for nt in (32, 56):  # up, down
        windows = policy.work_windows(WorkItems(-(-p.n_blocks // 2) * nt, p.n_blocks, 2, nt))
        pairs = sorted({i // nt for _, begin, end in windows for i in range(begin, end)})
        assert sorted({2 * q + r for q in pairs for r in (0, 1)}) == sorted({r // 2 * 2 + k for r in rows
                                                                            for k in (0, 1)})
        got.append(pairs)
    assert got[0] == got[1] and len(got[0]) == len(rows)
    # 3-block waves over pairs: waves 4 and 5 both reach pair 7; the second window starts after it
    windows = SamplePolicy(6, 0, rows_per_wave=3).work_windows(WorkItems(15, 30, 2, 1))
    assert windows == ((0, 0, 2), (2, 3, 5), (4, 6, 8), (5, 8, 9), (7, 10, 12), (9, 13, 15))


def test_persistent_windows_only_where_grid_sampling_would_sample():
    from contract.device import WorkItems

    auto = parse_sample("auto")
    small = get_preset("small")
    assert auto.for_preset(small).work_windows(WorkItems(760, 95, 1, 8)) == ()  # <= min_ctas
    forced = SamplePolicy(6, 100).for_preset(small)
    assert len(forced.work_windows(WorkItems(760, 95, 1, 8))) == 6
    assert parse_sample("off").work_windows(WorkItems(10**6, 304, 1, 8)) == ()
    assert SamplePolicy(6, 0, rows_per_wave=20).work_windows(WorkItems(960, 120, 1, 8)) == ()  # every block
    assert forced.sampled_fraction((132, 1, 1), "items", WorkItems(760, 95, 1, 8)) == pytest.approx(18 / 95)


def test_the_threshold_counts_work_not_items_so_few_large_items_sample_like_many_small():
    """dsv3-decode's up GEMM (304 blocks, N = 4096): rung 10's 4,864 items of (block, 256 columns) and rung 11's 2,432
    of (block, 512 columns) are the same 9,728 block x 128-column tiles of work: both are sampled under auto, over
    the same routing blocks, though rung 11's item count is under AUTO_MIN_CTAS; a launch of little work in few
    items still runs whole, and one whose work is at the threshold too."""
    from contract.device import WorkItems
    from harness.sampling import AUTO_MIN_CTAS
    from ptx_impl import gemm_fp8_r10, gemm_fp8_r11

    p = get_preset("dsv3-decode")
    policy = parse_sample("auto").for_preset(p)
    sizes = (p.P_max, p.H, 2 * p.I, p.BM, p.E)
    r10, r11 = gemm_fp8_r10.work_items(sizes), gemm_fp8_r11.work_items(sizes)
    assert r11.count == r10.count // 2 < AUTO_MIN_CTAS < r10.count and r10.work_tiles == r11.work_tiles == 304 * 32
    experts = _experts([1, 2, 1] * 40, p.n_blocks)
    w10, w11 = policy.stratified_windows(r10, experts), policy.stratified_windows(r11, experts)
    assert w11 and len(w10) == len(w11)
    blocks = [[(b // it.items_per_group, -(-e // it.items_per_group)) for _, b, e, _ in w] for it, w in
              ((r10, w10), (r11, w11))]
    assert blocks[0] == blocks[1]  # the same groups of routing blocks, whichever item size
    assert sum(e - b for _, b, e, _ in w11) < r11.count  # sampled, not whole
    assert policy.work_windows(r11) and policy.sampled_fraction((132, 1, 1), "items", r11) < 1.0
    assert policy.work_windows(WorkItems(100, 50, 1, 2, AUTO_MIN_CTAS)) == ()  # work at the threshold: whole
    assert policy.work_windows(WorkItems(100, 50, 1, 2, AUTO_MIN_CTAS + 1))  # one tile over: sampled
    assert WorkItems(100, 50).work_tiles == 100  # no tiles given: one an item


def test_work_items_map_blocks_to_item_ranges_and_flatten_to_the_whole_work():
    from contract.device import WorkItems
    from contract.errors import InputError as ContractInputError
    from harness.backends.base import flatten_work_items

    r4 = WorkItems(304 * 32, 304, 1, 32)
    assert r4.items_of(5, 7) == (160, 224) and r4.items_per_group == 32
    r5 = WorkItems(5 * 32, 9, 2, 32)  # 9 one-tile blocks: 5 pairs, the last half dead
    assert r5.items_of(2, 3) == (32, 64) and r5.items_of(8, 9) == (128, 160) and r5.items_of(3, 6) == (32, 96)
    assert WorkItems(12, 4).items_per_group == 3  # derived: count * blocks_per_group // blocks
    flat = flatten_work_items([np.uint32(7), r4])
    assert flat == [7, 0, 304 * 32] and all(isinstance(v, np.uint32) for v in flat)
    with pytest.raises(ContractInputError, match=r"WorkItems.blocks = 0: expected a positive int"):
        WorkItems(5, 0)


def test_persistent_windows_are_pair_aligned_segments_of_whole_runs():
    """Rung 5 at dsv3-decode (pair items, two blocks a group): the live windows are segments of whole runs that start
    and end on a pair (else a pair would take in one block of the neighbouring expert and read all its weights for
    it), chosen together for the mean blocks per expert, and the tail's middle pair; each weighs its stratum."""
    from contract.device import WorkItems

    p = get_preset("dsv3-decode")
    policy = parse_sample("auto").for_preset(p)
    experts = _experts([1, 2] * 67 + [1], p.n_blocks)  # 202 live blocks in 135 runs: [0,1) [1,3) [3,4) [4,6) ...
    items = WorkItems(-(-p.n_blocks // 2) * 32, p.n_blocks, 2, 32)
    windows = policy.stratified_windows(items, experts)
    # aligned segments: runs 4q..4q+2 (3 experts, 4 blocks) and run 4q+3 (1 expert, 2 blocks); mean 1.5 blocks an
    # expert: 2 or 3 experts cannot have it (4 blocks: +33 %; no 2-expert segment), 4 experts in 6 blocks do: the
    # 2-block run 31 [46, 48) near part 0's middle (run 33) and runs 100-102 [150, 154) at part 1's (run 101)
    assert [(b // 32, e // 32) for _, b, e, _ in windows] == [(23, 24), (75, 77), (126, 127)]
    assert [x for *_, x in windows] == [101 / 3] * 2 + [51.0]  # 101 live pairs for 3; 51 of the tail for 1
    assert [w for w, *_ in windows] == [46, 150, 252]
    # runs of 3 blocks: every aligned segment is two runs; one such segment (6 blocks, the mean ratio) stands for
    # waves = 2, where growing each of two runs to whole pairs took 12 blocks of 4 experts
    threes = policy.row_strata(_experts([3] * 67, p.n_blocks), p.n_blocks, 2)
    assert threes[0][:2] == (48, 54) and threes[0][2] == 201 / 6 and threes[1][0] >= 201


def _prefill_like(seed: int, runs: int = 214) -> list[int]:
    """Run lengths as dsv3-prefill's balanced routing has them (BM = 64: 1-6 blocks, mostly 2-3, mean ~3)."""
    rng = np.random.default_rng(seed)
    return [int(n) for n in rng.choice([1, 2, 3, 4, 5, 6], size=runs, p=[0.1, 0.3, 0.3, 0.15, 0.1, 0.05])]


@pytest.mark.parametrize(("seed", "waves"), [(0, AUTO_WAVES), (1, AUTO_WAVES), (2, AUTO_WAVES), (3, AUTO_WAVES),
                                             (0, 6), (1, 6)])
def test_pair_windows_do_not_double_on_a_prefill_like_routing(seed, waves):
    """Rung 5's live windows at dsv3-prefill's shape: pair-aligned, whole runs, about `waves` experts in about
    waves x the mean run length blocks (at most 1.5x: growing each chosen run to whole pairs took 2x), their blocks
    per expert within RATIO_TOLERANCE of the mean, and weighted to stand for every live block; --sample 6 too."""
    from harness.sampling import RATIO_TOLERANCE

    p = get_preset("dsv3-prefill")
    policy = replace(parse_sample("auto"), waves=waves).for_preset(p)
    lengths = _prefill_like(seed)
    live = sum(lengths)
    mean = live / len(lengths)
    experts = _experts(lengths, p.n_blocks + live)
    picks = [(a, b, x) for a, b, x in policy.row_strata(experts, len(experts), 2) if a < live]
    held = sum(b - a for a, b, _ in picks)
    held_experts = sum(len(set(experts[a:b])) for a, b, _ in picks)
    assert held <= 1.5 * waves * mean and waves <= held_experts <= waves + 1
    assert abs(held / held_experts / mean - 1) <= RATIO_TOLERANCE
    for a, b, x in picks:
        assert a % 2 == 0 and (b % 2 == 0 or b == live) and x == live / held
        assert (a == 0 or experts[a - 1] != experts[a]) and experts[b] != experts[b - 1]  # whole runs


def test_pair_windows_come_as_near_waves_as_they_can_where_waves_is_out_of_reach():
    """--sample 100 over 214 runs (parts of 2-3 runs, many without an aligned segment inside): not 100 experts, but
    as many as the parts allow (75), not the fewest within RATIO_TOLERANCE (2)."""
    lengths = _prefill_like(0)
    live = sum(lengths)
    experts = _experts(lengths, live + 1)
    picks = [(a, b) for a, b, _ in SamplePolicy(100, 0).row_strata(experts, live + 1, 2) if a < live]
    held_experts = sum(len(set(experts[a:b])) for a, b in picks)
    assert 50 <= held_experts < 100 and len(picks) >= 40


def test_pair_windows_are_aligned_whole_runs_on_any_routing():
    """Random runs, tails and waves: every live pick starts on an even block, ends on one or at the last live block,
    holds whole runs, the picks are disjoint and ascending, and each weighs the live blocks over those held."""
    rng = np.random.default_rng(5)
    for _ in range(300):
        rows, waves = int(rng.integers(1, 300)), int(rng.integers(1, 6))
        runs = list(rng.integers(1, 7, size=int(rng.integers(1, 120))))
        while sum(runs) > rows:
            runs.pop()
        experts, live = _experts(runs, rows + 1), sum(runs)  # one dead row at least: experts[end] exists
        picks = [(a, b, x) for a, b, x in SamplePolicy(waves, 0).row_strata(experts, rows, 2) if a < live]
        held = sum(b - a for a, b, _ in picks)
        assert bool(picks) == (live > 0)
        for (a, b, x), nxt in zip(picks, picks[1:] + [(live, live, 0)], strict=False):
            assert a % 2 == 0 and (b % 2 == 0 or b == live) and a < b <= nxt[0], (runs, waves, picks)
            assert (a == 0 or experts[a - 1] != experts[a]) and experts[b] != experts[b - 1]
            assert x == live / held


def test_pair_windows_keep_the_nearest_ratio_and_fall_back_to_grown_runs():
    """Where no aligned choice is within RATIO_TOLERANCE, the nearest ratio; where no part has an aligned segment
    inside it, the balanced runs grown to aligned ends; and a routing with exact choices takes them."""
    # one wave over runs 2, 1, 2, 1, ... (mean 1.5): aligned segments are run 4m (1 expert, 2 blocks: +33 %) and runs
    # 4m+1..4m+3 (3 experts, 4 blocks: -11 %); the nearer ratio, at the middle run 10: runs 9-11, blocks [14, 18)
    ranges = SamplePolicy(1, 0, rows_per_wave=1).row_strata(_experts([2, 1] * 10, 40), 40, 2)
    assert [(a, b) for a, b, _ in ranges[:1]] == [(14, 18)] and ranges[0][2] == 30 / 4
    policy = SamplePolicy(2, 0, rows_per_wave=1)
    # 1 + 2 + 2 ...: every run boundary is odd, the only aligned cuts are 0 and live, no part has a segment inside
    # it: the balanced runs, grown by whole runs to aligned ends, are every live block
    ranges = policy.row_strata(_experts([1, 2, 2, 2, 2, 2, 2, 2], 20), 20, 2)
    assert ranges[0][:2] == (0, 15) and ranges[0][2] == 1.0
    # 2-block runs (mean 2): a one-expert segment in each part, nearest its middle (runs 2 and 7)
    ranges = policy.row_strata(_experts([2] * 10, 24), 24, 2)
    assert [(a, b) for a, b, _ in ranges[:2]] == [(4, 6), (14, 16)] and ranges[0][2] == 20 / 4


def test_sampled_runs_have_the_mean_run_length():
    """One weight extrapolates rows (instructions) and experts (weights) alike, so the sampled runs' lengths add up to
    about `waves` times the mean run length, each the nearest such run to its part's middle."""
    policy = SamplePolicy(2, 0, rows_per_wave=3)
    experts = _experts([6, 6, 1, 1, 6, 6, 1, 1, 6, 6, 1, 1], 60)  # mean 3.5: lengths 4 + 3 wanted, 1 and 6 exist
    ranges = policy.row_strata(experts, 60)
    # a 6-row run (nearest to 4) near run 3, a 1-row run (nearest to 3) near run 9: 7 rows for 42 live; the tail
    assert [(a, b) for a, b, _ in ranges] == [(14, 20), (40, 41), (49, 52)]
    assert ranges[0][2] == ranges[1][2] == 42 / 7 and ranges[2][2] == 18 / 3


@pytest.mark.parametrize("seed", range(2))
def test_stratified_windows_stand_for_every_item_once(seed):
    """Random item layouts (blocks, groups, items a group), waves and live blocks: windows ascending, disjoint, within
    the items, each weight >= 1, the weighted live blocks adding up to every live block, and the weighted items to
    all of them where a tail window stands for the dead ones."""
    from contract.device import WorkItems

    rng = np.random.default_rng(seed)
    print("seed", seed)
    for _ in range(500):
        blocks, group, per = int(rng.integers(1, 500)), int(rng.integers(1, 3)), int(rng.integers(1, 40))
        items = WorkItems(-(-blocks // group) * per, blocks, group, per)
        policy = SamplePolicy(int(rng.integers(1, 5)), 0, rows_per_wave=int(rng.integers(1, 5)))
        runs = list(rng.integers(1, 5, size=int(rng.integers(0, 200))))
        while sum(runs) > blocks:
            runs.pop()
        windows = policy.stratified_windows(items, _experts(runs, blocks))
        if not windows:
            continue
        # the work: weighted live blocks are every live block (a window's dead blocks past the last live one count
        # for nothing); the weighted items are every item where a tail window stands for the dead ones
        live, per_block = sum(runs), per / group
        ran_live = sum(x * max(0.0, min(e / per_block, live) - b / per_block) for _, b, e, x in windows)
        assert ran_live == pytest.approx(live, rel=1e-9, abs=1e-9)
        if any(b >= -(-live // group) * per for _, b, _, _ in windows):
            assert sum(x * (e - b) for _, b, e, x in windows) == pytest.approx(items.count, rel=1e-9)
        assert all(x >= 1 and 0 <= b < e <= items.count for _, b, e, x in windows)
        assert all(p[2] <= q[1] and p[0] < q[0] for p, q in zip(windows, windows[1:], strict=False))


def test_the_sim_backend_reads_total_padded_at_launch_and_samples_strata(monkeypatch):
    """A LiveRows parameter: the backend reads total_padded and block_expert from device memory when the launch comes
    (what align wrote), gives each grid row its block's expert (-1 past total_padded, the straddling row live) and
    passes the stratified sample; without one the grid is a plain one (contract.device.grid_meaning) and runs whole,
    whatever the launch is called."""
    from contract.device import LiveRows
    from harness.backends.sim import SimBackend

    seen = []
    policy = SamplePolicy(2, 4096, rows_per_wave=3)
    sim = SimBackend(sample=policy)
    monkeypatch.setattr(sim.device, "launch", lambda kernel, grid, block, params, shared_bytes=0, plan=None, **kw:
                        seen.append(plan))
    monkeypatch.setattr(sim, "module", lambda ptx: type("M", (), {"kernel": lambda self, e: None})())
    monkeypatch.setattr("harness.backends.sim.wave_shape", lambda *a: {})
    total = sim.to_device(np.array([16 * 69 + 5], np.int32))  # 70 grid rows of 16 with work (the last in part)
    block_expert = sim.to_device(np.repeat(np.arange(25, dtype=np.int32), 2))  # 50 blocks of 32 rows: 2 grid rows
    sim.launch_ptx("", "k", (64, 100, 1), 128, [LiveRows.of(total, 16, block_expert)], tag="grouped_gemm")
    sim.launch_ptx("", "k", (64, 100, 1), 128, [total], tag="grouped_gemm")  # no LiveRows: a plain grid, whole
    experts = np.where(np.arange(100) < 70, np.arange(100) // 4, -1)  # 4 grid rows an expert, 70 live
    assert seen[0].sample_ranges == policy.launch_plan("rows", (64, 100, 1), experts).sample_ranges
    assert seen[0].wave_ctas == 64 * 3 and seen[0].sample_ctas is None
    assert seen[1].whole  # the name "gemm" decides nothing


def test_a_launch_declares_what_its_grid_means_by_its_parameters():
    """contract.device.grid_meaning: a WorkItems (a persistent kernel's items) before a LiveRows (grid rows of routing
    blocks); anything else is a plain grid, which sampling never touches."""
    from contract.device import DeviceArray, WorkItems, grid_meaning

    routed = LiveRows((1,), np.dtype(np.int32), 0x1000)
    plain = DeviceArray((4,), np.dtype(np.float32), 0x2000)
    assert grid_meaning([plain, routed]) == "rows"
    assert grid_meaning([routed, WorkItems(8, 4)]) == "items"
    assert grid_meaning([plain, np.float32(1)]) == "plain"
    assert parse_sample("2").for_preset(get_preset("dsv3-decode")).launch_plan("plain", (64, 304, 1)).whole


def test_windows_weigh_the_live_blocks_they_ran_not_their_items():
    """dsv3-decode's rung 6 (BM = 16: groups of 8 blocks, 16 items a block) with one-block runs: no aligned segment
    of at most a few experts lies inside a group, so the last live block (161, unaligned) was a segment alone, widened
    to its group of 8 blocks of which 7 are dead, and weighted by items (21 groups of live items for 1): the sample
    stood for 21 live blocks of 161 (the up GEMM modelled at 5x the DRAM's peak). The live windows now hold live
    blocks only and weigh the live blocks over those they ran; the tail takes the rest of the items."""
    from contract.device import WorkItems

    p = get_preset("dsv3-decode")
    policy = parse_sample("auto").for_preset(p)
    live, per_block = 161, 16
    items = WorkItems(p.n_blocks * per_block, p.n_blocks, 8, 8 * per_block)
    windows = policy.stratified_windows(items, _experts([1] * live, p.n_blocks))
    boundary = -(-live // 8) * 8 * per_block
    live_windows = [w for w in windows if w.begin < boundary]
    assert live_windows and all(w.end <= live // 8 * 8 * per_block for w in live_windows)  # no dead block in them
    ran_live = sum(w.weight * (w.end - w.begin) / per_block for w in live_windows)
    assert ran_live == pytest.approx(live)
    assert sum(w.weight * (w.end - w.begin) for w in windows) == pytest.approx(items.count)

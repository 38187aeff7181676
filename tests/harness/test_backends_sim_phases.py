"""The sim backend's persistent launches: a WorkItems parameter passes (0, count), or, when the sample policy picks
item windows (harness.sampling.SamplePolicy.work_windows), the launch runs as ptxsim phases, one window each, on one
CTA an item, its counters extrapolated; a user's persistent kernel without WorkItems is still refused at dsv3."""
import numpy as np
import pytest

from contract.device import WorkItems
from harness.backends.sim import SimBackend
from harness.sampling import SamplePolicy
from tests.stride_ptx import STRIDE  # entry k(pa, pout, begin, end): a persistent grid-stride kernel

pytestmark = pytest.mark.sim

ITEMS, BLOCKS, GRID = 64, 16, 8  # 4 items a routing block


WHOLE = WorkItems(ITEMS, BLOCKS)


def _launch(sample, items=WHOLE, tag="grouped_gemm_fp8[x]"):
    sim = SimBackend(sample=sample)
    a = sim.to_device(np.arange(ITEMS // 4 * 32, dtype=np.uint32))
    out = sim.to_device(np.zeros((ITEMS, 32), np.uint32))
    span = [items] if items is not None else [np.uint32(0), np.uint32(ITEMS)]  # None: as plain parameters
    record = sim.launch_ptx(STRIDE, "k", GRID, 32, [a, out, *span], tag=tag)
    return record, sim.to_host(out)


def test_without_sampling_the_items_are_the_whole_work():
    record, out = _launch(None)
    assert np.flatnonzero(out[:, 0]).tolist() == list(range(ITEMS))
    assert record.stats.sample_fraction == 1.0 and "phases" not in record.stats.waves


def test_sampled_windows_run_as_phases_of_the_chosen_blocks():
    policy = SamplePolicy(2, 0, rows_per_wave=2)  # 8 waves of 2 blocks; the middles of 2 strata: waves 2 and 6
    record, out = _launch(policy)
    windows = policy.work_windows(WorkItems(ITEMS, BLOCKS))
    assert windows == ((2, 16, 24), (6, 48, 56))
    assert np.flatnonzero(out[:, 0]).tolist() == list(range(16, 24)) + list(range(48, 56))
    assert out[16, 0] == 16 // 4 * 32 + 1  # the items ran, and right
    s = record.stats
    # the two windows and a last phase of no items: one CTA's setup, weighted so the launch sets up once a CTA
    assert s.sample_fraction == 0.25 and s.waves["phases"] == 3
    assert s.simulated_ctas == 2 * GRID + 1  # 8 items a window: one CTA each
    assert tuple(record.grid) == (GRID, 1, 1)
    assert s.metrics["dram__bytes_write.sum"] == 4 * s.simulated_metrics["dram__bytes_write.sum"]
    # every item and every CTA's setup cost alike here, so the extrapolation is the whole launch's count exactly (one
    # scale, as before the setup phase, gave 64 setups for the launch's 8)
    whole = _launch(None)[0].stats
    for key in ("smsp__inst_executed.sum", "smsp__thread_inst_executed.sum"):
        assert s.metrics[key] == whole.metrics[key], key


def test_a_window_runs_one_cta_an_item_as_the_whole_launch_runs_consecutive_items():
    """Consecutive items run at once, one a CTA (cluster), as on the device; never more CTAs than the launch has, and
    no CTA that would only set up and exit."""
    from harness.backends.sim import phase_grid
    from ptx_impl import gemm_fp8_r5 as r5

    policy = SamplePolicy(2, 0, rows_per_wave=1)  # 1-block windows: 4 items each on the 8-CTA grid
    record, out = _launch(policy)
    assert record.stats.simulated_ctas == 2 * 4 + 1 and tuple(record.grid) == (GRID, 1, 1)  # + the setup phase
    assert np.count_nonzero(out[:, 0]) == 8
    sim = SimBackend()
    kernel = sim.module(STRIDE).kernel("k")
    assert phase_grid((132, 1, 1), 24, kernel) == (24, 1, 1) and phase_grid((132, 1, 1), 240, kernel) == (132, 1, 1)
    pairs = sim.module(r5.ptx_source(16)).kernel("grouped_gemm_fp8_mc_m16n128")  # .reqnctapercluster 2
    assert phase_grid((132, 1, 1), 24, pairs) == (48, 1, 1) and phase_grid((132, 1, 1), 99, pairs) == (132, 1, 1)


def test_a_plain_grid_or_few_items_runs_whole():
    """The item range passed as two plain u32 parameters declares no items (contract.device.grid_meaning): the launch
    runs whole, whatever its name; so does a WorkItems of no more items than min_ctas."""
    record, out = _launch(SamplePolicy(2, 0, rows_per_wave=2), items=None)
    assert record.stats.sample_fraction == 1.0 and np.count_nonzero(out[:, 0]) == ITEMS
    assert _launch(SamplePolicy(2, ITEMS, rows_per_wave=2))[0].stats.sample_fraction == 1.0  # count <= min_ctas


def test_two_work_items_are_an_input_error():
    from harness.errors import InputError

    sim = SimBackend()
    with pytest.raises(InputError, match="2 WorkItems parameters"):
        sim.launch_ptx(STRIDE, "k", GRID, 32, [WorkItems(4, 1), WorkItems(4, 1)], tag="gemm")

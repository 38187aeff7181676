"""Phased launches (ptxsim.launch.launch(phases=..., represents=...)): the whole grid once per parameter list, the
counts accumulated into one launch and extrapolated; what a persistent kernel's sampled item windows rely on."""
import numpy as np
import pytest

import ptxsim
from tests.stride_ptx import STRIDE  # entry k(pa, pout, begin, end): a persistent grid-stride kernel

pytestmark = pytest.mark.sim

ITEMS, GRID = 64, 4
MEMORY = ("dram__bytes_read.sum", "dram__bytes_write.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
          "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")


def _setup():
    dev = ptxsim.Device()
    a = np.arange(ITEMS // 4 * 32, dtype=np.uint32)
    return dev, ptxsim.load_ptx(STRIDE).kernel("k"), dev.to_device(a), dev.to_device(np.zeros(ITEMS * 32, np.uint32))


def _phases(buf_a, buf_out, windows):
    return [[buf_a, buf_out, np.uint32(b), np.uint32(e)] for b, e in windows]


def test_phases_covering_the_work_equal_the_full_launch():
    dev, k, a, out = _setup()
    full = dev.launch(k, GRID, 32, [a, out, np.uint32(0), np.uint32(ITEMS)])
    whole = dev.read(out, np.uint32, (ITEMS, 32))
    dev2, k2, a2, out2 = _setup()
    phased = dev2.launch(k2, GRID, 32, None, phases=_phases(a2, out2, [(0, 32), (32, 64)]), represents=1.0)
    assert np.array_equal(dev2.read(out2, np.uint32, (ITEMS, 32)), whole)
    assert whole[:, 0].tolist() == [(t // 4) * 32 + 1 for t in range(ITEMS)]
    for key in MEMORY:
        assert phased.metrics[key] == full.metrics[key], key
    assert phased.sample_fraction == 1.0 and phased.simulated_ctas == 2 * GRID
    assert phased.waves == {"wave_ctas": GRID, "total_waves": 2, "simulated_waves": 2, "phases": 2}


def test_two_sampled_phases_extrapolate_to_the_full_launch():
    dev, k, a, out = _setup()
    full = dev.launch(k, GRID, 32, [a, out, np.uint32(0), np.uint32(ITEMS)])
    dev2, k2, a2, out2 = _setup()
    s = dev2.launch(k2, GRID, 32, None, phases=_phases(a2, out2, [(8, 16), (40, 48)]), represents=0.25,
                    phase_waves=(1, 5))
    ran = np.flatnonzero(dev2.read(out2, np.uint32, (ITEMS, 32))[:, 0])
    assert ran.tolist() == list(range(8, 16)) + list(range(40, 48))  # exactly the two windows' items
    for key in MEMORY:  # a uniform kernel: every item's traffic alike, so a quarter of it x 4 is the whole
        assert s.metrics[key] == full.metrics[key], key
        assert s.simulated_metrics[key] == full.metrics[key] / 4, key
    assert s.sample_fraction == 0.25 and s.waves["phases"] == 2 and s.waves["total_waves"] == 8
    # instructions: each phase's CTAs run their setup once, so they are counted, and extrapolated, as they ran
    assert s.metrics["smsp__inst_executed.sum"] == 4 * s.simulated_metrics["smsp__inst_executed.sum"]


def test_a_gap_between_phases_ages_the_l2():
    """Phases 0 and 1 share a's slice 2 (items 8..11 and, again, 8..11); adjacent waves keep it in an L2 of 1 KiB, but
    a gap of 40 waves of their mean footprint evicts it."""
    reads = []
    for waves in ((0, 1), (0, 41)):
        dev, k, a, out = _setup()
        stats = dev.launch(k, GRID, 32, None, phases=_phases(a, out, [(8, 12), (8, 12)]), represents=0.5,
                           phase_waves=waves, l2_bytes=1024)
        reads.append(stats.simulated_metrics["dram__bytes_read.sum"])
    assert reads == [128, 256]


@pytest.mark.parametrize("kw, msg", [
    ({"represents": 0.0}, r"represents=0\.0: expected the fraction in \(0, 1\]"),
    ({"represents": 0.5, "phase_waves": (3, 1)}, r"phase_waves=\(3, 1\): expected 1 ascending|expected 2 ascending"),
    ({"represents": 0.5, "sample_ctas": 2}, "sample_ctas and wave_ctas do not apply"),
    ({"represents": 0.5, "args": []}, "pass args=None"),
    ({"represents": 0.5, "phases": []}, "phases is empty"),
    ({"represents": 0.5, "phases": [[np.zeros(4, np.uint32), np.zeros(4, np.uint32), np.uint32(0), np.uint32(1)]]},
     "copied to the device once per phase"),
])
def test_bad_phase_options_are_launch_errors(kw, msg):
    dev, k, a, out = _setup()
    kw = {"phases": _phases(a, out, [(0, 4), (4, 8)]), "args": None, **kw}
    with pytest.raises(ptxsim.LaunchError, match=msg):
        dev.launch(k, GRID, 32, kw.pop("args"), **kw)


def test_represents_without_phases_is_a_launch_error():
    dev, k, a, out = _setup()
    with pytest.raises(ptxsim.LaunchError, match="represents=0.5 applies only to a launch with phases"):
        dev.launch(k, GRID, 32, [a, out, np.uint32(0), np.uint32(4)], represents=0.5)


def test_a_phase_may_run_on_fewer_ctas_than_the_launch():
    """A window of 2 items on a 4-CTA launch runs on 2 CTAs: the same items, no CTA that only exits (whose setup would
    be extrapolated), and the stats still report the launch's grid."""
    dev, k, a, out = _setup()
    idle = dev.launch(k, GRID, 32, None, phases=_phases(a, out, [(8, 10)]), represents=2 / ITEMS)
    dev2, k2, a2, out2 = _setup()
    tight = dev2.launch(k2, GRID, 32, None, phases=_phases(a2, out2, [(8, 10)]), represents=2 / ITEMS,
                        phase_grids=[(2, 1, 1)])
    assert np.array_equal(dev.read(out, np.uint32, (ITEMS, 32)), dev2.read(out2, np.uint32, (ITEMS, 32)))
    assert tight.grid == (GRID, 1, 1) and tight.simulated_ctas == 2 and idle.simulated_ctas == GRID
    assert tight.simulated_metrics["smsp__inst_executed.sum"] < idle.simulated_metrics["smsp__inst_executed.sum"]
    with pytest.raises(ptxsim.LaunchError, match=r"phase 0's grid \(8, 1, 1\) exceeds the launch's grid \(4, 1, 1\)"):
        dev2.launch(k2, GRID, 32, None, phases=_phases(a2, out2, [(8, 10)]), represents=0.5, phase_grids=[8])
    with pytest.raises(ptxsim.LaunchError, match="phase_grids has 2 grids for 1 phases"):
        dev2.launch(k2, GRID, 32, None, phases=_phases(a2, out2, [(8, 10)]), represents=0.5, phase_grids=[2, 2])


def test_phase_weights_weigh_each_phase_by_what_it_stands_for():
    """Items 48.. stand for a tail that does nothing (the window [ITEMS, ITEMS) is empty work: CTAs that only exit):
    weighted phases count the live window's traffic x 6 and the tail's x 1, where one scale (represents) would
    multiply both alike."""
    dev, k, a, out = _setup()
    full = dev.launch(k, GRID, 32, [a, out, np.uint32(0), np.uint32(48)])  # 48 live items, the rest a no-op
    dev2, k2, a2, out2 = _setup()
    s = dev2.launch(k2, GRID, 32, None, phases=_phases(a2, out2, [(16, 24), (48, 48)]), represents=8 / ITEMS,
                    phase_waves=(2, 6), phase_weights=(6.0, 1.0))
    for key in MEMORY:
        assert s.metrics[key] == full.metrics[key], key
        assert s.simulated_metrics[key] == full.metrics[key] / 6, key
    assert s.sample_fraction == 8 / ITEMS
    per_line = sum(v["inst_executed"] for v in s.per_line.values())
    assert per_line == s.metrics["smsp__inst_executed.sum"]
    setup = dev2.launch(k2, GRID, 32, [a2, out2, np.uint32(0), np.uint32(0)]).metrics["smsp__inst_executed.sum"]
    assert s.metrics["smsp__inst_executed.sum"] == 6 * (s.simulated_metrics["smsp__inst_executed.sum"] - setup) + setup


@pytest.mark.parametrize("kw, msg", [
    ({"phase_weights": (1.0,)}, r"expected 2 finite weights"),
    ({"phase_weights": (float("nan"), 2.0)}, r"expected 2 finite weights"),
    ({"phase_weights": ("x", 1)}, "expected one number per phase"),
])
def test_bad_phase_weights_are_launch_errors(kw, msg):
    dev, k, a, out = _setup()
    with pytest.raises(ptxsim.LaunchError, match=msg):
        dev.launch(k, GRID, 32, None, phases=_phases(a, out, [(0, 4), (4, 8)]), represents=0.5, **kw)
    with pytest.raises(ptxsim.LaunchError, match="applies only to a launch with phases"):
        dev.launch(k, GRID, 32, [a, out, np.uint32(0), np.uint32(4)], phase_weights=(1.0,))

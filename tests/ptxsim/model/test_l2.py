"""ptxsim.model.l2.WaveL2: the footprint-per-wave L2 between simulated CTAs and DRAM."""
import numpy as np
import pytest

from ptxsim.model.errors import ModelArgumentError
from ptxsim.model.l2 import SECTOR, WaveL2


def _secs(lo, hi):
    return np.arange(lo, hi, dtype=np.int64)


def test_a_sector_misses_once_per_wave():
    l2 = WaveL2(100, capacity_bytes=None)
    l2.begin_wave(0)
    assert l2.access(_secs(0, 10)).tolist() == list(range(10))
    assert l2.access(_secs(5, 15)).tolist() == list(range(10, 15))  # the wave's own earlier touches hit
    assert l2.footprint_bytes(0) == 15 * SECTOR


def test_previous_waves_stay_while_their_footprints_fit():
    l2 = WaveL2(100, capacity_bytes=20 * SECTOR)
    l2.begin_wave(0)
    l2.access(_secs(0, 10))
    l2.begin_wave(1)
    l2.access(_secs(10, 20))
    l2.begin_wave(2)  # waves 0 and 1: 20 sectors, fit exactly
    assert l2.access(_secs(0, 20)).size == 0
    l2.begin_wave(3)  # wave 2 alone is 20 sectors: wave 1 (and 0) no longer fit
    assert l2.access(_secs(0, 20)).size == 0  # ... but wave 2 touched all 20, so they hit
    l2.begin_wave(4)
    assert l2.access(_secs(20, 30)).tolist() == list(range(20, 30))


def test_a_wave_bigger_than_the_l2_leaves_nothing_for_the_next():
    l2 = WaveL2(100, capacity_bytes=8 * SECTOR)
    l2.begin_wave(0)
    l2.access(_secs(0, 10))
    l2.begin_wave(1)
    assert l2.access(_secs(0, 10)).size == 10


def test_skipped_waves_age_the_l2_by_the_mean_footprint():
    l2 = WaveL2(100, capacity_bytes=30 * SECTOR)
    l2.begin_wave(0)
    l2.access(_secs(0, 10))
    l2.begin_wave(2)  # wave 1 skipped: assumed 10 sectors; 0 + 1 = 20 <= 30, wave 0 kept
    assert l2.access(_secs(0, 10)).size == 0
    l2.begin_wave(10)  # 7 skipped waves of ~10 sectors: far over 30, cold
    assert l2.access(_secs(0, 10)).size == 10


def test_waves_out_of_order_and_bad_capacity_are_errors():
    l2 = WaveL2(10, capacity_bytes=None)
    l2.begin_wave(3)
    with pytest.raises(ModelArgumentError, match="wave 2 after wave 3"):
        l2.begin_wave(2)
    with pytest.raises(ModelArgumentError, match="capacity_bytes must be an integer >= 0 or None, got -1"):
        WaveL2(10, capacity_bytes=-1)


def test_many_waves_keep_a_sliding_window_cheaply():
    n = 20_000
    l2 = WaveL2(10 * n, capacity_bytes=30 * SECTOR)
    for w in range(n):  # quadratic work here would take minutes
        l2.begin_wave(w)
        l2.access(_secs(10 * w, 10 * w + 10))
    assert l2.kept_from == n - 1 - 3  # the three previous waves (30 sectors) fit
    l2.begin_wave(n)
    assert l2.access(_secs(10 * (n - 3), 10 * (n - 2))).size == 0  # wave n-3: kept
    assert l2.access(_secs(10 * (n - 4), 10 * (n - 3))).size == 10  # wave n-4: gone

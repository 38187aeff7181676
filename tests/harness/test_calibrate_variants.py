"""Measured paired variants (harness/calibrate_variants.py) from fake readings: a backend stub whose launches take
scripted times, so the quantities, ratios and bootstrap intervals can be checked exactly (timing them needs a GPU)."""
import io
from types import SimpleNamespace

import numpy as np
import pytest

from harness.calibrate_variants import measure_variant_pairs, variant_samples
from ptxsim.model.paired import variant_bench


class ScriptedBackend:
    """launch_ptx returns a record whose event time is `seconds(entry, grid, args, i)`; empty() hands out buffers."""

    def __init__(self, seconds):
        self.seconds, self.records, self.launches, self.count = seconds, [], [], {}

    def empty(self, shape, dtype, fill_byte=0):
        return SimpleNamespace(shape=shape, dtype=dtype, addr=1 << 20)

    def launch_ptx(self, ptx, entry, grid, block, args):
        key = (entry, grid, tuple(int(a) for a in args if isinstance(a, np.integer)))
        i = self.count.get(key, 0)
        self.count[key] = i + 1
        self.launches.append((entry, grid, block))
        ms = self.seconds(entry, grid, args, i) * 1e3
        record = SimpleNamespace(stats=SimpleNamespace(elapsed_ms=lambda: ms))
        self.records.append(record)
        return record


def _copy_seconds(entry, grid, args, i):
    """A copy of 512 MB of traffic at 2 TB/s with all 132 CTAs and 1 TB/s with 32; 1% jitter by launch."""
    rate = {32: 1e12, 64: 1.6e12, 132: 2e12, 528: 2.05e12}[grid]
    return 512 * 2**20 / rate * (1 + 0.01 * ((i % 3) - 1))


def test_the_ratio_is_that_of_the_median_quantities_with_a_bootstrap_interval():
    backend = ScriptedBackend(_copy_seconds)
    pairs, skipped = measure_variant_pairs(backend, repeat=9, clock_hz=1.6e9,
                                           names=["hbm_copy_32_vs_132_blocks", "hbm_copy_528_vs_132_blocks"],
                                           progress=io.StringIO())
    assert skipped == {}
    low = pairs["hbm_copy_32_vs_132_blocks"]
    assert low.ratio == pytest.approx(0.5, rel=1e-9) and low.samples == 9
    assert low.ci95[0] <= 0.5 <= low.ci95[1] and low.ci95[1] / low.ci95[0] < 1.05  # the 1% jitter, not more
    assert pairs["hbm_copy_528_vs_132_blocks"].ratio == pytest.approx(2.05 / 2.0)
    grids = [g for e, g, b in backend.launches]
    assert grids.count(132) == 9 + 2  # the shared denominator is timed once: two warm-ups and nine timed launches
    assert {b for e, g, b in backend.launches} == {256}


def test_an_ilp_sweep_gives_clocks_per_instruction_from_its_two_step_counts():
    per_inst = {"ilp_fma_1": 4.0, "ilp_fma_4": 1.0}  # clocks per warp-instruction (chosen)

    def seconds(entry, grid, args, i):
        steps, ilp = int(args[1]), int(entry.rsplit("_", 1)[1])
        return 2e-6 + steps * ilp * per_inst[entry] / 1.6e9  # a fixed 2 us plus the chains

    samples = variant_samples(ScriptedBackend(seconds), variant_bench("ilp_fma_1"), repeat=3, clock_hz=1.6e9)
    assert samples == pytest.approx([4.0] * 3)
    pairs, _ = measure_variant_pairs(ScriptedBackend(seconds), 3, 1.6e9, names=["ilp_fma_1_vs_4"],
                                     progress=io.StringIO())
    assert pairs["ilp_fma_1_vs_4"].ratio == pytest.approx(4.0)


def test_a_pair_without_usable_samples_is_reported_not_measured():
    # both step counts take the same time (event noise swamps a few microseconds): no clocks per instruction
    pairs, skipped = measure_variant_pairs(ScriptedBackend(lambda *a: 5e-6), 4, 1.6e9, names=["ilp_iadd_1_vs_8"],
                                           progress=io.StringIO())
    assert pairs == {} and "0 usable samples of ilp_iadd_1" in skipped["ilp_iadd_1_vs_8"]


def test_each_pair_is_handed_on_as_soon_as_it_is_timed():
    seen = []
    measure_variant_pairs(ScriptedBackend(_copy_seconds), 3, 1.6e9, progress=io.StringIO(),
                          names=["hbm_copy_32_vs_132_blocks", "hbm_copy_64_vs_132_blocks"],
                          on_pair=lambda pairs, skipped: seen.append(sorted(pairs)))
    assert seen == [["hbm_copy_32_vs_132_blocks"], ["hbm_copy_32_vs_132_blocks", "hbm_copy_64_vs_132_blocks"]]

"""The paired validation rows' kernels timed on the GPU, for `ptxmoe calibrate`: each pair of ptxsim/model/paired.py
(GPU_PAIRS: the published pairs, once per distinct pair of variants) as a measured ratio with its 95% bootstrap
interval, written into the device profile's "pairs" (ptxsim/model/profile_schema.py), where
ptxsim.model.profile_intervals fits the model's ratio error on them.

Each variant is pair_benches.py's microbench.Bench (the same PTX, grid, block and arguments the model runs on
ptxsim), launched on the gpu backend: two warm-ups, then `repeat` CUDA-event-timed launches of each of its launches.
Timed launch i of every launch gives quantity sample i (bench.quantity, in the bench's unit: GB/s, or clocks per
warp-instruction for the one-warp ILP sweeps, which are differential over two step counts); the ratio of a pair is
median(numerator samples) / median(denominator samples) and its interval the percentile bootstrap of that ratio
(harness.timing.stats.ratio_ci, the two sides resampled independently, seeded). NOTE: the ILP sweeps run a few
microseconds, so event timing (about a microsecond of noise) makes their intervals wide; a differential sample that
comes out <= 0 is dropped, and a pair left with fewer than 2 samples on a side is reported as not measured.
"""
from __future__ import annotations

import sys

import numpy as np

RESAMPLES = 2000
SEED = 29


class _Alloc:
    """The device interface pair_benches' argument builders expect (alloc), on the gpu backend."""

    def __init__(self, backend):
        self.backend = backend

    def alloc(self, nbytes: int):
        return self.backend.empty((int(nbytes),), np.uint8, fill_byte=0)


def variant_samples(backend, bench, repeat: int, clock_hz: float) -> list[float]:
    """Quantity samples of one variant: for each timed launch index, bench.quantity of its launches' times."""
    per_launch = []
    for launch in bench.launches:
        args = launch.args(_Alloc(backend))
        times = []
        for i in range(repeat + 2):
            record = backend.launch_ptx(bench.ptx, bench.entry, launch.grid, launch.block, args)
            if i >= 2:
                times.append(record.stats.elapsed_ms() * 1e-3)
        per_launch.append(times)
        del args  # frees the 256 MB buffers before the next launch allocates its own
    backend.records.clear()
    samples = [float(bench.quantity(tuple(t), bench.launches, clock_hz)) for t in zip(*per_launch, strict=True)]
    return [q for q in samples if np.isfinite(q) and q > 0]


def measure_variant_pairs(backend, repeat: int, clock_hz: float, names=None, progress=None,
                          on_pair=None) -> tuple[dict, dict]:
    """({pair: profile.MeasuredPair}, {pair: why it was not measured}) for GPU_PAIRS (or `names`); `on_pair(pairs,
    skipped)` after each pair (calibrate rewrites the profile then, so a run cut short keeps the pairs it timed)."""
    from harness.timing.stats import ratio_ci
    from ptxsim.model.paired import GPU_PAIRS, variant_bench
    from ptxsim.model.profile import MeasuredPair

    rng = np.random.default_rng(SEED)
    samples: dict[str, list[float]] = {}
    pairs, skipped = {}, {}
    for name in names or GPU_PAIRS:
        numerator, denominator = GPU_PAIRS[name]
        for variant in (numerator, denominator):
            if variant not in samples:
                samples[variant] = variant_samples(backend, variant_bench(variant), repeat, clock_hz)
        top, bottom = samples[numerator], samples[denominator]
        if len(top) < 2 or len(bottom) < 2:
            skipped[name] = (f"{len(top)} usable samples of {numerator}, {len(bottom)} of {denominator}; "
                             "need >= 2 each (raise --repeat)")
        else:
            ratio, lo, hi = ratio_ci(top, bottom, resamples=RESAMPLES, rng=rng)
            # NOTE: a percentile interval of a ratio of medians need not hold the point estimate with few samples;
            # widened to hold it, as the profile's schema requires lo <= ratio <= hi
            pairs[name] = MeasuredPair(name, ratio, (min(lo, ratio), max(hi, ratio)), min(len(top), len(bottom)))
            print(f"  pair {name:<36} {ratio:10.4g}  [{lo:.4g}, {hi:.4g}]", file=progress or sys.stdout, flush=True)
        if on_pair is not None:
            on_pair(pairs, skipped)
    return pairs, skipped

"""The SM clock under a sustained tensor load, measured for `ptxmoe calibrate` (issue 29: one under-load clock per
device, for every bound of the model).

The load is the wgmma throughput kernel of the microbenchmarks (4 chained m64n256k16 BF16 wgmma per group, one group
in flight; ptxsim/model/hopper_benches.py) on one CTA of two warpgroups per SM (ptxas gives it 154 registers a
thread: a second CTA would not fit), every SM busy, launched `launches` times back to back for about `launches` x
80 ms. Thread 0 of every CTA reads %clock64 (the SM's clock
counter) and %globaltimer (nanoseconds, the same for all SMs) before its loop and after its last wgmma completes, so
the clock that SM ran at is d(clock64) / d(globaltimer). A launch's clock is the median over its CTAs; the profile's
clock is the median of the later half of the launches (after the clock has settled under the load: power capping
reacts within milliseconds, so the first launch may still run near the boost clock). NVML's SM clock is sampled
while each launch runs, where NVML answers, and kept beside it as a cross-check (not used by the model).

On a CPU the fake driver (tests/harness/fakegpu) runs all of this as plumbing: it computes nothing, so its tests
give the counters the kernel would have written.
"""
from __future__ import annotations

import statistics

import numpy as np

from harness.errors import PtxmoeError

ENTRY = "clock_under_load"
CTAS_PER_SM = 1            # 154 registers x 256 threads: one CTA fills an SM's register file past half
BLOCK = 256                 # two warpgroups
ITERS = 1 << 17             # ~80 ms at 1.6 GHz: 2 warpgroups x 4 wgmma x 128 clocks per iteration on each SM
LAUNCHES = 6
METHOD = ("d(%clock64) / d(%globaltimer) per CTA, thread 0, around a sustained wgmma m64n256k16 bf16 loop on "
          f"{CTAS_PER_SM} CTAs x {BLOCK} threads per SM; median over CTAs, then over the later half of the launches")


def clock_ptx() -> str:
    from ptxsim.model import hopper_benches as hb

    return hb._wgmma_kernel(ENTRY, hb.WGMMA_TP_N, "bf16", hb.WGMMA_TP_PER_GROUP, 1, clocks=True)


def clock_of_counters(counters: np.ndarray) -> np.ndarray:
    """Hz of each CTA from its [clock64 start, globaltimer start, clock64 end, globaltimer end] row.

    Raises:
        PtxmoeError: a CTA whose counters did not advance (the kernel did not run, or wrote nothing), naming it.
    """
    counters = np.asarray(counters, dtype=np.uint64).reshape(-1, 4)
    clocks = counters[:, 2].astype(np.float64) - counters[:, 0].astype(np.float64)
    nanos = counters[:, 3].astype(np.float64) - counters[:, 1].astype(np.float64)
    stuck = np.flatnonzero((clocks <= 0) | (nanos <= 0))
    if stuck.size:
        cta = int(stuck[0])
        raise PtxmoeError(f"{ENTRY}: CTA {cta} read clock64 {int(counters[cta, 0])} -> {int(counters[cta, 2])} and "
                          f"globaltimer {int(counters[cta, 1])} -> {int(counters[cta, 3])} ns ({stuck.size} of "
                          f"{len(counters)} CTAs like it); expected both to advance over the loop")
    return clocks / nanos * 1e9


def measure_clock(backend, launches: int = LAUNCHES, iters: int = ITERS, nvml=None) -> dict:
    """The under-load clock on `backend` (a GpuBackend): the profile's "clock" field, {under_load_hz, method,
    samples, per_launch_hz, cta_hz_range, nvml_sm_clock_mhz, ctas, iters}."""
    from harness.timing.gpu import read_clocks, sm_clock

    if launches < 2:
        raise PtxmoeError(f"measure_clock: launches = {launches}; expected >= 2 (the later half is kept)")
    sms = int(backend.sm_count())
    grid = CTAS_PER_SM * sms
    ptx = clock_ptx()
    acc = backend.empty((1,), np.float32, fill_byte=0)
    out = backend.empty((grid * 4,), np.uint64, fill_byte=0)
    per_launch, lows, highs, nvml_mhz = [], [], [], []
    for _ in range(launches):
        backend.launch_ptx(ptx, ENTRY, grid, BLOCK, [acc, np.uint32(iters), out])
        mhz = sm_clock(read_clocks(nvml=nvml))  # while the launch runs (the launch is asynchronous)
        if mhz is not None:
            nvml_mhz.append(mhz)
        backend.synchronize()
        hz = clock_of_counters(backend.to_host(out))
        per_launch.append(float(np.median(hz)))
        lows.append(float(hz.min()))
        highs.append(float(hz.max()))
    backend.records.clear()
    kept = per_launch[launches // 2:]
    return {"under_load_hz": float(statistics.median(kept)), "method": METHOD, "samples": len(kept),
            "per_launch_hz": per_launch, "cta_hz_range": [min(lows), max(highs)],
            "nvml_sm_clock_mhz": nvml_mhz or None, "ctas": grid, "iters": int(iters)}

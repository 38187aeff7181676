"""Timing on a real GPU, the way careful harnesses do it (nvbench, triton.testing.do_bench, ThunderKittens' benches).

Per sample: the L2 is flushed (a memset of a buffer twice the L2 size), then CUDA events bracket one call of the
implementation's `run` on the backend's stream; inputs rotate between copies when they fit in L2. Warm-up first;
sampling stops when the relative standard error drops under 0.5 % (after a minimum count), or at the time budget
or the sample cap. The host-side call time (what a caller pays to dispatch, without waiting) is sampled separately
with per-launch events off. GPU clocks are read (nvidia-smi) before and after.
"""
from __future__ import annotations

import subprocess
import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np

from harness.timing import stats


@dataclass(frozen=True)
class GpuTimingSettings:
    warmup_runs: int = 3
    warmup_s: float = 0.05  # at least this long of warm-up as well
    min_samples: int = 10
    max_samples: int = 2000
    budget_s: float = 2.0  # per (kernel, impl) row
    rse_target: float = stats.RSE_TARGET
    flush_l2: bool = True
    max_rotation: int = 4
    host_samples: int = 30


def read_clocks() -> dict:
    """SM / memory clocks, temperature, power and throttle reasons from nvidia-smi (empty dict when unavailable)."""
    fields = ("clocks.sm", "clocks.mem", "temperature.gpu", "power.draw", "clocks_throttle_reasons.active")
    try:
        proc = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if proc.returncode != 0 or not proc.stdout.strip():
        return {}
    values = [v.strip() for v in proc.stdout.splitlines()[0].split(",")]
    names = ("sm_clock_mhz", "mem_clock_mhz", "temperature_c", "power_w", "throttle_reasons")
    return {"utc_ns": time.time_ns(), **dict(zip(names, values))}


def rotation_count(input_bytes: int, l2_bytes: int, max_sets: int = 4) -> int:
    """How many input copies to rotate through: 1 when the inputs exceed L2, else enough to span 2x L2 (capped)."""
    if input_bytes <= 0 or input_bytes >= l2_bytes:
        return 1
    return int(max(1, min(max_sets, -(-2 * l2_bytes // input_bytes))))


class L2Flusher:
    """Writes a device buffer of 2x the L2 size on the backend's stream (evicts everything the kernel could reuse)."""

    def __init__(self, backend, l2_bytes: int):
        from numba import cuda

        self.nbytes = int(2 * l2_bytes)
        self.buffer = cuda.device_array(self.nbytes, dtype=np.uint8, stream=backend.stream)
        self.ptr = int(self.buffer.__cuda_array_interface__["data"][0])
        self.backend = backend
        self.value = 0

    def __call__(self) -> None:
        from cuda.bindings import driver

        from harness.backends.gpu import _check, _stream_handle

        self.value = (self.value + 1) & 0xFF
        _check(driver.cuMemsetD8Async(driver.CUdeviceptr(self.ptr), self.value, self.nbytes,
                                      driver.CUstream(_stream_handle(self.backend.stream))),
               "cuMemsetD8Async (L2 flush)")


def _cuda_event():
    from numba import cuda

    return cuda.event()  # timing events (the default)


def time_gpu(backend, call: Callable[[dict], list], arg_sets: list[dict], l2_bytes: int,
             settings: GpuTimingSettings = GpuTimingSettings(), event_factory=None, flusher=None) -> dict:
    """Sample device time and host call time of `call(args)` (one implementation's run) on a GpuBackend.

    Args:
        backend: a GpuBackend (its `stream`, `event_timing`, `records`, `synchronize` are used).
        call: runs the implementation once on one argument set (launches only; no synchronisation).
        arg_sets: argument sets to rotate through (the first is the checked one).
        l2_bytes: the device's L2 size (the flush writes twice that).
        settings: warm-up, stopping rule, budget.
        event_factory: makes a timing event (record(stream), synchronize(), elapsed_time(other) in ms); default CUDA
            events from numba. flusher: a callable flushing the L2 on the stream; default an L2Flusher.

    Returns:
        {"basis": "measured", "device_time_us": [...], "device": Summary dict (…_us), "host_call_us": [...],
         "host_call": Summary dict, "stop_reason", "rotation_sets", "l2_flush_bytes", "clocks_before",
         "clocks_after", "stages_us": {launch name: µs, from one extra run with per-launch events},
         "launch_us": [[launch name, µs], ...] in launch order (that same run), "settings"}
    """
    event_factory = event_factory or _cuda_event
    stream = backend.stream
    if flusher is None and settings.flush_l2:
        flusher = L2Flusher(backend, l2_bytes)
    clocks_before = read_clocks()
    saved_events = backend.event_timing
    backend.event_timing = False
    try:
        t_end = time.perf_counter() + settings.warmup_s
        i = 0
        while i < settings.warmup_runs or time.perf_counter() < t_end:
            call(arg_sets[i % len(arg_sets)])
            i += 1
        backend.synchronize()

        samples: list[float] = []
        start, end = event_factory(), event_factory()
        t0 = time.perf_counter()
        reason = ""
        while True:
            if flusher is not None:
                flusher()
            start.record(stream)
            call(arg_sets[len(samples) % len(arg_sets)])
            end.record(stream)
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1e3)  # ms -> µs
            stop, reason = stats.should_stop(samples, time.perf_counter() - t0, min_samples=settings.min_samples,
                                             max_samples=settings.max_samples, budget_s=settings.budget_s,
                                             rse_target=settings.rse_target)
            if stop:
                break

        host: list[float] = []
        for j in range(settings.host_samples):
            backend.synchronize()
            h0 = time.perf_counter()
            call(arg_sets[j % len(arg_sets)])
            host.append((time.perf_counter() - h0) * 1e6)
        backend.synchronize()

        backend.event_timing = True
        backend.records.clear()
        if flusher is not None:
            flusher()
        call(arg_sets[0])
        backend.synchronize()
        launch_us = [(rec.name, rec.stats.elapsed_ms() * 1e3) for rec in backend.records if rec.stats is not None]
        stages: dict[str, float] = {}
        for name, us in launch_us:
            stages[name] = stages.get(name, 0.0) + us
    finally:
        backend.event_timing = saved_events
    return {
        "basis": "measured", "device_time_us": samples, "device": stats.summarize(samples).as_dict("us"),
        "host_call_us": host, "host_call": stats.summarize(host).as_dict("us") if host else None,
        "stop_reason": reason, "rotation_sets": len(arg_sets),
        "l2_flush_bytes": getattr(flusher, "nbytes", 0) if flusher else 0,
        "clocks_before": clocks_before, "clocks_after": read_clocks(), "stages_us": stages,
        "launch_us": [[name, us] for name, us in launch_us],
        "settings": asdict(settings),
    }

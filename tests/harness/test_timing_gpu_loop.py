"""The GPU sampling loop (harness.timing.gpu.time_gpu) driven by fake events on a fake device clock: warm-up, L2
flush per sample, input rotation, the RSE stopping rule and budget, host call samples, per-stage breakdown."""
from types import SimpleNamespace

import numpy as np
import pytest

from harness.backends.base import LaunchRecord
from harness.timing.gpu import GpuTimingSettings, rotation_count, time_gpu


class FakeGpu:
    """A device clock in ms advanced by each 'kernel'; events read it."""

    def __init__(self, rng, kernel_ms, noise):
        self.now_ms, self.rng, self.kernel_ms, self.noise = 0.0, rng, kernel_ms, noise
        self.stream, self.event_timing, self.records, self.syncs = object(), True, [], 0
        self.flushes, self.calls = 0, []
        self.keep_workspaces, self.released = False, 0
        self.blocker = SimpleNamespace(hold=lambda: None, release=lambda: None, timed_out=lambda: False)

    def clocks(self):
        return {"sm_clock_mhz": "1980"}

    def row_module_loads(self) -> dict:
        return {}  # GpuBackend.row_module_loads: no PTX module loaded by these Python 'kernels'

    def release_workspaces(self):
        self.released += 1

    def synchronize(self):
        self.syncs += 1

    def event(self):
        gpu = self

        class Event:
            t = None

            def record(self, stream):
                assert stream is gpu.stream
                self.t = gpu.now_ms

            def synchronize(self):
                pass

            def elapsed_time(self, other):
                return other.t - self.t
        return Event()

    def flush(self):
        self.flushes += 1
        self.now_ms += 5.0  # the flush takes device time too, but before the start event

    def run(self, args):
        """Two launches per call ('a' then 'b', 1:3 of the time), recorded with per-launch events when on."""
        self.calls.append(args["id"])
        total = self.kernel_ms * (1 + self.noise * self.rng.standard_normal())
        for name, share in (("a", 0.25), ("b", 0.75)):
            start = self.event()
            start.record(self.stream)
            self.now_ms += total * share
            end = self.event()
            end.record(self.stream)
            stats = SimpleNamespace(elapsed_ms=lambda s=start, e=end: s.elapsed_time(e)) if self.event_timing else None
            self.records.append(LaunchRecord(name, "ptx", (1, 1, 1), (32, 1, 1), 0, 1e-6, stats))
        return self.records[-2:]


def test_quiet_kernel_stops_on_rse_with_rotation_and_flushes(rng):
    gpu = FakeGpu(rng, kernel_ms=0.010, noise=0.002)
    sets = [{"id": i} for i in range(3)]
    settings = GpuTimingSettings(warmup_runs=4, warmup_s=0.0, min_samples=10, host_samples=7, budget_s=30.0)
    out = time_gpu(gpu, gpu.run, sets, l2_bytes=1 << 20, settings=settings, event_factory=gpu.event,
                   flusher=gpu.flush,
                   blocker=gpu.blocker, clock_reader=gpu.clocks)
    n = out["device"]["n"]
    assert out["stop_reason"] == "rse<0.005" and n == 10  # 0.2 % noise: RSE is tiny at the minimum count
    assert out["device"]["median_us"] == pytest.approx(10.0, rel=0.01)  # the flush before 'start' is not counted
    assert out["device"]["ci_lo_us"] <= out["device"]["median_us"] <= out["device"]["ci_hi_us"]
    assert gpu.flushes == n + 1  # one per sample, one before the stage run
    sampled = gpu.calls[4:4 + n]
    assert sampled == [i % 3 for i in range(n)]  # inputs rotate
    assert len(out["host_call_us"]) == 7 and len(gpu.calls) == 4 + n + 7 + 1
    assert out["stages_us"]["b"] == pytest.approx(3 * out["stages_us"]["a"])
    assert sum(out["stages_us"].values()) == pytest.approx(10.0, rel=0.02)
    assert gpu.event_timing is True  # restored
    assert out["basis"] == "measured" and out["rotation_sets"] == 3


def test_noisy_kernel_stops_at_the_budget(rng):
    gpu = FakeGpu(rng, kernel_ms=0.010, noise=0.3)
    settings = GpuTimingSettings(warmup_runs=1, warmup_s=0.0, min_samples=5, max_samples=100_000, budget_s=0.05,
                                 host_samples=0, rse_target=1e-9)
    out = time_gpu(gpu, gpu.run, [{"id": 0}], 1 << 20, settings, event_factory=gpu.event, flusher=gpu.flush,
                   blocker=gpu.blocker, clock_reader=gpu.clocks)
    assert out["stop_reason"].startswith("time budget") and out["device"]["n"] >= 5
    assert out["host_call"] is None


def test_sample_cap(rng):
    gpu = FakeGpu(rng, kernel_ms=0.010, noise=0.3)
    settings = GpuTimingSettings(warmup_runs=0, warmup_s=0.0, min_samples=1, max_samples=1, host_samples=0)
    out = time_gpu(gpu, gpu.run, [{"id": 0}], 1 << 20, settings, event_factory=gpu.event, flusher=gpu.flush,
                   blocker=gpu.blocker, clock_reader=gpu.clocks)
    assert out["device"]["n"] == 1 and out["stop_reason"] == "sample cap 1"


def test_rotation_count():
    mib = 1 << 20
    assert rotation_count(100 * mib, 50 * mib) == 1  # bigger than L2: no rotation needed
    assert rotation_count(30 * mib, 50 * mib) == 4  # ceil(100/30) = 4
    assert rotation_count(40 * mib, 50 * mib) == 3
    assert rotation_count(1, 50 * mib, max_sets=4) == 4
    assert rotation_count(0, 50 * mib) == 1
    assert np.isfinite(rotation_count(49 * mib, 50 * mib))

"""NVTX ranges in domain "ptxmoe" around every launch group, with the harness's own timestamps kept for run.json.

Range names are `<kernel>/<impl>/<preset>/<skew>` (nested inside one `run-<run-id>` range), so Nsight Systems and
Nsight Compute (`--nvtx-include`) can attribute kernels to rows. The nvtx package is harmless without a GPU or a
profiler attached (it is a no-op then); when it is not importable at all, ranges are still timed and recorded.
Timestamps: `start_ns`/`end_ns` from time.time_ns() (wall clock, comparable with nsys's UTC-based timeline only
roughly) and `start_perf_ns`/`end_perf_ns` from time.perf_counter_ns() (monotonic, for durations and ordering).
"""
from __future__ import annotations

import contextlib
import time

DOMAIN = "ptxmoe"


def range_name(kernel: str, impl: str, preset: str, skew: str) -> str:
    return f"{kernel}/{impl}/{preset}/{skew}"


def run_range_name(run_id: str) -> str:
    """The enclosing range of a whole run: "run-<run-id>" (no '/', so ncu's --nvtx-include "ptxmoe@run-<id>/" works)."""
    return f"run-{run_id}"


_WARNED: list[bool] = []


def _warn_no_nvtx_once() -> None:
    """One clear warning per process: without the `nvtx` package ranges are timed but invisible to Nsight."""
    if _WARNED:
        return
    _WARNED.append(True)
    import warnings

    warnings.warn("the `nvtx` Python package is not installed: NVTX ranges are still timed and recorded in run.json, "
                  "but Nsight cannot see them (ncu --nvtx-include will match nothing); pip install nvtx "
                  "(on a lent GPU machine: carry its wheel in .whl/, see docs/gpu-check.md)",
                  RuntimeWarning, stacklevel=3)


class RangeRecorder:
    """Opens NVTX ranges and remembers each one's start/end timestamps and nesting depth."""

    def __init__(self, domain: str = DOMAIN):
        self.domain = domain
        self.ranges: list[dict] = []
        self._depth = 0
        try:
            import nvtx

            self._nvtx = nvtx
        except ImportError:  # NOTE: timing still recorded; only the profiler annotation is lost
            self._nvtx = None
            _warn_no_nvtx_once()

    @contextlib.contextmanager
    def range(self, name: str, **attrs):
        """Context manager: an NVTX range `name` in the domain; appends {name, depth, start_ns, end_ns, ...}."""
        entry = {"name": name, "domain": self.domain, "depth": self._depth, **attrs,
                 "start_ns": time.time_ns(), "start_perf_ns": time.perf_counter_ns()}
        ctx = self._nvtx.annotate(name, domain=self.domain) if self._nvtx else contextlib.nullcontext()
        self._depth += 1
        try:
            with ctx:
                yield entry
        finally:
            self._depth -= 1
            entry["end_ns"] = time.time_ns()
            entry["end_perf_ns"] = time.perf_counter_ns()
            entry["duration_ms"] = (entry["end_perf_ns"] - entry["start_perf_ns"]) / 1e6
            self.ranges.append(entry)

    def drain(self) -> list[dict]:
        """The ranges closed since the last drain (oldest first by start)."""
        out, self.ranges = sorted(self.ranges, key=lambda r: r["start_perf_ns"]), []
        return out

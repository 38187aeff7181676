"""One row, the one way: one implementation of one cell (CLI) or case (ptxmoe.compare) in named phases.

    build        the implementation's launcher (compiling what it needs: NVRTC, Numba, a PTX text check)
    draw inputs  the caller draws a cell's inputs once for all its rows (RowJob.draw_inputs; same seed, same values)
    place        device copies of the inputs and poisoned outputs
    launch       one run inside an NVTX range: the checked run
    check        the outputs read back and judged (kernels.md's check, or the user's)
    time         the backend times the row (Backend.time_row: modelled on sim, measured on gpu)
    record       launches, static facts, counts, throughput, stages, sanitizer findings and the status

What differs between the CLI and the API is a RowJob (harness.contract_row.ContractRow: a registered implementation
of a contract kernel; ptxmoe.compare's UserRow: the user's kernel, make_inputs and check). One row fails alone: an
exception in any phase (a build error, a ptxsim fault, a toolchain refusal) makes that row an "error" row with its
message, and the caller goes on with the next row. Only KeyboardInterrupt escapes.
"""
from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from harness.backends.base import Backend, DeviceArray
from harness.errors import TooSlowToSimulate
from harness.nvtx_ranges import RangeRecorder
from harness.timing.row_timing import RowTiming

Launcher = Callable[[Backend, dict], object]  # launches the implementation once on device arguments


class RowJob(Protocol):
    """What one row of a sweep or of ptxmoe.compare is: the parts of the pipeline that are not the same."""

    head: dict  # the row's identity fields (key, kernel, variant, impl, preset, skew, seed, backend, ...)
    kernel: str  # for throughput's peak (harness.throughput.PEAK_FLOPS_KIND)
    variant: str | None

    def build(self, backend: Backend, inputs: dict) -> Launcher:
        """The implementation's launcher for these inputs."""

    def begin(self, backend: Backend) -> None:
        """Set the backend up for this row (e.g. its sample policy)."""

    def place(self, backend: Backend, inputs: dict) -> tuple[dict, tuple[str, ...]]:
        """(device arguments, the names of the outputs to read back)."""

    def check(self, backend: Backend, outputs: dict, inputs: dict, records: list) -> dict:
        """{ok, message, errors} of the outputs."""

    def counts(self, inputs: dict) -> tuple[int | None, int | None]:
        """(fewest bytes moved, useful FLOPs), None where unknown."""

    def annotate(self, row: dict, backend: Backend, inputs: dict, records: list) -> None:
        """Add the job's own fields (gemm_work, sampling, model_estimate...) to the row."""

    def stages(self, records: list, timing: dict) -> tuple[list[str], dict[str, float]]:
        """(each launch's stage, µs per stage)."""


@dataclass(frozen=True)
class RowSettings:
    """What every row of a run shares: static facts wanted, and how rows are timed."""

    static: bool = True
    timing: RowTiming = RowTiming()


SHOW_FINDINGS = 10  # sanitizer findings printed per row (run.json keeps them all, up to ptxsim's MAX_REPORTS)


def run_row(backend: Backend, job: RowJob, inputs: dict, settings: RowSettings, recorder: RangeRecorder,
            device_spec, fatal: tuple[type[BaseException], ...] = ()) -> dict:
    """Run, check, analyse and time one implementation on `inputs`; returns its run.json row, an "error" row (the
    exception's type and message, a traceback, static facts where they could be had) when a phase raised, or a
    "skipped" one when sim cannot sample a launch (TooSlowToSimulate). Exceptions of the `fatal` types (the caller's
    own code misbehaving, not the implementation) and KeyboardInterrupt are raised."""
    row: dict[str, Any] = dict(job.head)
    t0 = time.perf_counter()
    try:
        _phases(backend, job, inputs, settings, recorder, device_spec, row)
    except KeyboardInterrupt:
        raise
    except fatal:
        raise
    except TooSlowToSimulate as exc:  # a launch sim cannot sample (harness.sampling): the reason, not an error
        row = {**job.head, "status": "skipped", "reason": str(exc)}
    except Exception as exc:  # noqa: BLE001 - one broken implementation fails its own row, not the run
        row = error_row(job.head, exc, backend, settings.static)
    row["elapsed_s"] = time.perf_counter() - t0
    return row


def _phases(backend: Backend, job: RowJob, inputs: dict, settings: RowSettings, recorder: RangeRecorder,
            device_spec, row: dict) -> None:
    launcher = job.build(backend, inputs)  # build
    job.begin(backend)
    backend.records.clear()
    backend.sources.clear()
    args, wanted = job.place(backend, inputs)  # place
    try:
        with recorder.range(row["key"], key=row["key"], phase="check"):  # launch
            returned = launcher(backend, args)
            records = list(returned) if isinstance(returned, list) and returned else list(backend.records)
            backend.synchronize()
        outputs = {name: backend.to_host(args[name]) for name in wanted}  # check
        row["correctness"] = job.check(backend, outputs, inputs, records)
        row["launches"] = [{"name": r.name, "impl": r.impl, "grid": list(r.grid), "block": list(r.block),
                            "shared_bytes": r.shared_bytes, "host_seconds": r.host_seconds} for r in records]
        row["static"] = static_quietly(backend, settings.static)
        row["min_bytes"], row["flops"] = job.counts(inputs)
        job.annotate(row, backend, inputs, records)
        with recorder.range(row["key"], key=row["key"], phase="timing"):  # time
            times = backend.time_row(lambda a: launcher(backend, a), args, inputs, records, settings.timing)
        _record(backend, job, row, records, times, device_spec)  # record
    finally:
        for value in args.values():
            if isinstance(value, DeviceArray):  # scalars pass by value
                backend.free(value)
        backend.captured_workspace = None
        backend.reset_memory()  # sim: ptxsim never reuses freed memory; a fresh device per row


def _record(backend: Backend, job: RowJob, row: dict, records: list, times, device_spec) -> None:
    from harness.throughput import throughput

    row["timing"], row["sim_counters"] = times.timing, times.sim_counters
    row["launch_stages"], row["stages_us"] = job.stages(records, times.timing)
    counted = row["min_bytes"] is not None or row["flops"] is not None
    row["throughput"] = (throughput(job.kernel, row["min_bytes"] or 0, row["flops"] or 0, times.time_us,
                                    device_spec, job.variant) if counted else None)
    row["nsight"] = []
    ok = bool(row["correctness"]["ok"])
    row["status"] = "ok" if ok else "failed"
    if not ok:
        row["reason"] = row["correctness"]["message"]
    if backend.sanitize:
        row["sanitizer"] = sanitizer_result(backend, records)
        if row["sanitizer"]["findings"]:
            row["status"], row["reason"] = "failed", row["sanitizer"]["summary"]


def error_row(head: dict, exc: BaseException, backend: Backend | None, static: bool) -> dict:
    """The row of an implementation that raised: its type and message, a traceback, the static facts of what it
    launched (ptxas often says more than the simulator) and, on a GPU, the sticky CUDA error that ends the sweep."""
    from harness.backends.cuda_api import error_code, is_sticky

    row = {**head, "status": "error", "reason": f"{type(exc).__name__}: {exc}",
           "traceback": traceback.format_exc(limit=8)[-4000:]}
    row["static"] = static_quietly(backend, static) if backend is not None else None
    row["sticky_cuda_error"] = error_code(exc) if is_sticky(exc) else None
    return row


def sanitizer_result(backend: Backend, records) -> dict:
    """{tools, findings, summary} of a row run under sanitizers (findings: harness.backends.sim.finding_dict)."""
    findings = backend.sanitizer_findings(records)
    summary = None
    if findings:
        first = findings[0]
        summary = (f"{len(findings)} sanitizer finding(s); first: {first['text']}"
                   + (f" [launch {first['launch']}]" if first["launch"] != first["kernel"] else ""))
    return {"tools": list(backend.sanitize), "findings": findings, "summary": summary}


def static_quietly(backend: Backend, wanted: bool) -> dict | None:
    """Static facts of what a row launched (also for erroring rows); a failure to get them is recorded as
    {"error": ...}, never fatal to the row. NOTE: on gpu, launched_sources compiles the Numba kernels to PTX again:
    only when static facts are wanted."""
    if not wanted:
        return None
    from harness.static import static_facts

    try:
        return static_facts(backend.launched_sources())
    except Exception as exc:  # noqa: BLE001 - static facts are an extra, not the row's outcome
        return {"error": f"{type(exc).__name__}: {exc}", "kernels": {}, "totals": {}}


def launch_name_stages(records: list, timing: dict) -> tuple[list[str], dict[str, float]]:
    """Stages by launch name: each launch its own stage, µs summed per name (modelled, or the per-launch events of
    one extra measured run)."""
    if timing.get("basis") == "modelled":
        pairs = [(x["name"], x["modelled_s"] * 1e6) for x in timing.get("launches", []) if x.get("modelled_s")]
    else:
        pairs = [(name, us) for name, us in timing.get("launch_us", [])]
    out: dict[str, float] = {}
    for name, us in pairs:
        out[name] = out.get(name, 0.0) + us
    return [r.name for r in records], out

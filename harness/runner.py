"""The comparison sweep: every (kernel[variant], impl, preset, skew) row run, checked, timed, analysed, saved.

The sweep plans its cells (harness.sweep_plan), runs each cell's rows (harness.row_run: fresh seeded inputs, the
same seed for every path of a cell, one run, the kernels.md check, static facts, timing, throughput), and saves each
row as it finishes. A row whose estimated memory (contract.footprint) will not fit is skipped with the reason. run.json
is rewritten atomically after every row, so `--resume` continues where an interruption stopped. Each cell gets one
verdict per pair of implementations run (harness.verdicts; harness.implementations.PAIRS; PTX vs CUDA C++ is the
headline).

A kernel an implementation writes as an ablation ladder (issue #16) has one row per rung: the plain row is the top
rung, each lower rung an extra row of the same cell (same seed, same inputs) keyed by its slot ("ptx.r1"), run only
when that implementation is asked for; each rung gets verdicts against the rung below it and against the other paths.

The names the sweep's callers and tests use from the modules it is built of are re-exported here.
"""
from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable, Iterator

import numpy as np

from harness.errors import TooSlowToSimulate
from harness.implementations import IMPL_ORDER, split_slot
from harness.nvtx_ranges import RangeRecorder, run_range_name
from harness.results import RunFile
from harness.row_report import _row_status, _sampling_text, sampling_summary
from harness.row_run import (
    SHOW_FINDINGS,
    _alloc,
    _plain_row,
    _static_quietly,
    _wants_lazy,
    draw_inputs,
    run_row,
    sample_policy,
)
from harness.stages import stage_names, stage_times
from harness.sweep_plan import CompareSettings, Item, item_seed, plan
from harness.throughput import PEAK_FLOPS_KIND, device_spec_for, throughput
from harness.verdicts import _verdict, cell_pairs

__all__ = [  # the sweep, and the names of its parts that callers and tests reach through harness.runner
    "IMPL_ORDER", "PEAK_FLOPS_KIND", "SHOW_FINDINGS", "CompareSettings", "Item", "_alloc", "_find_run", "_plain_row",
    "_row_status", "_sampling_text", "_verdict", "cell_pairs", "device_spec_for", "draw_inputs", "item_seed",
    "make_progress", "pending", "plan", "record_row", "run_cell", "run_row", "run_sweep", "sample_policy",
    "sampling_summary", "set_verdicts", "stage_names", "stage_times", "throughput"]


def _find_run(impl: str, kernel: str) -> tuple[Callable | None, str]:
    """(run function, "") or (None, why it is missing: "not implemented in cpp (...)"); a lower rung's slot
    ("ptx.r2") gives the implementation's run function with rung=2."""
    from functools import partial

    from harness.implementations import implementation_table, missing_reason

    impl, rung = split_slot(impl)
    table, problem = implementation_table(impl)
    if problem:
        return None, missing_reason(impl, kernel, problem)
    if kernel not in table:
        return None, missing_reason(impl, kernel)
    return (table[kernel] if rung is None else partial(table[kernel], rung=rung)), ""


def row_need(settings: CompareSettings, item: Item):
    """The memory estimate (contract.footprint.MemoryEstimate) the runner checks before running a row of `item` on
    the settings' backend, or None where the size table does not know the kernel."""
    from contract.footprint import wants_lazy
    from harness.row_memory import row_estimate

    policy = sample_policy(settings)
    lazy = settings.backend == "sim" and _wants_lazy(wants_lazy, item)
    return row_estimate(item.kernel, item.preset, item.variant, settings.backend, lazy,
                        _sampled_blocks(policy, item.preset))


def _sampled_blocks(policy, preset) -> int | None:
    """Routing blocks a sampled GEMM launch of the row simulates (the memory estimate's bound), None = all."""
    from contract.presets import get_preset

    if policy is None or policy.off:
        return None
    return policy.for_preset(get_preset(preset)).live_blocks_bound()


def run_cell(backend, settings: CompareSettings, item: Item, impls, device_spec, recorder: RangeRecorder,
             on_start: Callable[[str, int], None] | None = None, memory_share: int = 1) -> Iterator[tuple[str, dict]]:
    """Run `impls` of one cell, yielding (impl, row) as each finishes; the inputs are drawn once for them all.

    Big inputs are drawn lazy where the backend takes them (draw_inputs). A row whose estimated memory
    (harness.row_memory, from contract.footprint) exceeds this machine's free memory / `memory_share` (the
    processes running rows at once) is not run: it gets status "skipped" and a one-line reason. Only KeyboardInterrupt
    escapes: any other exception becomes that row's "error" row.
    """
    from contract.footprint import wants_lazy
    from harness.row_memory import (
        available_bytes,
        memory_record,
        memory_skip_reason,
        peak_rss_bytes,
        reset_peak_rss,
        row_estimate,
        rss_bytes,
    )

    seed = item_seed(settings.seed, item)
    policy = sample_policy(settings)
    lazy = bool(getattr(backend, "lazy_inputs", False)) and _wants_lazy(wants_lazy, item)
    cell_inputs: dict | None = None  # drawn once per cell, shared by every path (same seed anyway)
    for impl in impls:
        run, why = _find_run(impl, item.kernel)
        if run is None:
            yield impl, _plain_row(settings, item, impl, seed, "missing", why)
            continue
        free = available_bytes()
        if free is not None and cell_inputs is not None:  # the cell's inputs are already held: this row reuses them
            free += sum(int(a.nbytes) for a in cell_inputs.values() if isinstance(a, np.ndarray))
        if settings.memory_limit is not None:  # --memory-limit: no more than that, whatever is free
            free = settings.memory_limit if free is None else min(free, settings.memory_limit)
        blocks = _sampled_blocks(policy, item.preset)
        need = row_estimate(item.kernel, item.preset, item.variant, settings.backend, lazy, blocks)
        too_big = memory_skip_reason(item.kernel, item.preset, item.variant, settings.backend,
                                     None if free is None else free // max(1, memory_share), lazy=lazy,
                                     sample_blocks=blocks, need=need)
        if too_big:
            yield impl, _plain_row(settings, item, impl, seed, "skipped", too_big)
            continue
        if on_start is not None:
            on_start(impl, seed)
        t_row = time.perf_counter()
        windowed = reset_peak_rss()
        start_rss = rss_bytes()
        try:
            if cell_inputs is None:
                cell_inputs = draw_inputs(backend, item, seed)
            row = run_row(backend, settings, item, impl, run, seed, recorder, device_spec, inputs=cell_inputs)
        except KeyboardInterrupt:
            raise
        except TooSlowToSimulate as exc:  # a launch sim cannot sample (harness.sampling): the reason, not an error
            row = _plain_row(settings, item, impl, seed, "skipped", str(exc))
            row["elapsed_s"] = time.perf_counter() - t_row
        except Exception as exc:  # noqa: BLE001 - one broken path must not stop the sweep
            row = _plain_row(settings, item, impl, seed, "error", f"{type(exc).__name__}: {exc}")
            row["traceback"] = traceback.format_exc(limit=8)[-4000:]
            row["elapsed_s"] = time.perf_counter() - t_row
            row["static"] = _static_quietly(backend, settings)
            row["sticky_cuda_error"] = _sticky_code(exc)
        row["memory"] = memory_record(need, peak_rss_bytes(), windowed, start_rss)
        yield impl, row


def set_verdicts(run_file: RunFile, settings: CompareSettings, item: Item, rows: dict[str, dict]) -> None:
    from harness.results import typed_row

    basis = "modelled" if settings.backend == "sim" else "measured"
    typed = {slot: typed_row(row) for slot, row in rows.items()}
    for pair in cell_pairs(item, typed):
        run_file.set_verdict(_verdict(item, pair, typed, basis), save=False)
    run_file.save()


def record_row(run_file: RunFile, summary: dict, row: dict, progress, ranges: list[dict]) -> None:
    """Save one finished row (and its NVTX ranges), count it in `summary`, print its progress line."""
    key = row["key"]
    summary["ran"] += 1
    if row["status"] == "missing":
        summary["missing"].append(f"{key}: {row['reason']}")
    elif row["status"] == "skipped":
        summary.setdefault("too_big", []).append(f"{key}: {row['reason']}")
    elif row["status"] != "ok":
        reason = row.get("reason") or row.get("correctness", {}).get("message", "")
        summary["failed"].append(f"{key}: {row['status']}: {reason}")
    run_file.add_ranges(ranges)
    run_file.add_row(row)
    seconds = row.get("elapsed_s")
    progress.end(key, f"{_row_status(row)}" + (f" ({seconds:.1f}s)" if seconds is not None else ""), seconds)
    for finding in (row.get("sanitizer") or {}).get("findings", [])[:SHOW_FINDINGS]:
        progress.note(f"{finding['text']} [launch {finding['launch']}]")
    if row.get("sticky_cuda_error"):
        _stop_after_sticky(run_file, row, summary)


def make_progress(settings: CompareSettings, items: list[Item], stream=None, concurrency: int = 1):
    """The sweep's Progress, with every row's predicted cost (harness.progress.predicted_cost) and class, for
    `concurrency` rows running at once."""
    from harness.progress import Progress, predicted_cost, row_class

    sample = sample_policy(settings)
    slots = [(item, slot) for item in items for slot in item.slots(settings.impls)]
    costs = {item.key(slot): predicted_cost(item.kernel, item.preset, item.variant, sample) for item, slot in slots}
    classes = {item.key(slot): row_class(item.kernel) for item, slot in slots}
    return Progress(costs, stream if stream is not None else sys.stderr, classes=classes,
                    concurrency=max(1, concurrency))


def pending(run_file: RunFile, settings: CompareSettings, items: list[Item], summary: dict, progress
            ) -> list[tuple[Item, dict[str, dict], list[str]]]:
    """(item, rows done in a resumed run, impls still to run) per cell; done rows are counted and reported."""
    out = []
    for item in items:
        done: dict[str, dict] = {}
        todo: list[str] = []
        for impl in item.slots(settings.impls):
            key = item.key(impl)
            row = run_file.row(key)
            if row is not None and run_file.is_done(key):
                done[impl] = row
                summary["skipped"] += 1
                progress.end(key, "done in the resumed run, skipped", None)
            else:
                todo.append(impl)
        out.append((item, done, todo))
    return out


def run_sweep(backend, settings: CompareSettings, run_file: RunFile, progress=None, parallel=None) -> dict:
    """Run every row not already done in `run_file`; returns {"failed": [...], "missing": [...], "ran": n, ...}.

    `parallel` (harness.parallel.ParallelSettings) runs the cells on Dask when it asks for more than one worker and
    more than one cell has rows to run; otherwise the rows run here, one after another, on `backend`.
    """
    from harness.parallel import run_parallel, wants_parallel

    items = plan(settings)
    concurrency = 1 if parallel is None or parallel.scheduler else parallel.local_workers
    progress = make_progress(settings, items, progress, concurrency)
    summary = {"failed": [], "missing": [], "too_big": [], "ran": 0, "skipped": 0}
    cells = pending(run_file, settings, items, summary, progress)
    if wants_parallel(parallel, sum(1 for _, _, todo in cells if todo)):
        run_parallel(settings, run_file, cells, summary, progress, parallel)
        run_file.doc["rows"].sort(key=_plan_order(items, settings))
    else:
        _run_serial(backend, settings, run_file, cells, summary, progress)
    run_file.doc["missing"] = summary["missing"]
    run_file.save()
    return summary


def _plan_order(items: list[Item], settings: CompareSettings):
    order = {item.key(slot): i for i, (item, slot) in enumerate((it, sl) for it in items
                                                                 for sl in it.slots(settings.impls))}
    return lambda row: order.get(row.get("key"), len(order))


def _run_serial(backend, settings: CompareSettings, run_file: RunFile, cells, summary: dict, progress) -> None:
    device_spec = device_spec_for(settings.backend, run_file.doc["environment"].get("gpu", {}).get("name"),
                                  settings.model_device)
    recorder = RangeRecorder()
    with recorder.range(run_range_name(run_file.doc["run_id"]), phase="run"):
        for item, rows, todo in cells:
            def started(impl: str, seed: int, item=item) -> None:
                progress.start(item.key(impl), f"running (seed {seed})")

            for impl, row in run_cell(backend, settings, item, todo, device_spec, recorder, on_start=started):
                rows[impl] = row
                record_row(run_file, summary, row, progress, recorder.drain())
            set_verdicts(run_file, settings, item, rows)
    run_file.add_ranges(recorder.drain())


def _sticky_code(exc: BaseException) -> str | None:
    """The CUresult name when `exc` is a sticky CUDA error (the context is unusable), else None."""
    from harness.backends.cuda_api import error_code, is_sticky

    return error_code(exc) if is_sticky(exc) else None


def _stop_after_sticky(run_file, row: dict, summary: dict) -> None:
    """Save what ran and stop the sweep: after a sticky error every later row would fail with this row's error."""
    from harness.backends.cuda_api import GpuError

    run_file.doc["missing"] = summary["missing"]
    run_file.save()
    raise GpuError(f"row {row['key']} hit {row['sticky_cuda_error']}, a sticky CUDA error: the CUDA context is "
                   f"unusable, so the sweep stops here ({summary['ran']} rows ran, saved in {run_file.run_dir}; "
                   f"later rows were not run). Fix that kernel, or leave it out with --kernels, and run again.",
                   row["sticky_cuda_error"])

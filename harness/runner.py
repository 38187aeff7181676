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

A cell's rows run in harness.cell (shared with the Dask workers of harness.parallel, which imports it, not this
module), each row through harness.row_run.run_row, the one pipeline `ptxmoe.compare` uses too.
"""
from __future__ import annotations

import sys

from harness.cell import record_row, row_need, run_cell, sample_policy, set_verdicts
from harness.implementations import IMPL_ORDER
from harness.nvtx_ranges import RangeRecorder, run_range_name
from harness.results import RunFile
from harness.sweep_plan import CompareSettings, Item, item_seed, plan
from harness.throughput import device_spec_for

__all__ = [  # the sweep, and the public names of the modules it is built of that its callers use
    "IMPL_ORDER", "CompareSettings", "Item", "item_seed", "make_progress", "pending", "plan", "record_row", "row_need",
    "run_cell", "run_sweep", "set_verdicts"]


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

"""One cell of the sweep (one kernel[variant], preset and skew): its rows run one after another on one backend, and
its verdicts; what the serial runner (harness.runner) and the Dask workers (harness.parallel) share.

A cell draws its inputs once for all its rows (the same seed for every path), checks each row's memory estimate
(contract.footprint) before running it (a row that will not fit is "skipped" with the reason), runs the row
(harness.row_run.run_row: one failing implementation fails its own row) and records the process's memory around it.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import numpy as np

from harness.backends.kinds import backend_kind
from harness.contract_row import ContractRow, draw_inputs, plain_row, wants_lazy
from harness.implementations import split_slot
from harness.nvtx_ranges import RangeRecorder
from harness.results import RunFile
from harness.row_report import _row_status
from harness.row_run import SHOW_FINDINGS, error_row, run_row
from harness.sweep_plan import CompareSettings, Item, item_seed
from harness.verdicts import _verdict, cell_pairs


def find_run(impl: str, kernel: str) -> tuple[Callable | None, str]:
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


def sample_policy(settings: CompareSettings):
    """The sweep's harness.sampling.SamplePolicy on a simulating backend (None where every CTA runs)."""
    from harness.sampling import parse_sample

    return parse_sample(settings.sample) if backend_kind(settings.backend).simulated else None


def sampled_blocks(policy, preset: str) -> int | None:
    """Routing blocks a sampled GEMM launch of the row simulates (the memory estimate's bound), None = all."""
    from contract.presets import get_preset

    if policy is None or policy.off:
        return None
    return policy.for_preset(get_preset(preset)).live_blocks_bound()


def row_need(settings: CompareSettings, item: Item):
    """The memory estimate (contract.footprint.MemoryEstimate) the runner checks before running a row of `item` on
    the settings' backend, or None where the size table does not know the kernel."""
    from harness.row_memory import row_estimate

    lazy = backend_kind(settings.backend).simulated and wants_lazy(item)
    return row_estimate(item.kernel, item.preset, item.variant, settings.backend, lazy,
                        sampled_blocks(sample_policy(settings), item.preset))


def run_cell(backend, settings: CompareSettings, item: Item, impls, device_spec, recorder: RangeRecorder,
             on_start: Callable[[str, int], None] | None = None, memory_share: int = 1,
             release: bool = False) -> Iterator[tuple[str, dict]]:
    """Run `impls` of one cell, yielding (impl, row) as each finishes; the inputs are drawn once for them all.

    Big inputs are drawn lazy where the backend takes them (draw_inputs). A row whose estimated memory
    (harness.row_memory, from contract.footprint) exceeds this machine's free memory / `memory_share` (the
    processes running rows at once) is not run: it gets status "skipped" and a one-line reason. Only KeyboardInterrupt
    escapes: any other exception becomes that row's "error" row. `release`: after each row give back what it left
    (harness.row_memory.release_memory; the drawn blocks kept for the cell's next row) and record what the process
    then holds (row["memory"]["end_rss_bytes"]): a Dask worker's figure between rows.
    """
    from harness.row_memory import (
        available_bytes,
        memory_record,
        memory_skip_reason,
        peak_rss_bytes,
        release_memory,
        reset_peak_rss,
        row_estimate,
        rss_bytes,
    )

    seed = item_seed(settings.seed, item)
    blocks = sampled_blocks(sample_policy(settings), item.preset)
    lazy = backend.lazy_inputs and wants_lazy(item)
    row_settings = settings.row_settings(getattr(device_spec, "l2_bytes", None))
    device_name = getattr(device_spec, "name", None) or settings.model_device
    cell_inputs: dict | None = None  # drawn once per cell, shared by every path (same seed anyway)
    for position, impl in enumerate(impls):
        run, why = find_run(impl, item.kernel)
        if run is None:
            yield impl, plain_row(settings, item, impl, seed, "missing", why)
            continue
        free = available_bytes()
        if free is not None and cell_inputs is not None:  # the cell's inputs are already held: this row reuses them
            free += sum(int(a.nbytes) for a in cell_inputs.values() if isinstance(a, np.ndarray))
        if settings.memory_limit is not None:  # --memory-limit: no more than that, whatever is free
            free = settings.memory_limit if free is None else min(free, settings.memory_limit)
        need = row_estimate(item.kernel, item.preset, item.variant, settings.backend, lazy, blocks)
        too_big = memory_skip_reason(item.kernel, item.preset, item.variant, settings.backend,
                                     None if free is None else free // max(1, memory_share), lazy=lazy,
                                     sample_blocks=blocks, need=need)
        if too_big:
            yield impl, plain_row(settings, item, impl, seed, "skipped", too_big)
            continue
        if on_start is not None:
            on_start(impl, seed)
        windowed = reset_peak_rss()
        start_rss = rss_bytes()
        job = ContractRow(settings, item, impl, run, seed, device_name)
        t_row, cpu_row = time.perf_counter(), time.process_time()
        try:
            if cell_inputs is None:
                cell_inputs = draw_inputs(backend, item, seed)
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001 - the inputs could not be drawn: this row's error, not the sweep's
            row = error_row(job.head, exc, None, False)
            row["elapsed_s"] = time.perf_counter() - t_row
        else:
            row = run_row(backend, job, cell_inputs, row_settings, recorder, device_spec)
        row["cpu_s"] = time.process_time() - cpu_row
        peak = peak_rss_bytes()
        end = release_memory(drop_draws=position == len(impls) - 1) if release else None
        row["memory"] = memory_record(need, peak, windowed, start_rss, end)
        yield impl, row


def set_verdicts(run_file: RunFile, settings: CompareSettings, item: Item, rows: dict[str, dict]) -> None:
    """The cell's verdicts, one per pair of its rows (harness.verdicts), saved."""
    from harness.results import typed_row

    basis = backend_kind(settings.backend).basis
    typed = {slot: typed_row(row) for slot, row in rows.items()}
    for pair in cell_pairs(item, typed):
        run_file.set_verdict(_verdict(item, pair, typed, basis, settings.device_profile), save=False)
    run_file.save()


def record_row(run_file: RunFile, summary: dict, row: dict, progress, ranges: list[dict]) -> None:
    """Save one finished row (and its NVTX ranges), count it in `summary`, print its progress line; a sticky CUDA
    error stops the sweep here (GpuError), after saving."""
    from harness.results import typed_row

    typed = typed_row(row)  # NOTE: checked against run.json's types before it is saved
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
    progress.end(key, f"{_row_status(typed)}" + (f" ({seconds:.1f}s)" if seconds is not None else ""), seconds)
    for finding in (row.get("sanitizer") or {}).get("findings", [])[:SHOW_FINDINGS]:
        progress.note(f"{finding['text']} [launch {finding['launch']}]")
    for warning in (row.get("throughput") or {}).get("warnings", []):  # harness.throughput.impossible_rates
        progress.note(f"warning: {warning}")
    if row.get("sticky_cuda_error"):
        _stop_after_sticky(run_file, row, summary)


def _stop_after_sticky(run_file: RunFile, row: dict, summary: dict) -> None:
    """Save what ran and stop the sweep: after a sticky error every later row would fail with this row's error."""
    from harness.backends.cuda_api import GpuError

    run_file.doc["missing"] = summary["missing"]
    run_file.save()
    raise GpuError(f"row {row['key']} hit {row['sticky_cuda_error']}, a sticky CUDA error: the CUDA context is "
                   f"unusable, so the sweep stops here ({summary['ran']} rows ran, saved in {run_file.run_dir}; "
                   f"later rows were not run). Fix that kernel, or leave it out with --kernels, and run again.",
                   row["sticky_cuda_error"])

"""Rows in parallel on Dask: each row (one implementation, or one rung, of one kernel/variant/preset/skew cell) is one
task, the rows predicted to cost most submitted first.

Rows are independent, so they run on `dask.distributed` workers: a LocalCluster of `workers` processes (one
thread each) on this machine, or a running cluster given by `--scheduler ADDRESS` (start one with `dask scheduler`
and `dask worker ADDRESS`). The workers build their own backend and return finished rows; this process alone writes
run.json (row by row, as cells finish), sets the verdicts and prints progress, so the rows, checks and verdicts are
those of a serial run; a cell's verdicts are set once all its rows are in. A row whose worker dies is rescheduled by
Dask on another worker (up to `allowed_failures` deaths); after that it is an "error" row, which `--resume` runs again.
Why rows and not cells: a cell runs its rows one after another, and dsv3-prefill's FP8 up GEMM cell (Numba, CUDA C++
and five PTX rungs) held 38 % of its rows' time, so one worker was still on it long after the other had run out of
work. Rows ordered by their predicted cost (harness.progress.predicted_cost, largest first) keep both
busy to the end, as longest-first scheduling does; each row draws its own inputs (keyed, so the same values).
Ctrl-C cancels what is queued and leaves the rows already finished in run.json, resumable like a serial run.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from harness.backends.kinds import backend_kind
from harness.errors import InputError

_WORKER_BACKENDS: dict = {}  # per worker process: (backend name, sanitizers) -> backend


@dataclass(frozen=True)
class ParallelSettings:
    """How to spread a sweep: `workers` local processes (0: one per core), or a running cluster at `scheduler`."""

    workers: int = 1
    scheduler: str | None = None
    allowed_failures: int = 2  # worker deaths a cell survives before its rows become "error" rows

    @property
    def local_workers(self) -> int:
        return self.workers if self.workers > 0 else (os.cpu_count() or 1)


def workers_for(workers: int | None, sim_workers: int | None, backend_name: str) -> int | None:
    """The worker count a compare run asks for: --workers as given (refused on a GPU by parallel_option), else
    --sim-workers where the backend runs rows in parallel (the simulator), and None on a GPU, where rows are timed one
    at a time. `make demo` passes --sim-workers so that one command uses both cores on the simulator and still runs
    on a GPU when one is visible."""
    if workers is not None:
        return workers
    if sim_workers is not None:
        if sim_workers < 0:
            raise InputError(f"--sim-workers {sim_workers}: expected a number of worker processes >= 1, or 0 for one "
                             f"per core")
        if backend_kind(backend_name).parallel_rows:
            return sim_workers
    return None


def parallel_option(workers: int | None, scheduler: str | None, backend_name: str) -> ParallelSettings | None:
    """ParallelSettings from --workers/--scheduler, or None for a serial run; InputError for a bad value."""
    if workers is None and not scheduler:
        return None
    if workers is not None and workers < 0:
        raise InputError(f"--workers {workers}: expected a number of worker processes >= 1, or 0 for one per core")
    if not backend_kind(backend_name).parallel_rows:
        raise InputError(f"--workers/--scheduler with --backend {backend_name}: rows on a GPU are timed one at a "
                         f"time (parallel rows would share the GPU and disturb each other's timing); expected "
                         f"--backend sim, or drop --workers/--scheduler")
    settings = ParallelSettings(workers=1 if workers is None else workers, scheduler=scheduler or None)
    return settings if settings.scheduler or settings.local_workers > 1 else None


def wants_parallel(parallel: ParallelSettings | None, cells_to_run: int) -> bool:
    """Dask only when asked for and there is more than one cell to run (one cell gains nothing from a cluster)."""
    return parallel is not None and cells_to_run > 1 and bool(parallel.scheduler or parallel.local_workers > 1)


def _worker_backend(settings):
    """This worker process's backend (built once per process and settings' backend/sanitizers)."""
    from harness.backends.select import select_backend

    key = (settings.backend, settings.sanitize)
    if key not in _WORKER_BACKENDS:
        _WORKER_BACKENDS[key] = (select_backend(settings.backend, sanitize=settings.sanitize) if settings.sanitize
                                 else select_backend(settings.backend))
    return _WORKER_BACKENDS[key]


def row_task(settings, item, impls: list[str], memory_share: int
             ) -> tuple[list[tuple[str, dict]], list[dict], tuple[str, int]]:
    """Run on a worker: the rows of `impls` (slots) of one cell, the NVTX ranges they recorded, and (this worker's
    address, its resident bytes after the rows gave back what they could): what it holds until its next row."""
    from harness.cell import run_cell
    from harness.nvtx_ranges import RangeRecorder
    from harness.row_memory import release_memory
    from harness.throughput import device_spec_for

    recorder = RangeRecorder()
    spec = device_spec_for(settings.backend, None, settings.model_device)
    rows = list(run_cell(_worker_backend(settings), settings, item, impls, spec, recorder,
                         memory_share=memory_share, release=True))
    ends = [row["memory"]["end_rss_bytes"] for _, row in rows if "end_rss_bytes" in (row.get("memory") or {})]
    # rows that did not run (missing, skipped) released nothing and recorded nothing: measured here
    held = ends[-1] if ends else (release_memory() or 0)
    return rows, recorder.drain(), (_worker_address(), int(held))


def _worker_address() -> str:
    """This Dask worker's address ("" outside a worker)."""
    try:
        from dask.distributed import get_worker

        return str(get_worker().address)
    except ValueError:
        return ""


def _open_client(parallel: ParallelSettings):
    """(client, cluster or None): a client of the running scheduler, or of a new LocalCluster."""
    import dask
    from dask.distributed import Client, LocalCluster

    if parallel.scheduler:
        try:
            return Client(parallel.scheduler, timeout="10s"), None
        except OSError as exc:
            raise InputError(f"--scheduler {parallel.scheduler}: cannot reach a Dask scheduler there ({exc}); "
                             f"expected the address `dask scheduler` prints (tcp://HOST:8786)") from None
    with dask.config.set({"distributed.scheduler.allowed-failures": parallel.allowed_failures}):
        cluster = LocalCluster(n_workers=parallel.local_workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
    return Client(cluster), cluster


def _lost_rows(settings, item, impls, exc: BaseException) -> list[tuple[str, dict]]:
    from harness.contract_row import plain_row
    from harness.sweep_plan import item_seed

    seed = item_seed(settings.seed, item)
    why = (f"the Dask worker running this row failed ({type(exc).__name__}: {exc}); it was retried and did not "
           f"finish; `ptxmoe compare --resume` runs it again")
    return [(impl, plain_row(settings, item, impl, seed, "error", why)) for impl in impls]


def _own_rss() -> int:
    """This process's resident bytes now (0 where unknown)."""
    from harness.row_memory import rss_bytes

    return rss_bytes() or 0


def _measured_rise(results) -> int:
    """The most a finished row rose over its worker's memory at its start (run.json memory: peak - start), 0 where
    not measured. NOTE: a cell's rows share its shapes, inputs and sample, so the scheduler takes the largest rise
    measured so far as the cell's other rows' rise where it is above their estimate (dsv3-decode's FP8 up GEMM on
    PTX rungs 6-10 rose 1.37-1.44 GB against 0.81 GB estimated: their item windows sample 16 routing blocks, the
    estimate's bound is 6)."""
    rises = [int(m["peak_rss_bytes"]) - int(m["start_rss_bytes"]) for _, row in results
             for m in [row.get("memory") or {}] if m.get("peak_rss_bytes") and m.get("start_rss_bytes") is not None]
    return max([0, *rises])


def _children_rss() -> int | None:
    """Resident bytes of this process's descendants now (a LocalCluster's worker processes), or None where unknown."""
    try:
        import psutil  # type: ignore[import-untyped]  # installed with dask.distributed
    except ImportError:
        return None
    total = 0
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return None
    for child in children:
        try:
            total += child.memory_info().rss
        except psutil.Error:  # exited meanwhile
            pass
    return total


def _tree_budget(memory_limit: int | None, held: dict[str, int]) -> int | None:
    """Bytes the whole process tree of a LocalCluster may hold (harness.row_budget): --memory-limit, else what it
    holds now (this process, which hosts the scheduler, the nannies and the client, and the idle workers) plus the
    free memory; None where the free memory is unknown."""
    from harness.row_memory import available_bytes

    if memory_limit:
        return int(memory_limit)
    free = available_bytes()
    return None if free is None else free + _own_rss() + sum(held.values())


def _row_rise(settings, item) -> int:
    """A row's estimated rise over what its worker holds between rows: its estimate less the process base (which the
    worker's measured figure holds already); 0 for a kernel the size table does not know."""
    from contract.footprint import PROCESS_BASE
    from harness.cell import row_need

    need = row_need(settings, item)
    return 0 if need is None else max(0, int(need.total_bytes) - PROCESS_BASE)


def run_parallel(settings, run_file, cells, summary: dict, progress, parallel: ParallelSettings) -> None:
    """Run every row still to run on Dask, the largest predicted cost first, recording rows as they finish and setting
    a cell's verdicts when its last row is in.

    On a LocalCluster the process tree must fit a memory budget (--memory-limit, else the free memory when the run
    starts plus what the tree holds then: _tree_budget): a row starts only when this process, every worker's memory
    between rows (measured after each row, harness.row_memory.release_memory) and the estimated rises of the rows
    running (harness.runner.row_need less the process base; raised to the most a row of the same cell rose, once one
    has finished), its own added, fit it (harness.row_budget.pick_row:
    when the next in line does not fit, another starts only if it would fit beside it too; a row that fits nowhere
    runs alone, and its own check skips it with the reason if the machine cannot hold it). A running cluster's
    workers may be on other machines: every row is submitted at once, each checking its own worker's free memory."""
    from dask.distributed import as_completed

    from harness.cell import record_row, set_verdicts
    from harness.row_budget import TreeMemory, pick_row
    from harness.row_memory import gib, rss_bytes

    client, cluster = _open_client(parallel)
    futures: dict = {}
    try:
        waiting: dict[str, int] = {}  # cell -> its rows not yet in
        for item, rows, todo in cells:
            if not todo:
                set_verdicts(run_file, settings, item, rows)
            if todo:
                waiting[item.verdict_key] = len(todo)
        costs = getattr(progress, "costs", {})
        queue = sorted(((item, rows, slot) for item, rows, todo in cells for slot in todo),
                       key=lambda t: -costs.get(t[0].key(t[2]), 0.0))
        local = cluster is not None
        held: dict[str, int] = {}  # worker -> its resident bytes between rows, last measured
        if local:
            held = {str(k): int(v or 0) for k, v in client.run(rss_bytes).items()}
        budget = _tree_budget(settings.memory_limit, held) if local else None
        rises: dict[str, int] = {}
        if budget is not None:
            for item, _, _ in queue:
                if item.verdict_key not in rises:
                    rises[item.verdict_key] = _row_rise(settings, item)
        running: dict = {}  # future -> the rise it was budgeted
        done = as_completed()
        where = parallel.scheduler or f"a LocalCluster of {parallel.local_workers} worker processes"
        limit = "" if budget is None else (
            f", the process tree within {gib(budget)}" + (" (--memory-limit)" if settings.memory_limit else
                                                         " (the free memory and what it holds now)"))
        print(f"running {len(queue)} rows on Dask, the largest first{limit}: {where}", file=progress.stream,
              flush=True)

        def submit_what_fits() -> None:
            while queue and (not local or len(running) < parallel.local_workers):
                pick: int | None = 0
                if budget is not None:
                    tree = TreeMemory(_own_rss(), held, list(running.values()), _children_rss())
                    pick = pick_row([rises[item.verdict_key] for item, _, _ in queue], tree, budget,
                                    parallel.local_workers - len(running))
                if pick is None:
                    return
                item, rows, slot = queue.pop(pick)
                # NOTE: the budget already counts the rows running beside it, so a row checks its estimate against
                # the whole of the free memory (memory_share 1), not a share
                future = client.submit(row_task, settings, item, [slot], 1, pure=False,
                                       key=f"row-{item.key(slot)}", priority=len(queue))
                futures[future] = (item, rows, slot)
                running[future] = rises.get(item.verdict_key, 0)
                done.add(future)

        submit_what_fits()
        for future in done:
            item, rows, slot = futures[future]
            running.pop(future, None)
            try:
                results, ranges, (worker, worker_rss) = future.result()
            except Exception as exc:  # noqa: BLE001 - a lost row becomes an error row, the sweep goes on
                results, ranges = _lost_rows(settings, item, [slot], exc), []
            else:
                if worker:
                    held[worker] = int(worker_rss)
                if item.verdict_key in rises:
                    rises[item.verdict_key] = max(rises[item.verdict_key], _measured_rise(results))
            submit_what_fits()
            for index, (impl, row) in enumerate(results):
                rows[impl] = row
                record_row(run_file, summary, row, progress, ranges if index == 0 else [])
            waiting[item.verdict_key] -= 1
            if not waiting[item.verdict_key]:
                set_verdicts(run_file, settings, item, rows)
    except KeyboardInterrupt:
        client.cancel(list(futures))
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()

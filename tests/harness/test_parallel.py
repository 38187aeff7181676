"""harness/parallel.py: rows on a real Dask LocalCluster give the rows and verdicts of a serial run."""
import io
import os
import signal

import pytest

from harness import cell, parallel, runner
from harness.errors import InputError
from harness.parallel import ParallelSettings, parallel_option, wants_parallel
from harness.results import RunFile


def _settings():
    return runner.CompareSettings(backend="sim", presets=("tiny",), skews=("balanced",), kernels=("gate", "align"),
                                  seed=4321, impls=("cpp", "ptx"), static=False)


def _sweep(tmp_path, name, parallel):
    from harness.backends.select import select_backend

    settings = _settings()
    run_file = RunFile.create(tmp_path, name, settings.as_dict(), {"backend": "sim", "gpu": {}}, command=["t"])
    summary = runner.run_sweep(select_backend("sim"), settings, run_file, progress=io.StringIO(), parallel=parallel)
    return run_file.doc, summary


def _outcome(doc):
    rows = [(r["key"], r["status"], r["seed"], r["correctness"]["ok"], r["min_bytes"], r["flops"]) for r in doc["rows"]]
    verdicts = sorted((v["key"], v["verdict"], round(v["speedup"], 9)) for v in doc["verdicts"])
    return rows, verdicts


def _die_once(marker):
    """A row task that kills its worker process the first time it runs anywhere."""
    def task(*args):
        from harness.parallel import row_task

        if not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        return row_task(*args)
    return task


@pytest.mark.sim
def test_two_worker_local_cluster_matches_a_serial_run_even_when_a_worker_dies(tmp_path, monkeypatch):
    """One real LocalCluster (2 processes): the first row's worker is killed, Dask reruns the row elsewhere, and
    the rows (plan order, seeds, checks) and verdicts equal a serial run's."""
    from harness import parallel

    serial, _ = _sweep(tmp_path, "serial", None)
    monkeypatch.setattr(parallel, "row_task", _die_once(str(tmp_path / "died")))
    dask_doc, summary = _sweep(tmp_path, "dask", ParallelSettings(workers=2))
    assert (tmp_path / "died").exists()  # a worker did die
    assert summary["ran"] == 4 and not summary["failed"]
    assert _outcome(dask_doc) == _outcome(serial)
    assert [r["status"] for r in serial["rows"]] == ["ok"] * 4 and len(serial["verdicts"]) == 2


def test_options():
    assert parallel_option(None, None, "sim") is None
    assert parallel_option(1, None, "sim") is None  # one worker: the serial path
    assert parallel_option(3, None, "sim") == ParallelSettings(workers=3)
    assert parallel_option(None, "tcp://h:8786", "sim").scheduler == "tcp://h:8786"
    with pytest.raises(InputError, match="--workers -1"):
        parallel_option(-1, None, "sim")
    with pytest.raises(InputError, match="timed one at a time"):
        parallel_option(2, None, "gpu")
    assert not wants_parallel(ParallelSettings(workers=4), 1) and wants_parallel(ParallelSettings(workers=4), 2)


@pytest.mark.sim
def test_ctrl_c_during_a_parallel_run_leaves_a_resumable_run(tmp_path, monkeypatch):
    """KeyboardInterrupt after the first row is saved: it reaches the caller (the CLI saves the run as interrupted),
    the cluster is closed, and a resumed run (serial here) finishes the other rows."""
    from harness.backends.select import select_backend
    from harness.progress import Progress

    settings = _settings()
    run_file = RunFile.create(tmp_path, "ctrl-c", settings.as_dict(), {"backend": "sim", "gpu": {}}, command=["t"])
    real_end = Progress.end

    def end_then_interrupt(self, key, text, seconds):
        real_end(self, key, text, seconds)
        raise KeyboardInterrupt

    monkeypatch.setattr(Progress, "end", end_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        runner.run_sweep(select_backend("sim"), settings, run_file, progress=io.StringIO(),
                         parallel=ParallelSettings(workers=2))
    monkeypatch.setattr(Progress, "end", real_end)
    saved = RunFile.load(tmp_path / "ctrl-c")
    assert len(saved.doc["rows"]) == 1 and saved.doc["rows"][0]["status"] == "ok"
    runner.run_sweep(select_backend("sim"), settings, saved, progress=io.StringIO())
    assert sorted(r["status"] for r in saved.doc["rows"]) == ["ok"] * 4 and len(saved.doc["verdicts"]) == 2


class _Done:
    def __init__(self, key, value):
        self.key, self.value = key, value

    def result(self):
        return self.value


class _RecordingClient:
    """A Dask client stand-in: runs each task when submitted and logs ("submit", key, priority)."""

    def __init__(self, log):
        self.log = log

    def submit(self, fn, *args, key, priority, pure):
        self.log.append(("submit", key, priority))
        return _Done(key, fn(*args))

    def cancel(self, futures):
        pass

    def run(self, fn):  # Client.run: each worker's answer (none here: the tasks run in this process)
        return {}

    def close(self):
        pass


class _InOrder:
    """dask.distributed.as_completed stand-in: futures finish in the order they were added; logs ("done", key)."""

    def __init__(self, log):
        self.log, self.futures = log, []

    def add(self, future):
        self.futures.append(future)

    def __iter__(self):
        while self.futures:
            future = self.futures.pop(0)
            self.log.append(("done", future.key))
            yield future


class _Cluster:
    def close(self):
        pass


def _fake_sweep(tmp_path, monkeypatch, settings, workers, local):
    import dask.distributed

    from harness import parallel
    from harness.backends.select import select_backend

    log = []
    monkeypatch.setattr(parallel, "_open_client", lambda p: (_RecordingClient(log), _Cluster() if local else None))
    monkeypatch.setattr(dask.distributed, "as_completed", lambda: _InOrder(log))
    monkeypatch.setattr(parallel, "_worker_backend", lambda settings: select_backend("sim"))
    run_file = RunFile.create(tmp_path, "rows", settings.as_dict(), {"backend": "sim", "gpu": {}}, command=["t"])
    runner.run_sweep(select_backend("sim"), settings, run_file, progress=io.StringIO(),
                     parallel=ParallelSettings(workers=workers))
    return run_file, log


def _gemm_and_gate(**kw):
    return runner.CompareSettings(backend="sim", presets=("tiny",), skews=("balanced",),
                                  kernels=("gate", "grouped_gemm"), seed=4321, impls=("cpp", "ptx"), static=False,
                                  **kw)


def test_rows_are_tasks_the_costliest_first_and_verdicts_wait_for_a_cells_last_row(tmp_path, monkeypatch):
    """Each row is its own task, submitted by predicted cost (a GEMM's rows before gate's; a running cluster takes
    them all at once), and every cell's verdicts are set once its rows are in, as in a serial run."""
    run_file, log = _fake_sweep(tmp_path, monkeypatch, _gemm_and_gate(), workers=2, local=False)
    keys = [key for what, key, *_ in log if what == "submit"]
    assert len(keys) == 6 and all(k.startswith("row-") for k in keys)
    assert all("grouped_gemm" in k for k in keys[:4]) and all("gate" in k for k in keys[4:])
    assert [e[0] for e in log[:6]] == ["submit"] * 6  # all at once
    assert sorted(v["key"] for v in run_file.doc["verdicts"]) == [
        "gate/tiny/balanced/ptx-vs-cpp", "grouped_gemm[down]/tiny/balanced/ptx-vs-cpp",
        "grouped_gemm[up]/tiny/balanced/ptx-vs-cpp"]
    assert all(v["verdict"] is not None for v in run_file.doc["verdicts"])


def test_a_local_cluster_runs_rows_whose_estimates_fit_the_memory_limit_together(tmp_path, monkeypatch):
    """--memory-limit 8 GB, 2 workers, GEMM rows estimated at 5 GB and gate rows at 1 GB: never two GEMM rows at
    once, a gate row beside a GEMM row when one is waiting, never more rows than workers; every row still runs."""
    from contract.footprint import MemoryEstimate

    sizes = {"grouped_gemm": 5 * 10**9, "gate": 10**9}
    monkeypatch.setattr(cell, "row_need", lambda settings, item: MemoryEstimate(
        item.kernel, item.preset, sizes[item.kernel], 0, 0, 0, False))
    monkeypatch.setattr("contract.footprint.PROCESS_BASE", 0)
    monkeypatch.setattr(parallel, "_own_rss", lambda: 0)
    run_file, log = _fake_sweep(tmp_path, monkeypatch, _gemm_and_gate(memory_limit=8 * 10**9), workers=2,
                                local=True)
    pairs, most = _pairs_running(log)
    assert most == 2 and ["gemm", "gemm"] not in pairs and ["gate", "gemm"] in pairs
    assert len([e for e in log if e[0] == "submit"]) == 6
    assert [r["status"] for r in run_file.doc["rows"]] == ["ok"] * 6


def _pairs_running(log):
    """The sets of rows running after each submit ("gemm" / "gate"), and the most at once."""
    running, most, pairs = set(), 0, []
    for what, key, *_ in log:
        if what == "submit":
            running.add(key)
            pairs.append(sorted("gemm" if "gemm" in k else "gate" for k in running))
        else:
            running.discard(key)
        most = max(most, len(running))
    return pairs, most


def test_the_memory_limit_counts_the_process_that_hosts_the_scheduler_and_nannies(tmp_path, monkeypatch):
    """--memory-limit is what the whole tree may take: this process (scheduler, nannies, client: 2.5 GB here) counts
    in it, so 8 GB leaves 5.5 GB and a 5 GB GEMM row runs with nothing beside it. Without a limit the tree may take
    the free memory plus what it holds already (this process and the idle workers)."""
    from contract.footprint import MemoryEstimate

    sizes = {"grouped_gemm": 5 * 10**9, "gate": 10**9}
    monkeypatch.setattr(cell, "row_need", lambda settings, item: MemoryEstimate(
        item.kernel, item.preset, sizes[item.kernel], 0, 0, 0, False))
    monkeypatch.setattr("contract.footprint.PROCESS_BASE", 0)
    monkeypatch.setattr(parallel, "_own_rss", lambda: 25 * 10**8)
    run_file, log = _fake_sweep(tmp_path, monkeypatch, _gemm_and_gate(memory_limit=8 * 10**9), workers=2,
                                local=True)
    pairs, most = _pairs_running(log)
    assert ["gate", "gemm"] not in pairs and ["gemm", "gemm"] not in pairs and most == 2  # the gate rows pair up
    assert [r["status"] for r in run_file.doc["rows"]] == ["ok"] * 6
    assert parallel._tree_budget(8 * 10**9, {"w": 10**9}) == 8 * 10**9
    monkeypatch.setattr("harness.row_memory.available_bytes", lambda: 7 * 10**9)
    assert parallel._tree_budget(None, {"a": 10**9, "b": 2 * 10**9}) == 125 * 10**8
    monkeypatch.setattr("harness.row_memory.available_bytes", lambda: None)
    assert parallel._tree_budget(None, {}) is None


def test_what_a_worker_holds_between_rows_counts_against_the_budget(tmp_path, monkeypatch):
    """Workers report what they hold after each row (1.5 GB each here, as a dsv3 worker held before it gave memory
    back): with 8 GB for the tree, 3 GB of it held, a 5 GB GEMM row runs alone (5 + 3 = 8) and no gate row starts
    beside it; the row tasks return (worker, bytes) and the scheduler keeps the last figure per worker."""
    from contract.footprint import MemoryEstimate

    sizes = {"grouped_gemm": 5 * 10**9, "gate": 10**9}
    monkeypatch.setattr(cell, "row_need", lambda settings, item: MemoryEstimate(
        item.kernel, item.preset, sizes[item.kernel], 0, 0, 0, False))
    monkeypatch.setattr("contract.footprint.PROCESS_BASE", 0)
    monkeypatch.setattr(parallel, "_own_rss", lambda: 0)
    monkeypatch.setattr(parallel, "_worker_address", lambda: "w1")
    monkeypatch.setattr("harness.row_memory.release_memory", lambda drop_draws=True: 15 * 10**8)
    monkeypatch.setattr(_RecordingClient, "run", lambda self, fn: {"w0": 15 * 10**8, "w1": 15 * 10**8})
    run_file, log = _fake_sweep(tmp_path, monkeypatch, _gemm_and_gate(memory_limit=8 * 10**9), workers=2,
                                local=True)
    pairs, most = _pairs_running(log)
    assert ["gate", "gemm"] not in pairs and ["gemm", "gemm"] not in pairs and most == 2  # gate rows pair up
    assert [r["status"] for r in run_file.doc["rows"]] == ["ok"] * 6
    assert all(r["memory"]["end_rss_bytes"] == 15 * 10**8 for r in run_file.doc["rows"])
    assert all(r["cpu_s"] >= 0 for r in run_file.doc["rows"])


def test_sim_workers_apply_on_the_simulator_only():
    """make demo's --sim-workers: both cores on the simulator, and the same command still runs on a GPU (rows timed one
    at a time there), where --workers itself is refused."""
    assert parallel.workers_for(None, 2, "sim") == 2
    assert parallel.workers_for(None, 2, "gpu") is None
    assert parallel.workers_for(3, 2, "sim") == 3  # an explicit --workers wins
    assert parallel.workers_for(None, None, "sim") is None
    assert parallel_option(parallel.workers_for(None, 2, "gpu"), None, "gpu") is None
    with pytest.raises(InputError, match="--sim-workers -1"):
        parallel.workers_for(None, -1, "gpu")


def test_sim_memory_limit_applies_on_the_simulator_only():
    """make demo's --sim-memory-limit: the tree's budget on the simulator; on a GPU (rows hold their inputs whole on
    the host) it is ignored, where --memory-limit itself applies; a bad size names the option it came from."""
    import argparse

    from harness.commands.compare_cmd import build_settings

    def args(**kw):
        base = dict(preset=None, shape=None, skew=None, kernels="gate", impls="ptx", seed=1, no_static=True,
                    budget=2.0, sanitize=None, sample=None, memory_limit=None, model_device=None)
        return argparse.Namespace(**{**base, **kw})

    assert build_settings(args(sim_memory_limit="3.5GB"), "sim").memory_limit == 35 * 10**8
    assert build_settings(args(sim_memory_limit="3.5GB"), "gpu").memory_limit is None
    assert build_settings(args(sim_memory_limit="3.5GB", memory_limit="8GB"), "sim").memory_limit == 8 * 10**9
    assert build_settings(args(memory_limit="8GB"), "gpu").memory_limit == 8 * 10**9
    with pytest.raises(InputError, match="--sim-memory-limit"):
        build_settings(args(sim_memory_limit="lots"), "sim")


def test_a_cells_measured_rise_replaces_a_lower_estimate_for_its_rows_still_waiting(tmp_path, monkeypatch):
    """Rows estimated at 1 GB that rise 5 GB (as measured: peak - start), budget 5.5 GB: two start together at
    first; a row started once a row of its cell has finished (so counted at 5 GB) never runs beside another."""
    from contract.footprint import MemoryEstimate
    from harness import row_memory

    monkeypatch.setattr(cell, "row_need", lambda settings, item: MemoryEstimate(
        item.kernel, item.preset, 10**9, 0, 0, 0, False))
    monkeypatch.setattr("contract.footprint.PROCESS_BASE", 0)
    monkeypatch.setattr(parallel, "_own_rss", lambda: 0)
    monkeypatch.setattr(parallel, "_children_rss", lambda: 0)
    monkeypatch.setattr(row_memory, "rss_bytes", lambda: 10**8)
    monkeypatch.setattr(row_memory, "peak_rss_bytes", lambda: 10**8 + 5 * 10**9)
    settings = runner.CompareSettings(backend="sim", presets=("tiny",), skews=("balanced",), kernels=("gate", "align"),
                                      seed=4321, impls=("numba", "cpp", "ptx"), static=False,
                                      memory_limit=55 * 10**8)
    run_file, log = _fake_sweep(tmp_path, monkeypatch, settings, workers=2, local=True)
    cell_of = {key: key.split("/")[0].removeprefix("row-") for _, key, *_ in log}
    running, finished_cells, learned, most = set(), set(), set(), 0
    for what, key, *_ in log:
        if what == "submit":
            running.add(key)
            if cell_of[key] in finished_cells:
                learned.add(key)
            assert len(running) == 1 or not (running & learned), running
            most = max(most, len(running))
        else:
            running.discard(key)
            finished_cells.add(cell_of[key])
    assert most == 2 and learned and len([e for e in log if e[0] == "submit"]) == 6
    assert [r["status"] for r in run_file.doc["rows"]] == ["ok"] * 6
    assert parallel._measured_rise([("ptx", {"memory": {"peak_rss_bytes": 3, "start_rss_bytes": 1}}),
                                    ("cpp", {"status": "missing"})]) == 2

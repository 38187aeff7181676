"""The sweep runner on a fake in-memory backend: rows, checks, missing paths, verdicts, stages, resume, run.json."""
import io
import json
from types import SimpleNamespace

import numpy as np
import pytest

from contract.kernels import get_kernel
from harness import cell, runner
from harness.backends.base import Backend, DeviceArray, LaunchRecord
from harness.results import SCHEMA_VERSION, RunFile, typed_row
from harness.row_report import _row_status
from harness.timing.stats import verdict_of
from ptxsim.model.interval_table import speedup_interval, version_fits

NOP_PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry nop()
{
    ret;
}
"""


class FakeBackend(Backend):
    """Host memory standing in for a device; launches record fake ptxsim-style counters."""

    name = "sim"

    def __init__(self):
        self.mem, self.next, self.records, self.sources, self.freed = {}, 1 << 20, [], {}, 0

    def to_device(self, host):
        self.next += 4096
        self.mem[self.next] = np.ascontiguousarray(host).copy()
        return DeviceArray(host.shape, host.dtype, self.next)

    def empty(self, shape, dtype, fill_byte=0xFF):
        arr = np.empty(shape, dtype)
        arr.view(np.uint8).fill(fill_byte)
        return self.to_device(arr)

    def to_host(self, array):
        return self.mem[array.addr].copy()

    def free(self, array):
        self.freed += 1
        del self.mem[array.addr]

    def launch_ptx(self, ptx, entry, grid, block, params, shared_bytes=0, tag=""):
        metrics = {"launch__grid_size": grid, "launch__block_size": block, "launch__thread_count": grid * block,
                   "smsp__inst_executed.sum": 1000 * grid, "dram__bytes_read.sum": 4096.0 * grid,
                   "dram__bytes_write.sum": 1024.0 * grid}
        rec = LaunchRecord(tag or entry, "ptx", (grid, 1, 1), (block, 1, 1), 0, 1e-3, SimpleNamespace(metrics=metrics))
        self.records.append(rec)
        self.sources[rec.name] = (ptx, entry)
        return rec

    def launched_sources(self):
        return dict(self.sources)


def fake_run(kernel, wrong=False, grid=2, calls=None, stages=("only",)):
    """A 'kernel path' that writes the reference answer (or a corrupted one) and launches one nop per stage."""
    spec = get_kernel(kernel)

    def run(backend, args, preset, **params):
        if calls is not None:
            calls.append(kernel)
        inputs = {n: backend.mem[args[n].addr] for n in spec.inputs if n in args}
        ref = spec.reference(inputs, preset, **params)
        for out in spec.output_specs(preset, inputs):
            value = np.asarray(ref[out.name]).astype(out.dtype)
            if wrong and out.name == spec.output_specs(preset, inputs)[0].name:
                value = value.copy()
                value.reshape(-1)[0] = value.reshape(-1)[0] + 1
            dest = backend.mem[args[out.name].addr]
            dest[...] = value if value.shape == dest.shape else dest
            if value.shape != dest.shape:  # rows beyond total_padded stay poisoned
                dest[: value.shape[0]] = value
        return [backend.launch_ptx(NOP_PTX, "nop", grid * (i + 1), 32, [], tag=s) for i, s in enumerate(stages)]

    return run


def _settings(kernels, **kw):
    """Two implementations (numba, ptx) unless `impls` says otherwise: one verdict per cell, ptx-vs-numba."""
    return runner.CompareSettings(backend="sim", presets=("tiny",), skews=("balanced",), kernels=tuple(kernels),
                                  seed=kw.pop("seed", 1234), impls=kw.pop("impls", ("numba", "ptx")), **kw)


def _run_file(tmp_path, settings):
    return RunFile.create(tmp_path, "test-run", settings.as_dict(), {"backend": "sim", "gpu": {}}, command=["t"])


def test_rows_verdicts_and_missing(tmp_path, monkeypatch, seed):
    table = {("numba", "gate"): fake_run("gate", grid=4), ("ptx", "gate"): fake_run("gate", grid=2),
             ("ptx", "align"): fake_run("align", wrong=True)}
    monkeypatch.setattr(cell, "find_run", lambda impl, k: (table.get((impl, k)), "" if (impl, k) in table
                                                              else f"{impl} has no {k}"))
    settings = _settings(["gate", "align"], seed=seed)
    backend = FakeBackend()
    run_file = _run_file(tmp_path, settings)
    summary = runner.run_sweep(backend, settings, run_file, progress=open("/dev/null", "w"))
    doc = json.loads((tmp_path / "test-run" / "run.json").read_text())
    assert doc["schema_version"] == SCHEMA_VERSION
    rows = {r["key"]: r for r in doc["rows"]}
    assert set(rows) == {"gate/numba/tiny/balanced", "gate/ptx/tiny/balanced", "align/numba/tiny/balanced",
                         "align/ptx/tiny/balanced"}
    gate = rows["gate/ptx/tiny/balanced"]
    assert gate["status"] == "ok" and gate["correctness"]["ok"]
    assert gate["seed"] == rows["gate/numba/tiny/balanced"]["seed"]  # both paths get the same inputs
    assert gate["static"]["kernels"]["only"]["resources"]["registers"] >= 1  # ptxas ran on the launched PTX
    assert gate["sim_counters"]["total"]["dram__bytes_read.sum"] == 4096.0 * 2
    t = gate["timing"]
    assert t["basis"] == "modelled" and t["modelled_us"] > 0 and t["launches"][0]["occupancy"]["blocks_per_sm"] >= 1
    assert gate["throughput"]["achieved_gbps"] == pytest.approx(gate["min_bytes"] / (t["modelled_us"] * 1e-6) / 1e9)
    # the wrong align is a recorded failure; the missing numba align is "missing" with its reason
    assert rows["align/ptx/tiny/balanced"]["status"] == "failed"
    assert "counts: 1 mismatches" in rows["align/ptx/tiny/balanced"]["correctness"]["message"]
    assert rows["align/numba/tiny/balanced"] == {**rows["align/numba/tiny/balanced"], "status": "missing",
                                                "reason": "numba has no align"}
    assert summary["failed"] and summary["missing"] == ["align/numba/tiny/balanced: numba has no align"]
    verdicts = {v["key"]: v for v in doc["verdicts"]}
    g = verdicts["gate/tiny/balanced/ptx-vs-numba"]
    assert g["basis"] == "modelled" and g["speedup"] == pytest.approx(
        rows["gate/numba/tiny/balanced"]["timing"]["modelled_us"] / t["modelled_us"])
    align = verdicts["align/tiny/balanced/ptx-vs-numba"]
    assert align["verdict"] is None and "numba missing (numba has no align)" in align["reason"]
    assert "ptx failed" in align["reason"]
    names = [r["name"] for r in doc["nvtx_ranges"]]
    assert "gate/ptx/tiny/balanced" in names and names[-1] == "run-test-run"
    assert all(r["end_ns"] >= r["start_ns"] for r in doc["nvtx_ranges"])
    assert backend.mem == {}  # every device array freed


def test_layer_stage_breakdown(tmp_path, monkeypatch):
    launches = ("ptx_gate", "ptx_align", "permute_k", "grouped_gemm[256x256]", "swiglu", "gemm_bf16", "combine",
                "act_quant_x", "mystery")
    monkeypatch.setattr(cell, "find_run", lambda impl, k: (fake_run(k, stages=launches), ""))
    settings = _settings(["layer"], impls=("ptx",))
    run_file = _run_file(tmp_path, settings)
    runner.run_sweep(FakeBackend(), settings, run_file, progress=open("/dev/null", "w"))
    row = run_file.row("layer[bf16]/ptx/tiny/balanced")
    assert row["status"] == "ok", row.get("correctness")
    stages = ["gate", "align", "permute", "grouped_gemm.up", "swiglu", "grouped_gemm.down", "combine", "act_quant",
              "mystery"]
    assert row["launch_stages"] == stages
    modelled = {launch["name"]: launch["modelled_s"] * 1e6 for launch in row["timing"]["launches"]}
    assert row["stages_us"] == pytest.approx({s: modelled[n] for s, n in zip(stages, launches, strict=True)})
    assert sum(row["stages_us"].values()) == pytest.approx(row["timing"]["modelled_us"])


def test_interrupted_run_resumes_skipping_done_rows(tmp_path, monkeypatch):
    calls = []
    state = {"interrupt_at": 3}

    def find(impl, kernel):
        inner = fake_run(kernel, calls=calls)

        def run(*a, **kw):
            if len(calls) + 1 == state["interrupt_at"]:
                calls.append("interrupt")
                raise KeyboardInterrupt
            return inner(*a, **kw)
        return run, ""

    monkeypatch.setattr(cell, "find_run", find)
    settings = _settings(["gate", "align", "act_quant"])
    run_file = _run_file(tmp_path, settings)
    with pytest.raises(KeyboardInterrupt):
        runner.run_sweep(FakeBackend(), settings, run_file, progress=open("/dev/null", "w"))
    saved = RunFile.load(tmp_path / "test-run")  # what is on disk after the interruption
    assert [r["key"] for r in saved.doc["rows"]] == ["gate/numba/tiny/balanced", "gate/ptx/tiny/balanced"]
    first_rows = json.dumps(saved.doc["rows"])
    state["interrupt_at"] = -1
    calls.clear()
    summary = runner.run_sweep(FakeBackend(), settings, saved, progress=open("/dev/null", "w"))
    assert calls == ["align", "align", "act_quant", "act_quant"]  # the two gate rows were not re-run
    assert summary["skipped"] == 2 and summary["ran"] == 4
    final = RunFile.load(tmp_path / "test-run")
    assert len(final.doc["rows"]) == 6 and json.dumps(final.doc["rows"][:2]) == first_rows
    assert {v["key"] for v in final.doc["verdicts"]} == {"gate/tiny/balanced/ptx-vs-numba",
                                                         "align/tiny/balanced/ptx-vs-numba",
                                                         "act_quant/tiny/balanced/ptx-vs-numba"}


def test_kernel_exception_is_an_error_row_and_sweep_goes_on(tmp_path, monkeypatch):
    def boom(backend, args, preset, **params):
        raise RuntimeError("ptxsim: unsupported instruction `foo.bar` at PTX line 12")

    monkeypatch.setattr(cell, "find_run", lambda impl, k: (boom if impl == "ptx" else fake_run(k), ""))
    settings = _settings(["gate"])
    run_file = _run_file(tmp_path, settings)
    backend = FakeBackend()
    summary = runner.run_sweep(backend, settings, run_file, progress=open("/dev/null", "w"))
    row = run_file.row("gate/ptx/tiny/balanced")
    assert row["status"] == "error" and "foo.bar" in row["reason"] and "RuntimeError" in row["traceback"]
    assert run_file.row("gate/numba/tiny/balanced")["status"] == "ok"
    assert len(summary["failed"]) == 1 and backend.mem == {}
    assert not run_file.is_done("gate/ptx/tiny/balanced")  # error rows are re-run on --resume


def test_a_build_error_fails_its_row_alone_and_the_others_get_their_verdict(tmp_path, monkeypatch):
    """cpp's NVRTC refuses its source: that row is an error with the compiler's message; numba and ptx run, are
    checked, and their pair gets a verdict; the pairs with cpp say why they have none."""
    from contract.errors import BuildError

    def refused(backend, args, preset, **params):
        raise BuildError("gate.cu(3): error: identifier \"nope\" is undefined")

    monkeypatch.setattr(cell, "find_run", lambda impl, k: (refused if impl == "cpp" else fake_run(k), ""))
    settings = _settings(["gate"], impls=("numba", "cpp", "ptx"))
    run_file = _run_file(tmp_path, settings)
    runner.run_sweep(FakeBackend(), settings, run_file, progress=open("/dev/null", "w"))
    cpp = run_file.row("gate/cpp/tiny/balanced")
    assert cpp["status"] == "error" and cpp["reason"].startswith("BuildError: gate.cu(3): error: identifier")
    assert {run_file.row(f"gate/{i}/tiny/balanced")["status"] for i in ("numba", "ptx")} == {"ok"}
    verdicts = {v["pair"]: v for v in run_file.doc["verdicts"]}
    assert verdicts["ptx-vs-numba"]["speedup"] > 0 and verdicts["ptx-vs-numba"]["verdict"] in ("FASTER", "SAME",
                                                                                               "SLOWER")
    assert "cpp error (BuildError" in verdicts["ptx-vs-cpp"]["reason"] and verdicts["ptx-vs-cpp"]["speedup"] is None


def test_a_launch_too_slow_to_simulate_skips_its_row_with_the_reason(tmp_path, monkeypatch):
    """harness.sampling refuses a persistent GEMM it cannot sample: the row is "skipped" (not an error) with the
    reason, its partner row still runs, and no verdict is claimed for the cell."""
    from harness.errors import TooSlowToSimulate

    def persistent(backend, args, preset, **params):
        raise TooSlowToSimulate("grouped_gemm_fp8_ws: a persistent GEMM launch ... run it on a GPU (--backend gpu)")

    monkeypatch.setattr(cell, "find_run", lambda impl, k: (persistent if impl == "ptx" else fake_run(k), ""))
    settings = _settings(["gate"])
    run_file = _run_file(tmp_path, settings)
    summary = runner.run_sweep(FakeBackend(), settings, run_file, progress=open("/dev/null", "w"))
    row = run_file.row("gate/ptx/tiny/balanced")
    assert row["status"] == "skipped" and "--backend gpu" in row["reason"] and "traceback" not in row
    assert run_file.row("gate/numba/tiny/balanced")["status"] == "ok" and summary["failed"] == []
    assert summary["too_big"] and run_file.doc["verdicts"][0]["speedup"] is None
    assert _row_status(typed_row(row)).startswith("SKIPPED (grouped_gemm_fp8_ws: a persistent GEMM")  # not "FAILED"


def _fake_package(name: str, kernels: dict):
    """A stand-in implementation package: a module whose IMPLEMENTATION registers `kernels` under `name`."""
    import types

    from contract.registry import Implementation

    module = types.ModuleType(f"fake_{name}_impl")
    module.IMPLEMENTATION = Implementation(name=name, language=f"fake {name}", kernels=kernels)
    return module


def test_three_implementations_give_three_pairwise_verdicts(tmp_path, monkeypatch):
    """numba, cpp and ptx found through contract.registry.Implementation; cpp lacks align: a clear missing row."""
    import sys

    packages = {"cuda_impl": _fake_package("numba", {"gate": fake_run("gate", stages=("a", "b", "c")),
                                                     "align": fake_run("align")}),
                "cpp_impl": _fake_package("cpp", {"gate": fake_run("gate", stages=("a", "b"))}),
                "ptx_impl": _fake_package("ptx", {"gate": fake_run("gate"), "align": fake_run("align")})}
    for name, module in packages.items():
        monkeypatch.setitem(sys.modules, name, module)
    settings = _settings(["gate", "align"], impls=("numba", "cpp", "ptx"))  # the three faked packages
    run_file = _run_file(tmp_path, settings)
    summary = runner.run_sweep(FakeBackend(), settings, run_file, progress=io.StringIO())
    assert [r["key"] for r in run_file.doc["rows"]] == [
        "gate/numba/tiny/balanced", "gate/cpp/tiny/balanced", "gate/ptx/tiny/balanced",
        "align/numba/tiny/balanced", "align/cpp/tiny/balanced", "align/ptx/tiny/balanced"]
    missing = run_file.row("align/cpp/tiny/balanced")
    assert missing["status"] == "missing" and missing["reason"].startswith("not implemented in cpp")
    assert "cpp_impl registers no align kernel" in missing["reason"]
    assert summary["missing"] == [f"align/cpp/tiny/balanced: {missing['reason']}"]
    us = {impl: run_file.row(f"gate/{impl}/tiny/balanced")["timing"]["modelled_us"]
          for impl in ("numba", "cpp", "ptx")}
    assert us["numba"] > us["cpp"] > us["ptx"]  # more launches, more modelled time
    verdicts = {v["key"]: v for v in run_file.doc["verdicts"]}
    assert set(verdicts) == {f"{cell}/{pair}" for cell in ("gate/tiny/balanced", "align/tiny/balanced")
                             for pair in ("ptx-vs-cpp", "ptx-vs-numba", "cpp-vs-numba")}
    for pair, (impl, base) in {"ptx-vs-cpp": ("ptx", "cpp"), "ptx-vs-numba": ("ptx", "numba"),
                               "cpp-vs-numba": ("cpp", "numba")}.items():
        v = verdicts[f"gate/tiny/balanced/{pair}"]
        assert (v["impl"], v["baseline"], v["cell"]) == (impl, base, "gate/tiny/balanced")
        assert v["speedup"] == pytest.approx(us[base] / us[impl]) and v["speedup"] > 1
        # the model's 95% prediction interval (its committed paired errors, same limiter on both sides)
        assert (v["interval"], v["confidence"], v["model_version"], v["limiter_split"]) == (
            "prediction", 0.95, "v1", "same_limiter")
        assert (v["ci_lo"], v["ci_hi"]) == pytest.approx(speedup_interval(v["speedup"], True, version_fits("v1")))
        assert v["verdict"] == verdict_of(v["ci_lo"], v["ci_hi"]) and v["verdict"] in ("FASTER", "UNDECIDED")
        assert v["headline"] == (pair == "ptx-vs-cpp")
    # the ptx row launches 1 nop to numba's 3: a 3x modelled difference the model's interval can call
    assert verdicts["gate/tiny/balanced/ptx-vs-numba"]["verdict"] == "FASTER"
    # the same fake work, the same PTX on both: the same time, not a modelled guess ([1, 1], SAME)
    same = verdicts["align/tiny/balanced/ptx-vs-numba"]
    assert (same["verdict"], same["ci_lo"], same["ci_hi"], same["reason"]) == ("SAME", 1.0, 1.0,
                                                                              "the same PTX on both sides")
    for pair in ("ptx-vs-cpp", "cpp-vs-numba"):
        v = verdicts[f"align/tiny/balanced/{pair}"]
        assert v["verdict"] is None and "cpp missing (not implemented in cpp" in v["reason"]


def test_a_package_registering_another_name_is_missing_not_a_crash(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "cpp_impl", _fake_package("cuda", {"gate": fake_run("gate")}))
    monkeypatch.setitem(sys.modules, "ptx_impl", _fake_package("ptx", {"gate": fake_run("gate")}))
    settings = _settings(["gate"], impls=("cpp", "ptx"))
    run_file = _run_file(tmp_path, settings)
    runner.run_sweep(FakeBackend(), settings, run_file, progress=io.StringIO())
    row = run_file.row("gate/cpp/tiny/balanced")
    assert row["status"] == "missing" and "registers itself as 'cuda', expected 'cpp'" in row["reason"]
    assert [v["key"] for v in run_file.doc["verdicts"]] == ["gate/tiny/balanced/ptx-vs-cpp"]


def test_a_row_too_big_for_memory_is_skipped_with_one_line_and_rerun_on_resume(tmp_path, monkeypatch):
    """The estimate says align will not fit: its rows are "skipped" (what it needs, what there is, which flag helps),
    gate still runs, the verdict says why there is none, and --resume tries the skipped rows again."""
    from harness import row_memory

    table = {(impl, k): fake_run(k) for impl in ("numba", "ptx") for k in ("gate", "align")}
    monkeypatch.setattr(cell, "find_run", lambda impl, k: (table[(impl, k)], ""))
    real = row_memory.estimate_row_memory

    def estimate(kernel, preset, variant=None, backend="sim", lazy=False, sample_blocks=None):
        return _estimate(64 * 2**30) if kernel == "align" else real(kernel, preset, variant, backend, lazy,
                                                                     sample_blocks)

    monkeypatch.setattr(row_memory, "estimate_row_memory", estimate)
    monkeypatch.setattr(row_memory, "available_bytes", lambda: 8 * 2**30)
    settings = _settings(["gate", "align"])
    run_file = _run_file(tmp_path, settings)
    out = io.StringIO()
    summary = runner.run_sweep(FakeBackend(), settings, run_file, progress=out)
    rows = {r["key"]: r for r in run_file.doc["rows"]}
    skipped = rows["align/ptx/tiny/balanced"]
    assert skipped["status"] == "skipped" and rows["gate/ptx/tiny/balanced"]["status"] == "ok"
    assert "needs about 64.0 GiB" in skipped["reason"] and "has 8.0 GiB free" in skipped["reason"]
    assert "--preset" in skipped["reason"] and "\n" not in skipped["reason"]
    assert len(summary["too_big"]) == 2 and not summary["failed"]
    verdict = {v["key"]: v for v in run_file.doc["verdicts"]}["align/tiny/balanced/ptx-vs-numba"]
    assert verdict["verdict"] is None and "ptx skipped (needs about" in verdict["reason"]
    assert not run_file.is_done("align/ptx/tiny/balanced") and run_file.is_done("gate/ptx/tiny/balanced")
    monkeypatch.setattr(row_memory, "available_bytes", lambda: 128 * 2**30)  # more memory: resume runs them
    runner.run_sweep(FakeBackend(), settings, run_file, progress=io.StringIO())
    assert run_file.row("align/ptx/tiny/balanced")["status"] == "ok"


def test_gemm_rows_record_useful_and_padded_flops(tmp_path, monkeypatch):
    monkeypatch.setattr(cell, "find_run", lambda impl, k: (fake_run(k), ""))
    settings = _settings(["grouped_gemm", "gate"], impls=("ptx",))
    run_file = _run_file(tmp_path, settings)
    runner.run_sweep(FakeBackend(), settings, run_file, progress=io.StringIO())
    rows = {(r["kernel"], r["variant"]): r for r in run_file.doc["rows"]}
    up = rows[("grouped_gemm", "up")]
    work = up["gemm_work"]
    inputs = get_kernel("grouped_gemm").make_inputs(_preset("tiny"), "balanced", up["seed"], variant="up")
    p = _preset("tiny")
    assert work["padded_rows"] == int(inputs["total_padded"][0]) and work["routed_rows"] == p.T * p.K
    assert work["useful_flops"] == up["flops"] == 2 * p.T * p.K * 2 * p.I * p.H
    assert work["padded_flops"] == 2 * work["padded_rows"] * 2 * p.I * p.H
    assert work["useful_pct"] == pytest.approx(100 * p.T * p.K / work["padded_rows"]) and work["useful_pct"] < 100
    assert rows[("gate", None)]["gemm_work"] is None
    memory = up["memory"]  # the estimate the memory check used, next to the peak the row reached
    assert memory["peak_rss_bytes"] > 0 and memory["estimated_bytes"] > memory["estimated_host_bytes"] > 0
    assert 0 < memory["start_rss_bytes"] <= memory["peak_rss_bytes"]  # the row's own rise is peak - start
    down = rows[("grouped_gemm", "down")]["gemm_work"]
    assert down["padded_flops"] == 2 * work["padded_rows"] * p.H * p.I


def _preset(name):
    from contract.presets import get_preset

    return get_preset(name)


def _estimate(host_bytes: int):
    from contract.footprint import PROCESS_BASE, MemoryEstimate

    return MemoryEstimate("k", "tiny", host_bytes - PROCESS_BASE, 0, 0, 0, False)


def test_the_cells_held_inputs_count_as_free_for_its_next_path(tmp_path, monkeypatch):
    """The second path reuses the inputs the first drew: the memory they hold counts as free for it."""
    from harness import row_memory

    monkeypatch.setattr(cell, "find_run", lambda impl, k: (fake_run(k), ""))
    free = 2**30
    held = get_kernel("gate").make_inputs(_preset("tiny"), "balanced", 0)
    held_bytes = sum(a.nbytes for a in held.values())
    calls = []

    def available():  # the first path sees `free`; the second sees the cell's inputs held
        calls.append(1)
        return free if len(calls) == 1 else free - held_bytes

    monkeypatch.setattr(row_memory, "available_bytes", available)
    monkeypatch.setattr(row_memory, "estimate_row_memory", lambda *a, **k: _estimate(free - 16))
    settings = _settings(["gate"])
    run_file = _run_file(tmp_path, settings)
    runner.run_sweep(FakeBackend(), settings, run_file, progress=io.StringIO())
    assert [r["status"] for r in run_file.doc["rows"]] == ["ok", "ok"]

"""run.json: schema basics, JSON-safe values, atomic rewrites (a crash mid-write keeps the old file), load errors."""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from harness import results
from harness.results import RunFile, ResultsError


def _new(tmp_path, run_id="r1"):
    return RunFile.create(tmp_path, run_id, {"backend": "sim"}, {"backend": "sim"}, command=["ptxmoe", "compare"])


def test_create_add_row_roundtrip(tmp_path):
    run = _new(tmp_path)
    run.add_row({"key": "gate/ptx/tiny/balanced", "status": "ok", "x": np.float32(1.5), "a": np.arange(3),
                 "bad": float("nan"), "t": (1, 2)})
    doc = json.loads((tmp_path / "r1" / "run.json").read_text())
    assert doc["schema_version"] == results.SCHEMA_VERSION == 2
    assert doc["status"] == "running" and doc["command"] == ["ptxmoe", "compare"]
    assert doc["rows"][0] == {"key": "gate/ptx/tiny/balanced", "status": "ok", "x": 1.5, "a": [0, 1, 2],
                              "bad": None, "t": [1, 2]}
    run.add_row({"key": "gate/ptx/tiny/balanced", "status": "failed"})  # same key replaces
    assert [r["status"] for r in RunFile.load(tmp_path / "r1").doc["rows"]] == ["failed"]
    assert run.is_done("gate/ptx/tiny/balanced") and not run.is_done("gate/numba/tiny/balanced")
    with pytest.raises(ResultsError, match="status 'weird'"):
        run.add_row({"key": "k", "status": "weird"})
    with pytest.raises(ResultsError, match="exists already; use --resume"):
        _new(tmp_path)


def test_crash_mid_write_keeps_previous_file(tmp_path, monkeypatch):
    import harness.atomic as atomic

    run = _new(tmp_path)
    run.add_row({"key": "a", "status": "ok"})
    before = (tmp_path / "r1" / "run.json").read_bytes()

    def crash(fd):
        raise OSError("disk on fire")  # after the temp file got its bytes, before the rename

    monkeypatch.setattr(atomic.os, "fsync", crash)
    with pytest.raises(OSError, match="disk on fire"):
        run.add_row({"key": "b", "status": "ok", "big": list(range(10000))})
    assert (tmp_path / "r1" / "run.json").read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "r1").iterdir()) == ["run.json"]  # no temp file left behind


def test_killed_writer_never_leaves_a_torn_file(tmp_path):
    # a child rewrites a large run.json as fast as it can; SIGKILL lands at a random point of some write
    code = f"""
import sys
sys.path.insert(0, {os.getcwd()!r})
from harness.results import RunFile
run = RunFile.create({str(tmp_path)!r}, "k", {{}}, {{}}, command=[])
i = 0
while True:
    i += 1
    run.add_row({{"key": f"row{{i}}", "status": "ok", "payload": list(range(20000))}})
    if i == 2:
        print("ready", flush=True)
"""
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    doc = RunFile.load(tmp_path / "k").doc  # parses: complete old or new version
    assert len(doc["rows"]) >= 2 and all(len(r["payload"]) == 20000 for r in doc["rows"])


def test_load_errors_name_the_problem(tmp_path):
    with pytest.raises(ResultsError, match="run.json not found"):
        RunFile.load(tmp_path / "nope")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "run.json").write_text("{not json")
    with pytest.raises(ResultsError, match="not readable JSON"):
        RunFile.load(tmp_path / "bad")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "run.json").write_text('{"schema_version": 0}')
    with pytest.raises(ResultsError, match="schema_version 0"):
        RunFile.load(tmp_path / "old")


def test_environment_has_versions_and_git():
    env = results.collect_environment("sim")
    assert env["packages"]["numpy"] == np.__version__
    assert env["git"]["commit"] is None or len(env["git"]["commit"]) == 40
    assert env["model_device"]["specs"]["memory_bandwidth"] > 1e12
    assert env["host"]["cpu_count"] >= 1 and env["gpu"]["visible"] is False
    json.dumps(results.jsonable(env), allow_nan=False)


def test_row_key():
    assert results.row_key("grouped_gemm", "up", "ptx", "tiny", "balanced") == "grouped_gemm[up]/ptx/tiny/balanced"
    assert results.row_key("gate", None, "numba", "small", "extreme") == "gate/numba/small/extreme"


def test_schema_1_run_loads_upgraded_and_saves_as_2(tmp_path):
    """A version-1 run.json (Numba path named "cuda", one PTX-over-Numba verdict per cell) reads as version 2."""
    v1 = {"schema_version": 1, "run_id": "old", "status": "interrupted", "settings": {"impls": ["cuda", "ptx"]},
          "environment": {}, "missing": ["align/cuda/tiny/balanced: cuda_impl has no align yet"],
          "rows": [{"key": "gate/cuda/tiny/balanced", "impl": "cuda", "status": "ok",
                    "launches": [{"name": "gate", "impl": "cuda"}], "nsight": [{"impl": "cuda", "metric": "m"}]},
                   {"key": "gate/ptx/tiny/balanced", "impl": "ptx", "status": "ok"},
                   {"key": "gate[cuda]/ptx/tiny/balanced", "impl": "ptx", "status": "ok"}],
          "verdicts": [{"key": "gate/tiny/balanced", "kernel": "gate", "variant": None, "preset": "tiny",
                        "skew": "balanced", "basis": "modelled", "speedup": 1.5, "ci_lo": 1.5, "ci_hi": 1.5,
                        "verdict": "FASTER", "reason": None, "ptx_over": "cuda"}],
          "nvtx_ranges": [{"name": "gate/cuda/tiny/balanced", "key": "gate/cuda/tiny/balanced"},
                          {"name": "run-old", "depth": 0}]}
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "run.json").write_text(json.dumps(v1))
    run = RunFile.load(tmp_path / "old")
    doc = run.doc
    assert doc["schema_version"] == 2 and doc["upgraded_from"] == 1 and doc["settings"]["impls"] == ["numba", "ptx"]
    assert [(r["key"], r["impl"]) for r in doc["rows"]] == [
        ("gate/numba/tiny/balanced", "numba"), ("gate/ptx/tiny/balanced", "ptx"),
        ("gate[cuda]/ptx/tiny/balanced", "ptx")]  # only the impl field of a key is renamed
    assert doc["rows"][0]["nsight"][0]["impl"] == "numba" and doc["rows"][0]["launches"][0]["impl"] == "cuda"
    assert run.is_done("gate/numba/tiny/balanced") and not run.is_done("gate/cuda/tiny/balanced")
    assert doc["missing"] == ["align/numba/tiny/balanced: cuda_impl has no align yet"]
    assert doc["nvtx_ranges"][0] == {"name": "gate/numba/tiny/balanced", "key": "gate/numba/tiny/balanced"}
    (v,) = doc["verdicts"]
    assert (v["key"], v["cell"], v["pair"], v["impl"], v["baseline"], v["headline"]) == (
        "gate/tiny/balanced/ptx-vs-numba", "gate/tiny/balanced", "ptx-vs-numba", "ptx", "numba", False)
    assert v["speedup"] == 1.5 and v["verdict"] == "FASTER" and "ptx_over" not in v
    run.save()  # e.g. on --resume: written back as version 2
    assert json.loads((tmp_path / "old" / "run.json").read_text())["schema_version"] == 2
    assert RunFile.load(tmp_path / "old").doc["rows"] == doc["rows"]


def test_the_old_fixture_run_loads():
    """tests/fixtures/runs/sim-real-ptx-only is a real schema-1 run.json: it still opens, with its rows renamed."""
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "sim-real-ptx-only" / "run.json"
    raw = json.loads(src.read_text())
    assert raw["schema_version"] == 1
    doc = RunFile.load(src.parent).doc
    assert [r["impl"] for r in doc["rows"]] == [{"cuda": "numba"}.get(r["impl"], r["impl"]) for r in raw["rows"]]
    assert {r["impl"] for r in doc["rows"]} == {"numba", "ptx"}
    assert all(v["pair"] == "ptx-vs-numba" and v["verdict"] is None for v in doc["verdicts"])

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
from harness.results import ResultsError, RunFile


def _new(tmp_path, run_id="r1"):
    return RunFile.create(tmp_path, run_id, {"backend": "sim"}, {"backend": "sim"}, command=["ptxmoe", "compare"])


def _row(key: str, status: str, **params) -> dict:
    kernel, impl, preset, skew = key.split("/") if key.count("/") == 3 else (key, "ptx", "tiny", "balanced")
    return {"key": key, "kernel": kernel, "impl": impl, "preset": preset, "skew": skew, "status": status,
            "params": params}


def test_create_add_row_roundtrip(tmp_path):
    run = _new(tmp_path)
    run.add_row(_row("gate/ptx/tiny/balanced", "ok", x=np.float32(1.5), a=np.arange(3), bad=float("nan"), t=(1, 2)))
    doc = json.loads((tmp_path / "r1" / "run.json").read_text())
    assert doc["schema_version"] == results.SCHEMA_VERSION == 3
    assert doc["status"] == "running" and doc["command"] == ["ptxmoe", "compare"]
    assert doc["rows"][0]["params"] == {"x": 1.5, "a": [0, 1, 2], "bad": None, "t": [1, 2]}
    run.add_row(_row("gate/ptx/tiny/balanced", "failed"))  # same key replaces
    assert [r["status"] for r in RunFile.load(tmp_path / "r1").doc["rows"]] == ["failed"]
    assert run.is_done("gate/ptx/tiny/balanced") and not run.is_done("gate/numba/tiny/balanced")
    with pytest.raises(ResultsError, match="status 'weird'"):
        run.add_row(_row("k", "weird"))
    with pytest.raises(ResultsError, match="exists already; use --resume"):
        _new(tmp_path)


def test_crash_mid_write_keeps_previous_file(tmp_path, monkeypatch):
    import harness.atomic as atomic

    run = _new(tmp_path)
    run.add_row(_row("a", "ok"))
    before = (tmp_path / "r1" / "run.json").read_bytes()

    def crash(fd):
        raise OSError("disk on fire")  # after the temp file got its bytes, before the rename

    monkeypatch.setattr(atomic.os, "fsync", crash)
    with pytest.raises(ResultsError, match="cannot write .*run.json: disk on fire"):
        run.add_row(_row("b", "ok", big=list(range(10000))))
    assert (tmp_path / "r1" / "run.json").read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "r1").iterdir()) == ["run.json"]  # no temp file left behind


def test_killed_writer_never_leaves_a_torn_file(tmp_path):
    # a child rewrites a large run.json as fast as it can; SIGKILL lands at a random point of some write
    code = f"""
import sys
sys.path.insert(0, {os.getcwd()!r})
from harness.results import RunFile
run = RunFile.create({str(tmp_path)!r}, "k", {{"backend": "sim"}}, {{}}, command=[])
i = 0
while True:
    i += 1
    run.add_row({{"key": f"row{{i}}", "kernel": "gate", "impl": "ptx", "preset": "tiny", "status": "ok",
                 "params": {{"payload": list(range(20000))}}}})
    if i == 2:
        print("ready", flush=True)
"""
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    doc = RunFile.load(tmp_path / "k").doc  # parses: complete old or new version
    assert len(doc["rows"]) >= 2 and all(len(r["params"]["payload"]) == 20000 for r in doc["rows"])


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


@pytest.mark.parametrize("content,needle", [
    ("[]", "holds an array, not a run document"),
    ('"run"', "holds a string, not a run document"),
    (('{"schema_version": 1, "run_id": "r", "status": "ok", "settings": [], "environment": {}, "rows": [], '
      '"verdicts": []}'), "field 'settings' is an array; expected an object"),
    (('{"schema_version": 1, "run_id": "r", "status": "ok", "settings": {}, "environment": {}, "rows": [3], '
      '"verdicts": []}'), r"rows\[0\] is a number; expected an object with a string 'key'"),
    ('{"schema_version": 1, "status": "ok", "settings": {}, "environment": {}, "rows": [], "verdicts": []}',
     "field 'run_id' is no such field; expected a string"),
])
def test_load_rejects_json_that_is_no_run(tmp_path, content, needle):
    (tmp_path / "run.json").write_text(content)
    with pytest.raises(ResultsError, match=needle):
        RunFile.load(tmp_path)


def test_run_json_is_written_0644_and_write_errors_are_results_errors(tmp_path):
    run = _new(tmp_path)
    assert run.path.stat().st_mode & 0o777 == 0o644
    (tmp_path / "blocker").write_text("a file where a folder should be")
    with pytest.raises(ResultsError, match="cannot write .*blocker"):
        RunFile.create(tmp_path / "blocker", "r2", {}, {}, command=[])

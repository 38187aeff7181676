"""Interrupt a real `ptxmoe compare --backend sim` with SIGINT (what `timeout --signal=INT` sends), then --resume it."""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _has_sim() -> bool:
    import ptxsim

    return hasattr(ptxsim, "Device") and hasattr(ptxsim, "load_ptx")


@pytest.mark.sim
@pytest.mark.skipif(not _has_sim(), reason="ptxsim.Device / load_ptx not landed yet")
def test_sigint_then_resume(tmp_path):
    # NOTE: the interrupted row must outlast the signal's way here: a 0.6 s gate row finished first under load, so
    # the second row is the bf16 layer (~4 s at tiny)
    argv = [sys.executable, "-m", "harness.cli", "compare", "--backend", "sim", "--kernels", "gate,layer",
            "--out", str(tmp_path), "--no-static", "--no-dashboard", "--seed", "99", "--impls", "ptx"]
    # NOTE: a test run started in the background of a shell without job control (`nohup make test &`) inherits
    # SIGINT ignored, and a Python started with SIGINT ignored keeps ignoring it: the child gets the default back
    proc = subprocess.Popen(argv, cwd=REPO, stderr=subprocess.PIPE, text=True, env={**os.environ},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = []
    for line in proc.stderr:  # wait until the first row is saved, then interrupt the second
        lines.append(line)
        if "[2/3]" in line and "running" in line:
            proc.send_signal(signal.SIGINT)  # at once: the row's work starts after this line is printed
            break
    rest = proc.stderr.read()
    assert proc.wait(timeout=120) == 130, "".join(lines) + rest
    assert "resume with: ptxmoe compare --resume" in rest
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["status"] == "interrupted" and len(doc["rows"]) == 1
    done_before = {r["key"]: r for r in doc["rows"]}
    res = subprocess.run([sys.executable, "-m", "harness.cli", "compare", "--resume", str(run_dir), "--no-dashboard"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    doc = json.loads((run_dir / "run.json").read_text())
    rows = {r["key"]: r for r in doc["rows"]}
    assert doc["status"] == "complete" and len(rows) == 3, res.stderr[-3000:]
    for key, row in done_before.items():
        assert rows[key] == row and "skipped" in res.stderr  # finished rows were kept, not re-run
    implemented = [r for r in rows.values() if r["status"] != "missing"]
    assert implemented and all(r["status"] == "ok" for r in implemented), res.stderr[-3000:]
    assert res.returncode == 0 and doc["settings"]["seed"] == 99

"""scripts/gpu_check.sh: shell syntax, and a dry run without a GPU that must end cleanly with a log saying so."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_check.sh"


def test_gpu_check_script_parses():
    result = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True, timeout=20, check=False)
    assert result.returncode == 0, result.stderr


def test_gpu_check_dry_run_without_gpu_reports_no_gpu_and_exits_0(tmp_path):
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, repo / "scripts" / "gpu_check.sh")
    fake_bin = tmp_path / "bin"  # an nvidia-smi that finds no device, whatever this machine has
    fake_bin.mkdir()
    (fake_bin / "nvidia-smi").write_text("#!/bin/sh\necho 'No devices were found' >&2\nexit 6\n")
    (fake_bin / "nvidia-smi").chmod(0o755)
    out = tmp_path / "out"
    env = {**os.environ, "PATH": f"{fake_bin}:/usr/bin:/bin", "OUT": str(out),
           "GPU_CHECK_SITE": str(tmp_path / "site")}
    try:
        result = subprocess.run(["bash", str(repo / "scripts" / "gpu_check.sh")], cwd=repo, env=env,
                                capture_output=True, text=True, timeout=20, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip("dry run of gpu_check.sh took over 20 s on this machine")
    assert result.returncode == 0, result.stdout + result.stderr
    log = (out / "gpu_check.log").read_text()
    assert "no GPU visible" in log
    assert "pytest -m gpu" not in log  # the GPU steps were skipped, not attempted
    logs = list((repo / "profiles").glob("gpu-check-*/gpu_check.log"))
    assert len(logs) == 1 and "no GPU visible" in logs[0].read_text()


def test_gpu_check_plan_fits_seven_minutes():
    result = subprocess.run(["bash", str(SCRIPT)], env={**os.environ, "GPU_CHECK_PRINT_PLAN": "1"},
                            capture_output=True, text=True, timeout=20, check=False)
    fields = dict(item.split("=") for item in result.stdout.split())
    steps = [int(fields[k]) for k in ("setup", "pytest", "decode", "prefill", "ncu")]
    assert int(fields["steps"]) == len(steps)
    planned = sum(steps) + len(steps) * int(fields["grace"])
    assert planned == int(fields["planned"]) <= int(fields["total"]) <= 420


def _fake_gpu_env(tmp_path, python_body: str):
    """A repo copy whose nvidia-smi sees a GPU and whose 'python' runs `python_body` (sh) for every call."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, repo / "scripts" / "gpu_check.sh")
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (fake)'\n")
    (fake_bin / "fakepy").write_text("#!/bin/sh\n" + python_body)
    for f in fake_bin.iterdir():
        f.chmod(0o755)
    out = tmp_path / "out"
    env = {**os.environ, "PATH": f"{fake_bin}:/usr/bin:/bin", "OUT": str(out), "GPU_CHECK_PYTHON": "fakepy",
           "GPU_CHECK_SITE": str(tmp_path / "site")}
    return repo, out, env


def test_gpu_check_publishes_each_step_before_the_next_one(tmp_path):
    """compare writes a run folder; the next step (here the prefill compare) must already find it in $OUT."""
    body = """case "$*" in
  *"--preset dsv3-decode"*) d=$(ls -d profiles/gpu-check-*) && mkdir -p "$d/r1" && echo '{}' > "$d/r1/run.json" ;;
  *"--preset dsv3-prefill"*) ls "$OUT" > "$OUT/../seen_at_prefill" ;;
esac
exit 0
"""
    repo, out, env = _fake_gpu_env(tmp_path, body)
    result = subprocess.run(["bash", str(repo / "scripts" / "gpu_check.sh")], cwd=repo, env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "r1.tar.gz" in (tmp_path / "seen_at_prefill").read_text().split()
    names = sorted(p.name for p in out.iterdir())
    assert names == ["gpu_check.log", "r1.tar.gz"]  # no partial files left in $OUT
    log = (out / "gpu_check.log").read_text()
    assert "compare dsv3-prefill: rc=0" in log and "=== summary after" in log


def test_gpu_check_timed_out_run_still_leaves_its_log(tmp_path):
    """A step that hangs is cut at the deadline; what ran so far is in $OUT."""
    repo, out, env = _fake_gpu_env(tmp_path, 'case "$*" in *pytest*) sleep 30 ;; esac\nexit 0\n')
    env["GPU_CHECK_TOTAL"] = "12"
    result = subprocess.run(["bash", str(repo / "scripts" / "gpu_check.sh")], cwd=repo, env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0
    log = (out / "gpu_check.log").read_text()
    assert "pytest -m gpu: rc=124 (timed out)" in log
    assert "skipped (no time left)" in log


def test_system_cuda_fallback_only_when_allowed(tmp_path, monkeypatch):
    from harness import toolchain

    (tmp_path / "bin").mkdir()
    tool = tmp_path / "bin" / "ptxas"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.setattr(toolchain, "TOOL_SOURCES", {})
    monkeypatch.delenv("PTXMOE_ALLOW_SYSTEM_CUDA", raising=False)
    assert toolchain._system_tool("ptxas") is None  # default: wheels only
    monkeypatch.setenv("PTXMOE_ALLOW_SYSTEM_CUDA", "1")
    assert toolchain._system_tool("ptxas") == tool
    assert toolchain.TOOL_SOURCES == {"ptxas": f"system:{tool}"}
    assert toolchain._system_tool("no-such-tool-xyz") is None

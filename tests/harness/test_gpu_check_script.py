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
    result = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True, timeout=20)
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
                                capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.skip("dry run of gpu_check.sh took over 20 s on this machine")
    assert result.returncode == 0, result.stdout + result.stderr
    log = (out / "gpu_check.log").read_text()
    assert "no GPU visible" in log
    assert "pytest -m gpu" not in log  # the GPU steps were skipped, not attempted
    logs = list((repo / "profiles").glob("gpu-check-*/gpu_check.log"))
    assert len(logs) == 1 and "no GPU visible" in logs[0].read_text()


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

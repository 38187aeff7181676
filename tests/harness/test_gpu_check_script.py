"""scripts/gpu_check.sh: shell syntax, and a dry run without a GPU that must end cleanly with a log saying so."""
from __future__ import annotations

import os
import re
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


def _plan() -> tuple[list[tuple[str, int]], dict]:
    result = subprocess.run(["bash", str(SCRIPT)], env={**os.environ, "GPU_CHECK_PRINT_PLAN": "1"},
                            capture_output=True, text=True, timeout=20, check=False)
    lines = result.stdout.splitlines()
    steps = [(name, int(limit)) for _, name, limit in (line.split() for line in lines[:-1])]
    return steps, dict(item.split("=") for item in lines[-1].split())


def test_gpu_check_plan_fits_seven_minutes():
    steps, totals = _plan()
    assert int(totals["steps"]) == len(steps)
    planned = sum(limit for _, limit in steps) + len(steps) * int(totals["grace"])
    assert planned == int(totals["planned"]) <= int(totals["total"]) <= 420


def test_gpu_check_plan_starts_with_the_preflight_and_puts_the_hopper_rungs_early():
    names = [name for name, _ in _plan()[0]]
    assert names[:2] == ["setup", "preflight"]
    pytest_steps = [n.split(":", 1)[1] for n in names if n.startswith("pytest:")]
    assert pytest_steps[0] == "tests/harness/test_tensormaps.py"  # the driver-built tensor map
    assert pytest_steps[1:4] == [f"tests/ptx_impl/test_gemm_fp8_{r}_gpu.py" for r in ("r45", "r3", "r2")]
    assert names.index("compare-fp8-small") < names.index("compare-tiny") < names.index("calibrate")
    assert {"sanitize-memcheck", "sanitize-racecheck", "sanitize-synccheck"} <= set(names)
    assert not any("dsv3" in n for n in names)


def test_every_gpu_test_module_has_a_step():
    """A module with a `gpu` mark that the plan leaves out would never run on the lent GPU."""
    mark = re.compile(r"^\s*(@pytest\.mark\.gpu\b|pytestmark\s*=.*\bmark\.gpu\b)", re.M)
    marked = {str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")
              if mark.search(p.read_text(errors="replace"))}
    planned = {n.split(":", 1)[1] for n, _ in _plan()[0] if n.startswith("pytest:")}
    assert marked == planned


def _fake_gpu_env(tmp_path, python_body: str):
    """A repo copy whose nvidia-smi sees a GPU and whose 'python' runs `python_body` (sh) for every call."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, repo / "scripts" / "gpu_check.sh")
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (fake)'\n")
    (fake_bin / "fakepy").write_text("#!/bin/sh\n" + f'echo "$*" >> {tmp_path / "calls"}\n' + python_body)
    (fake_bin / "compute-sanitizer").write_text("#!/bin/sh\n" + f'echo "sanitizer $*" >> {tmp_path / "calls"}\n')
    for f in fake_bin.iterdir():
        f.chmod(0o755)
    out = tmp_path / "out"
    env = {**os.environ, "PATH": f"{fake_bin}:/usr/bin:/bin", "OUT": str(out), "GPU_CHECK_PYTHON": "fakepy",
           "GPU_CHECK_SITE": str(tmp_path / "site")}
    return repo, out, env


def test_gpu_check_publishes_each_step_before_the_next_one(tmp_path):
    """compare writes a run folder; the next step (here the tiny compare) must already find it in $OUT."""
    body = """case "$*" in
  *"--preset small"*) d=$(ls -d profiles/gpu-check-*) && mkdir -p "$d/r1" && echo '{}' > "$d/r1/run.json" ;;
  *"--preset tiny --kernels gate,align"*) ls "$OUT" > "$OUT/../seen_at_tiny" ;;
  *gpu_preflight.py*) d=$(ls -d profiles/gpu-check-*) && echo '{"check": "device"}' > "$d/preflight.jsonl" ;;
esac
exit 0
"""
    repo, out, env = _fake_gpu_env(tmp_path, body)
    result = subprocess.run(["bash", str(repo / "scripts" / "gpu_check.sh")], cwd=repo, env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert {"r1.tar.gz", "preflight.jsonl"} <= set((tmp_path / "seen_at_tiny").read_text().split())
    names = sorted(p.name for p in out.iterdir())
    assert names == ["gpu_check.log", "preflight.jsonl", "r1.tar.gz"]  # no partial files left in $OUT
    log = (out / "gpu_check.log").read_text()
    assert "compare tiny: rc=0" in log and "=== summary after" in log


def test_gpu_check_runs_the_preflight_first_and_no_pytest_with_x_or_dsv3(tmp_path):
    repo, out, env = _fake_gpu_env(tmp_path, "exit 0\n")
    result = subprocess.run(["bash", str(repo / "scripts" / "gpu_check.sh")], cwd=repo, env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    calls = [c for c in (tmp_path / "calls").read_text().splitlines() if not c.startswith("-c ")]
    assert calls[0].startswith("scripts/gpu_preflight.py --out ")
    pytests = [c.split() for c in calls if c.startswith("-m pytest")]
    assert len(pytests) == 14 and all("-x" not in argv and len([a for a in argv if a.endswith(".py")]) == 1
                                      for argv in pytests)  # one module a process, never stopping at a failure
    assert all("not dsv3" in " ".join(argv) for argv in pytests)
    compares = [c for c in calls if "harness.cli compare" in c and not c.startswith("sanitizer")]
    assert "--preset small --kernels grouped_gemm_fp8" in compares[0]
    assert not any("dsv3" in c for c in compares)
    assert sum("-m harness.cli calibrate --repeat 5" in c for c in calls) == 1  # the paired variants' ratios too
    sanitized = [c.split()[2] for c in calls if c.startswith("sanitizer")]
    assert sanitized == ["memcheck", "racecheck", "synccheck"]


def test_gpu_check_timed_out_run_still_leaves_its_log(tmp_path):
    """A step that hangs is cut at the deadline; what ran so far is in $OUT."""
    repo, out, env = _fake_gpu_env(tmp_path, 'case "$*" in *"-m pytest"*) sleep 30 ;; esac\nexit 0\n')
    env["GPU_CHECK_TOTAL"] = "12"
    result = subprocess.run(["bash", str(repo / "scripts" / "gpu_check.sh")], cwd=repo, env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0
    log = (out / "gpu_check.log").read_text()
    assert "pytest tests/harness/test_tensormaps.py: rc=124 (timed out)" in log
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

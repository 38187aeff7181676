"""`ptxmoe import` attaches Nsight metric rows to run.json rows by NVTX range; `ptxmoe profile` without the tool."""
import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.results import RunFile

NCU_CSV = Path(__file__).resolve().parents[1] / "fixtures" / "nsight" / "ncu_details_2023_20col_nvtx_rules.csv"


def _run(tmp_path):
    run = RunFile.create(tmp_path, "r", {"backend": "gpu"}, {}, command=[])
    for impl in ("ptx", "numba"):
        run.add_row({"key": f"gate/{impl}/tiny/balanced", "kernel": "gate", "impl": impl, "preset": "tiny",
                     "skew": "balanced", "status": "ok", "nsight": []})
    return run


def test_import_attaches_rows_by_range(tmp_path, capsys):
    if not NCU_CSV.is_file():
        pytest.skip(f"fixture {NCU_CSV} missing")
    run = _run(tmp_path)
    assert main(["import", str(NCU_CSV), "--run", str(run.run_dir)]) == 0
    out = capsys.readouterr().out
    assert "metric rows attached" in out
    doc = json.loads((run.run_dir / "run.json").read_text())
    rows = {r["key"]: r for r in doc["rows"]}
    got = {m["metric"]: m for m in rows["gate/ptx/tiny/balanced"]["nsight"]}
    assert got["gpu__time_duration.sum"]["value"] == 4096.0 and got["gpu__time_duration.sum"]["unit"] == "ns"
    assert got["gpu__time_duration.sum"]["file"] == NCU_CSV.name and got["dram__bytes_read.sum"]["value"] is None
    assert all(m["impl"] == "ptx" for m in rows["gate/ptx/tiny/balanced"]["nsight"])
    n_first = len(rows["gate/ptx/tiny/balanced"]["nsight"])
    assert (run.run_dir / "nsight" / NCU_CSV.name).is_file()
    # importing the same file again replaces, not duplicates
    assert main(["import", str(NCU_CSV), "--run", str(run.run_dir)]) == 0
    doc = json.loads((run.run_dir / "run.json").read_text())
    assert len({r["key"]: r for r in doc["rows"]}["gate/ptx/tiny/balanced"]["nsight"]) == n_first
    assert [f["file"] for f in doc["nsight_files"]] == [NCU_CSV.name]


def test_import_into_a_folder_without_run_json_exits_2(tmp_path, capsys):
    assert main(["import", str(NCU_CSV), "--run", str(tmp_path)]) == 2
    assert "run.json not found" in capsys.readouterr().err


def test_profile_without_the_tool_exits_2_saying_how_to_get_it(monkeypatch, capsys, tmp_path):
    import harness.nsight.tools as tools
    from harness.errors import ToolchainError

    def missing(name):
        raise ToolchainError(f"{name} (Nsight Compute) is not installed; install it from https://developer.nvidia.com")

    monkeypatch.setattr(tools, "find_tool", missing)
    assert main(["profile", "--tool", "ncu", "--backend", "sim", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "ncu (Nsight Compute) is not installed" in err and "developer.nvidia.com" in err


def test_profile_child_command_carries_the_options():
    import argparse

    from harness.commands.profile_cmd import child_argv

    args = argparse.Namespace(backend="gpu", out="profiles", preset=["dsv3-decode"], skew=["balanced", "extreme"],
                              kernels="gate,layer", impls="cpp,ptx", seed=11, no_static=False)
    argv = child_argv(args, "RID")
    assert argv[1:4] == ["-m", "harness.cli", "compare"]
    assert argv[argv.index("--run-id") + 1] == "RID" and "--quick-timing" in argv
    assert argv[argv.index("--kernels") + 1] == "gate,layer" and argv.count("--skew") == 2
    assert argv[argv.index("--impls") + 1] == "cpp,ptx"

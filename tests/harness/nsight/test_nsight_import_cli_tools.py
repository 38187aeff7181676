"""Atomic writes, import_into_run, the `ptxmoe nsight` sub-command and the ncu/nsys command builders."""
import csv
import io
import json
import os
import stat

import pytest

from harness.atomic import atomic_copy, atomic_write_bytes, atomic_write_text
from harness.cli import main
from harness.errors import PtxmoeError, ToolchainError
from harness.nsight import NsightFormatError, read_nsight
from harness.nsight.importer import import_into_run, load_rows_json
from harness.nsight.tools import DASHBOARD_NCU_METRICS, find_tool, ncu_command, nsys_commands, tool_env


def test_atomic_write_replaces_whole_file(tmp_path, rng):
    path = tmp_path / "deep" / "out.bin"
    data = rng.bytes(100_000)
    atomic_write_bytes(path, data)
    assert path.read_bytes() == data
    atomic_write_text(path, "second")
    assert path.read_text() == "second" and os.listdir(path.parent) == ["out.bin"]


def test_failed_write_leaves_old_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "out.json"
    path.write_text("old")

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_text(path, "new" * 1000)
    with pytest.raises(OSError, match="disk full"):
        atomic_copy(path, tmp_path / "copy.json")
    assert path.read_text() == "old" and sorted(os.listdir(tmp_path)) == ["out.json"]


def test_import_into_run_copies_and_writes_rows(own, tmp_path):
    src = own("ncu_details_2023_20col_nvtx_rules.csv")
    run = tmp_path / "run-1"
    rows_path = import_into_run(src, run)
    assert rows_path == run / "nsight" / f"{src.name}.rows.json"
    assert (run / "nsight" / src.name).read_bytes() == src.read_bytes()
    doc = json.loads(rows_path.read_text())
    assert doc["imported_from"] == str(src) and doc["format"] == "ncu-csv-details"
    assert load_rows_json(rows_path).rows == read_nsight(src).rows
    assert sorted(os.listdir(run / "nsight")) == sorted([src.name, rows_path.name])
    import_into_run(run / "nsight" / src.name, run)  # re-importing the copy in place is fine
    assert sorted(os.listdir(run / "nsight")) == sorted([src.name, rows_path.name])


def test_import_of_malformed_input_writes_nothing(own, tmp_path):
    run = tmp_path / "run-2"
    with pytest.raises(NsightFormatError, match="line 4"):
        import_into_run(own("ncu_malformed_quote.csv"), run)
    assert not (run / "nsight").exists()


def test_import_whose_json_write_fails_leaves_nothing_half_done(own, tmp_path, monkeypatch):
    import harness.nsight.importer as importer

    def fail(path, text):
        raise OSError("no space left")

    monkeypatch.setattr(importer, "atomic_write_text", fail)
    run = tmp_path / "run-3"
    with pytest.raises(OSError):
        import_into_run(own("nsys_cuda_gpu_kern_sum.csv"), run)
    assert os.listdir(run / "nsight") == []


def test_load_rows_json_rejects_other_documents(tmp_path):
    path = tmp_path / "x.rows.json"
    path.write_text('{"schema": "something.else"}')
    with pytest.raises(NsightFormatError, match="ptxmoe.nsight.rows.v1"):
        load_rows_json(path)
    path.write_text("{broken")
    with pytest.raises(NsightFormatError, match="line 1"):
        load_rows_json(path)


def test_cli_text_and_csv(own, capsys):
    path = own("ncu_raw_page_units_row.csv")
    table = read_nsight(path)
    assert main(["nsight", str(path), "--csv"]) == 0
    out = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(out) == len(table)
    for record, row in zip(out, table.rows, strict=True):
        assert (record["kernel"], record["nvtx_range"], record["metric"], record["unit"]) == (
            row.kernel, row.nvtx_range, row.metric, row.unit)
        value = record["value"]
        assert (None if value == "n/a" else value if isinstance(row.value, str) else float(value)) == row.value
    assert main(["nsight", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["launch", "kernel", "nvtx_stack", "metric", "value", "unit"]
    assert len(lines) == len(table) + 1 and "swiglu/ptx/small/imbalanced" in lines[1]


def test_cli_errors_exit_2_with_file_and_line(own, capsys):
    path = own("ncu_details_bad_id.csv")
    assert main(["nsight", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "line 3" in err and "Traceback" not in err


def test_cli_no_results(own, capsys):
    assert main(["nsight", str(own("empty.csv"))]) == 0
    assert "no results" in capsys.readouterr().out


def test_ncu_command_is_exact():
    argv = ncu_command(["python", "-m", "harness", "run"], DASHBOARD_NCU_METRICS[:2], ["ptxmoe@run-1/", "regex:x"],
                       "out/report")
    assert argv == ["ncu", "--nvtx", "--nvtx-include", "ptxmoe@run-1/", "--nvtx-include", "regex:x",
                    "--clock-control", "none", "--print-units", "base", "--metrics",
                    "gpu__time_duration.sum,dram__bytes_read.sum", "-o", "out/report",
                    "python", "-m", "harness", "run"]
    assert ncu_command(["a"], ["m"], "X/", "r")[2:4] == ["--nvtx-include", "X/"]
    assert "--nvtx-include" not in ncu_command(["a"], ["m"], None, "r")  # no filter: every kernel, NVTX still on
    with pytest.raises(ToolchainError):
        ncu_command([], ["m"], "X/", "r")
    assert tool_env({"PATH": "/bin"}) == {"PATH": "/bin", "LC_ALL": "C"}
    assert len(set(DASHBOARD_NCU_METRICS)) == 13 and "dram__bytes_write.sum" in DASHBOARD_NCU_METRICS


def test_nsys_commands():
    profile, export = nsys_commands(["python", "app.py"], "out/trace")
    assert profile[:4] == ["nsys", "profile", "-t", "cuda,nvtx"] and profile[-2:] == ["python", "app.py"]
    assert profile[profile.index("-o") + 1] == "out/trace"
    assert export[:4] == ["nsys", "export", "--type", "sqlite"] and export[-1] == "out/trace.nsys-rep"
    assert export[export.index("-o") + 1] == "out/trace.sqlite"


def test_find_tool(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("harness.nsight.tools._PRODUCTS", {
        "ncu": ("Nsight Compute", "https://developer.nvidia.com/nsight-compute", (str(tmp_path / "none" / "ncu"),)),
        "nsys": ("Nsight Systems", "https://developer.nvidia.com/nsight-systems", ())})
    with pytest.raises(ToolchainError) as info:
        find_tool("ncu")
    assert isinstance(info.value, PtxmoeError)
    assert "not installed" in str(info.value) and "Nsight Compute" in str(info.value) and "PyPI" in str(info.value)
    with pytest.raises(ToolchainError, match="unknown Nsight tool"):
        find_tool("nvprof")
    fake = tmp_path / "nsys"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    assert find_tool("nsys") == fake

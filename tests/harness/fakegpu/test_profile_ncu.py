"""`ptxmoe profile --tool ncu` against a fake `ncu` on PATH: the command it runs (first launch of each launch
configuration, no timing-model estimate, only metrics the GPU lists), unknown metrics dropped with a warning,
ERR_NVGPUCTRPERM explained instead of a bare exit code."""
import json
import os

import pytest

from harness.cli import main
from harness.nsight.tools import DASHBOARD_NCU_METRICS, validate_metrics

MISSING = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared"
FAKE_NCU = """#!/usr/bin/env python3
import json, os, sys
if "--query-metrics" in sys.argv:
    print("Device NVIDIA H200 (GH100)")
    print("Metric Name                     Metric Description")
    for name in os.environ["FAKE_NCU_METRICS"].split(","):
        print(f"{name:40s} a metric")
    sys.exit(0)
json.dump(sys.argv, open(os.environ["FAKE_NCU_ARGV"], "w"))
if os.environ.get("FAKE_NCU_PERM"):
    print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters")
    sys.exit(1)
sys.exit(0)
"""


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ncu").write_text(FAKE_NCU)
    (bin_dir / "ncu").chmod(0o755)
    listed = {m.split(".", 1)[0] for m in DASHBOARD_NCU_METRICS if not m.startswith("launch__")} - {MISSING}
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_METRICS", ",".join(sorted(listed)))
    monkeypatch.setenv("FAKE_NCU_ARGV", str(tmp_path / "argv.json"))
    return tmp_path


def _profile(out):
    return main(["profile", "--tool", "ncu", "--backend", "gpu", "--preset", "tiny", "--kernels", "gate",
                 "--out", str(out), "--no-static"])


def test_profile_runs_first_launches_with_supported_metrics(fake_ncu, capsys):
    assert _profile(fake_ncu / "profiles") == 1  # the fake wrote no report
    argv = json.loads((fake_ncu / "argv.json").read_text())
    assert argv[argv.index("--launch-count") + 1] == "1"
    assert argv[argv.index("--filter-mode") + 1] == "per-launch-config"
    metrics = argv[argv.index("--metrics") + 1].split(",")
    assert f"{MISSING}.sum" not in metrics and "launch__registers_per_thread" in metrics
    assert len(metrics) == len(DASHBOARD_NCU_METRICS) - 1
    assert "--no-model-estimate" in argv and "--quick-timing" in argv
    err = capsys.readouterr().err
    assert f"metric {MISSING}.sum is not supported" in err and "wrote no report" in err


def test_counter_permission_error_is_explained(fake_ncu, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_NCU_PERM", "1")
    assert _profile(fake_ncu / "profiles") == 2
    err = capsys.readouterr().err
    assert "ERR_NVGPUCTRPERM" in err and "NVreg_RestrictProfilingToAdminUsers=0" in err


def test_validate_metrics_drops_only_what_the_listing_contradicts():
    known = {"dram__bytes_read", "dram__bytes_write", "sm__throughput"}
    kept, dropped = validate_metrics(["dram__bytes_read.sum", "dram__bytez.sum", "launch__block_size",
                                      "sm__throughput.avg.pct_of_peak_sustained_elapsed"], known)
    assert dropped == ["dram__bytez.sum"]
    assert kept == ["dram__bytes_read.sum", "launch__block_size", "sm__throughput.avg.pct_of_peak_sustained_elapsed"]
    assert validate_metrics(["x__y.sum"], None) == (["x__y.sum"], [])


def test_ncu_report_is_found_beside_an_installed_ncu(tmp_path):
    """The lent machine has ncu but no ncu-report wheel: its own extras/python copy is used."""
    from harness.nsight.tools import ncu_python_dirs

    install = tmp_path / "cuda" / "nsight-compute-2025.1"
    (install / "extras" / "python").mkdir(parents=True)
    (install / "extras" / "python" / "ncu_report.py").write_text("")
    (tmp_path / "cuda" / "bin").mkdir()
    wrapper = tmp_path / "cuda" / "bin" / "ncu"  # like /usr/local/cuda/bin/ncu, a script calling the install's ncu
    wrapper.write_text("#!/bin/sh\n")
    assert ncu_python_dirs(wrapper) == [install / "extras" / "python"]
    assert ncu_python_dirs(install / "ncu") == [install / "extras" / "python"]


FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")


def test_report_without_ncu_report_is_exported_by_ncu_as_csv_and_imported(tmp_path):
    """ncu_report may not import under the target's Python 3.12: `ncu --import X --csv --page raw` gives the same
    metrics, which `ptxmoe import` reads (issue 25: --csv beside -o printed nothing)."""
    import shutil
    from types import SimpleNamespace

    from harness.commands.import_cmd import import_file
    from harness.commands.profile_cmd import export_ncu_csv

    csv_text = open(os.path.join(FIXTURES, "nsight", "ncu_raw_page_units_row.csv")).read()
    calls = []

    def ncu(argv, **_):
        calls.append(argv)
        return SimpleNamespace(returncode=0, stdout=csv_text, stderr="")

    report = tmp_path / "nsight" / "profile.ncu-rep"
    report.parent.mkdir()
    report.write_bytes(b"not readable here")
    exported = export_ncu_csv("ncu", report, run=ncu)
    assert calls == [["ncu", "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]]
    assert exported == tmp_path / "nsight" / "profile-raw.csv" and exported.read_text() == csv_text
    run_dir = tmp_path / "run"
    shutil.copytree(os.path.join(FIXTURES, "runs", "sim-real"), run_dir)
    import json as _json

    _, attached, unmatched = import_file(exported, run_dir)
    (entry,) = _json.loads((run_dir / "run.json").read_text())["nsight_files"]
    assert entry["file"] == "profile-raw.csv" and entry["format"].startswith("ncu")
    assert entry["rows"] == attached + unmatched == 14  # 2 kernels x 7 metrics of the export, all read
    assert export_ncu_csv("ncu", report, run=lambda argv, **_: SimpleNamespace(returncode=1, stdout="",
                                                                             stderr="==ERROR== cannot open")) is None

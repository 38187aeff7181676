"""Issue 31 item 5: `ptxmoe profile --tool ncu --script S --run RUN` runs a user's compare script under (a fake) ncu
and attaches ncu's metric rows to the user's rows by their NVTX ranges ("name/impl/case/none")."""
import json
import os
import sys

import pytest

from harness.cli import main
from harness.nsight.tools import DASHBOARD_NCU_METRICS

FAKE_NCU = """#!/usr/bin/env python3
import os, subprocess, sys
argv = sys.argv[1:]
if "--query-metrics" in argv:
    for name in os.environ["FAKE_NCU_METRICS"].split(","):
        print(f"{name:40s} a metric")
    sys.exit(0)
if "--import" in argv:  # ncu --import REPORT --csv --page raw: the report as ncu's raw CSV
    sys.stdout.write(open(os.environ["FAKE_NCU_CSV"]).read())
    sys.exit(0)
report = argv[argv.index("-o") + 1]
app = argv[argv.index("-o") + 2:]
rc = subprocess.run(app).returncode
open(report, "wb").write(b"NVR\\x00" + bytes(60))  # the magic, then nothing this reader can use
sys.exit(rc)
"""

SCRIPT = """
import sys
from pathlib import Path
import numpy as np
import ptxmoe

PTX = Path({ptx!r}).read_text()


def make_inputs(rng, n=256):
    return {{"a": np.float32(2.0), "x": rng.standard_normal(n, dtype=np.float32),
            "y": rng.standard_normal(n, dtype=np.float32), "out": np.zeros(n, np.float32), "n": np.uint32(n)}}


result = ptxmoe.compare({{"mine": ptxmoe.PtxKernel(PTX, "saxpy", grid=1, block=256),
                         "theirs": ptxmoe.PtxKernel(PTX, "saxpy", grid=1, block=256)}},
                        make_inputs, name="axpy", backend="sim", static=False)
result.save({run!r}, overwrite=True)
"""

HEADER = ('"ID","Process ID","Process Name","Host Name",'
          '"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg","Kernel Name","Context",'
          '"Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","gpu__time_duration.sum"\n'
          '"","","","","","","","","","","","","byte","nsecond"\n')


def _csv_row(i: int, key: str, dram: int) -> str:
    stack = f'1  ""ptxmoe:{key}:none:none:none:none:none:none"" '
    return (f'"{i}","1","python","host","{stack}","saxpy","1","7","(256, 1, 1)","(1, 1, 1)","0","9.0",'
            f'"{dram}","2000"\n')


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ncu").write_text(FAKE_NCU.replace("#!/usr/bin/env python3", f"#!{sys.executable}"))
    (bin_dir / "ncu").chmod(0o755)
    listed = {m.split(".", 1)[0] for m in DASHBOARD_NCU_METRICS if not m.startswith("launch__")}
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_METRICS", ",".join(sorted(listed)))
    csv = tmp_path / "raw.csv"
    csv.write_text(HEADER + _csv_row(0, "axpy/mine/default/none", 3072) + _csv_row(1, "axpy/theirs/default/none",
                                                                                     4096))
    monkeypatch.setenv("FAKE_NCU_CSV", str(csv))
    return tmp_path


def test_profile_a_users_script_attaches_ncu_rows_by_nvtx_range(fake_ncu, monkeypatch, capsys):
    from pathlib import Path

    import harness.commands.import_cmd as import_cmd
    from harness.errors import ToolchainError

    real_import = import_cmd.import_file

    def import_file(path, run_dir):  # the fake's .ncu-rep is no report: read as where ncu_report is missing
        if str(path).endswith(".ncu-rep"):
            raise ToolchainError("no ncu_report module")
        return real_import(path, run_dir)
    monkeypatch.setattr(import_cmd, "import_file", import_file)

    run = fake_ncu / "my-run"
    script = fake_ncu / "mine.py"
    ptx = Path(__file__).resolve().parents[2] / "ptxmoe" / "saxpy.ptx"
    script.write_text(SCRIPT.format(ptx=str(ptx), run=str(run)))
    assert main(["profile", "--tool", "ncu", "--script", str(script), "--run", str(run)]) == 0
    doc = json.loads((run / "run.json").read_text())
    rows = {r["impl"]: r for r in doc["rows"]}
    dram = {impl: [m for m in rows[impl]["nsight"] if m["metric"] == "dram__bytes_read.sum"] for impl in rows}
    assert [m["value"] for m in dram["mine"]] == [3072] and [m["value"] for m in dram["theirs"]] == [4096]
    assert "imported (4 metric rows attached, 0 unmatched)" in capsys.readouterr().out
    page = (run / "dashboard.html").read_text()  # ncu's metrics side by side under the user's names
    assert "<th>metric</th><th>unit</th><th>mine</th><th>theirs</th><th>theirs / mine</th>" in page


def test_the_api_profiles_a_script_and_returns_its_run(fake_ncu, monkeypatch):
    from pathlib import Path

    import harness.commands.import_cmd as import_cmd
    import ptxmoe
    from harness.errors import ToolchainError

    real_import = import_cmd.import_file

    def import_file(path, run_dir):
        if str(path).endswith(".ncu-rep"):
            raise ToolchainError("no ncu_report module")
        return real_import(path, run_dir)
    monkeypatch.setattr(import_cmd, "import_file", import_file)
    run = fake_ncu / "api-run"
    script = fake_ncu / "mine.py"
    ptx = Path(__file__).resolve().parents[2] / "ptxmoe" / "saxpy.ptx"
    script.write_text(SCRIPT.format(ptx=str(ptx), run=str(run)))
    result = ptxmoe.profile(script, run)
    assert {m.metric for m in result.row("mine").nsight} == {"dram__bytes_read.sum", "gpu__time_duration.sum"}
    with pytest.raises(ptxmoe.PtxmoeError, match="exited"):
        ptxmoe.profile(fake_ncu / "missing.py", fake_ncu / "nowhere")


def test_script_needs_its_run_folder(fake_ncu, capsys):
    assert main(["profile", "--tool", "ncu", "--script", str(fake_ncu / "x.py")]) != 0
    assert "--script needs --run RUN" in capsys.readouterr().err

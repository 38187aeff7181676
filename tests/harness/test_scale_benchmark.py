"""benchmarks/scale.py: the dsv3 figures script, run at tiny on one kernel and one path."""
import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.sim


def _script():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "scale.py"
    spec = importlib.util.spec_from_file_location("scale_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_prints_wall_memory_and_rows_of_a_real_compare(tmp_path, capsys):
    scale = _script()
    assert scale.main(["--preset", "tiny", "--kernels", "gate", "--impls", "ptx", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("tiny: wall ") and "peak RSS of the process tree" in first and "exit status 0" in first
    assert "rows: 1 ok" in out and "NOT OK" not in out and "slowest: gate/ptx/tiny/balanced" in out
    rss_gb = float(first.split("peak RSS of the process tree ")[1].split(" GB")[0])
    cpu_min = float(first.split("(CPU ")[1].split(" min")[0])
    assert rss_gb > 0.05 and cpu_min > 0  # a Python process with NumPy and the simulator, which did work
    row_peak = float(out.split("largest peak: gate/ptx/tiny/balanced ")[1].split(" GB")[0])
    assert 0.05 < row_peak < 2 and "estimate / peak RSS per row: " in out  # the process that ran the row, at tiny
    assert len(list(tmp_path.glob("*/run.json"))) == 1
    assert "rows' own CPU: " in out and "gate/ptx/tiny/balanced" in out.split("rows' own CPU: ")[1]
    assert "estimated wall on 1 idle core(s): " in out and "an estimate, not a measurement" in out


def test_goals_are_printed_not_asserted(tmp_path):
    scale = _script()
    slow = scale.Measured("dsv3-decode", 0, 3600.0, 8 << 30, 8 << 30, 3000.0, None)
    lines = scale.summarise(slow)
    assert "time NOT met, memory NOT met" in lines[1] and lines[2] == "  no run.json was written"


def test_the_rows_own_rise_is_set_against_the_estimate_without_the_process_base():
    """A worker that ran earlier rows starts a row holding 1.5 GB: its peak (2.5 GB) is over the estimate (1.4 GB),
    but its own rise (1 GB) is within the estimate less PROCESS_BASE; a row rising 0.1 GB past its estimate less the
    base is counted and named, and a run.json from before start_rss_bytes is left out of that line."""
    from contract.footprint import PROCESS_BASE

    scale = _script()
    gb = 10**9

    from harness.run_records import Row

    def row(key, estimated, peak, start):
        return Row.from_json({"key": key, "kernel": key, "impl": "ptx", "preset": "dsv3-decode", "status": "ok",
                              "memory": {"peak_rss_bytes": peak, "estimated_bytes": estimated,
                                         "start_rss_bytes": start}})

    rows = [row("layer", int(1.4 * gb), int(2.5 * gb), int(1.5 * gb)),
            row("gate", PROCESS_BASE + int(0.1 * gb), int(1.7 * gb), int(1.5 * gb)),
            row("old", int(0.5 * gb), int(0.6 * gb), None)]
    lines = scale._memory_lines(rows)
    own = [line for line in lines if "own rise" in line]
    assert len(own) == 1 and "1 of 2 rows, by at most 0.10 GB (gate)" in own[0]
    assert "the process held 1.50 to 1.50 GB when its rows started" in own[0]
    assert "estimate / peak RSS per row: 0.22 (gate) to 0.83 (old)" in "\n".join(lines)

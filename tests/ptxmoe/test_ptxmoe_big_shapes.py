"""Issue 31 item 6 (in part): a memory estimate before each user row runs (a row that will not fit is skipped with
the reason, not run into the OOM killer), recorded beside the peak it reached; progress lines with the time left."""
import io
from pathlib import Path

import numpy as np
import pytest

import harness.row_memory
import ptxmoe
from contract.footprint import PROCESS_BASE
from ptxmoe.progress import TimeLeft, case_weight

HERE = Path(__file__).resolve().parent
SAXPY_PTX = (HERE / "saxpy.ptx").read_text()
KERNELS = {"ptx": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=lambda i: (int(i["n"]) + 255) // 256, block=256)}


def make_inputs(rng, n=1024):
    return {"a": np.float32(2.0), "x": rng.standard_normal(n, dtype=np.float32),
            "y": rng.standard_normal(n, dtype=np.float32), "out": np.zeros(n, np.float32), "n": np.uint32(n)}


def test_each_row_records_the_estimate_made_before_it_ran():
    result = ptxmoe.compare(KERNELS, make_inputs, outputs=["out"], backend="sim", static=False)
    memory = result.row("ptx").memory
    arrays = 3 * 1024 * 4
    assert memory.estimated_sim_bytes == 3 * arrays  # heap doubling peak + written shadow
    assert memory.estimated_host_bytes == 1024 * 4  # `out` read back
    assert memory.estimated_bytes == PROCESS_BASE + 4 * arrays + 1024 * 4 - arrays
    assert memory.peak_rss_bytes is None or memory.peak_rss_bytes > 0


def test_a_row_that_will_not_fit_is_skipped_with_the_reason(monkeypatch):
    monkeypatch.setattr(harness.row_memory, "available_bytes", lambda: 100 << 20)
    result = ptxmoe.compare(KERNELS, make_inputs, cases={"big": {"n": 8 << 20}}, backend="sim", static=False)
    row = result.row("ptx")
    assert row.status == "skipped" and row.timing is None
    assert row.reason.startswith("not run: needs about 0.6 GiB (simulated memory 0.3 GiB")
    assert "this machine has 0.1 GiB available; try a smaller case, or backend='gpu'" in row.reason
    assert row.memory.estimated_bytes > 100 << 20


def test_progress_lines_say_rows_done_and_time_left():
    stream = io.StringIO()
    ptxmoe.sweep(KERNELS | {"again": KERNELS["ptx"]}, make_inputs, sizes={"n": [256, 1024]}, backend="sim",
                 static=False, progress=stream)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 4 and lines[0].endswith("left]") and "[1/4 rows, ~" in lines[0]
    assert lines[-1].endswith("[4/4 rows, ~0 s left]")


def test_time_left_scales_with_case_size():
    assert case_weight({"n": 4, "m": 8, "flag": True, "name": "x"}) == 32.0 and case_weight({}) == 1.0
    clock = TimeLeft([{"n": 1}, {"n": 3}], rows_per_case=2)
    assert clock.left_s(0, 0) is None
    clock.row_done(0, 2.0)  # 2 s per unit of weight
    assert clock.left_s(0, 1) == pytest.approx(2.0 * (1 + 3 * 2))
    assert clock.line(0, 1) == "[1/4 rows, ~14 s left]"

"""Issue 31 item 3: ptxmoe.sweep over one or more size axes: one case per point, every point checked and judged, a
DataFrame with the axes as columns, and the dashboard's plot of time and bandwidth against the first axis."""
from pathlib import Path

import numpy as np
import pytest

import ptxmoe
from harness.dashboard.sweep import sweep_records, sweep_section

HERE = Path(__file__).resolve().parent
SAXPY_PTX = (HERE / "saxpy.ptx").read_text()


def make_inputs(rng, n, rows=1):
    total = n * rows
    return {"a": np.float32(2.0), "x": rng.standard_normal(total, dtype=np.float32),
            "y": rng.standard_normal(total, dtype=np.float32), "out": np.zeros(total, np.float32),
            "n": np.uint32(total)}


def kernel():
    return {"ptx": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=lambda i: (int(i["n"]) + 127) // 128, block=128)}


@pytest.fixture(scope="module")
def two_axes():
    return ptxmoe.sweep(kernel(), make_inputs, sizes={"n": [128, 512], "rows": [1, 2]}, backend="sim",
                        static=False, min_bytes=lambda i: 12 * int(i["n"]))


def test_one_case_per_point_with_the_axes_as_dataframe_columns(two_axes):
    assert two_axes.cases == ["n=128,rows=1", "n=128,rows=2", "n=512,rows=1", "n=512,rows=2"]
    frame = two_axes.to_dataframe()
    assert list(frame.columns[list(frame.columns).index("preset") + 1:][:2]) == ["n", "rows"]
    assert list(zip(frame["n"], frame["rows"], strict=True)) == [(128, 1), (128, 2), (512, 1), (512, 2)]
    assert (frame["status"] == "ok").all() and frame["achieved_gbps"].notna().all()
    assert two_axes.doc["settings"]["axes"] == ["n", "rows"]


def test_the_plot_has_a_line_per_implementation_and_other_axis_value(two_axes):
    records = sweep_records(two_axes.sweep)
    assert sorted({r["series"] for r in records}) == ["ptx [rows=1]", "ptx [rows=2]"]
    figs: dict = {}
    html = sweep_section(two_axes.sweep, figs, "modelled")
    assert set(figs) == {"fig-sweep-time", "fig-sweep-gbps"} and "Sweep over sizes" in html
    assert sweep_section(ptxmoe.compare(kernel(), make_inputs, cases={"c": {"n": 128}}, backend="sim",
                                        static=False).sweep, {}, "modelled") == ""


@pytest.mark.parametrize("sizes, match", [({}, "non-empty dict"), ({"n": []}, "non-empty list of numbers"),
                                          ({"n": [1, 1]}, "repeats"), ({"impl": [1]}, "table's columns"),
                                          ({"n": "128"}, "list of numbers")])
def test_bad_axes_are_named(sizes, match):
    with pytest.raises(ptxmoe.InputError, match=match):
        ptxmoe.sweep(kernel(), make_inputs, sizes=sizes, backend="sim")


def test_fixed_args_and_cases_are_kept_apart():
    with pytest.raises(ptxmoe.InputError, match="both give n"):
        ptxmoe.sweep(kernel(), make_inputs, sizes={"n": [128]}, fixed={"n": 4}, backend="sim")
    with pytest.raises(ptxmoe.InputError, match="makes its cases"):
        ptxmoe.sweep(kernel(), make_inputs, sizes={"n": [128]}, cases={}, backend="sim")

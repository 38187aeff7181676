"""Issue 31 item 1: no silent wrong answers. On sim every array read back starts as never written and a row records
the fraction no store reached; a kernel that writes nothing, or a grid too small for its output, fails its row with
or without a check (unless declared allowed)."""
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import ptxmoe
from ptxmoe.compare import unwritten_problem

HERE = Path(__file__).resolve().parent
SAXPY_PTX = (HERE / "saxpy.ptx").read_text()
STORES_NOTHING = SAXPY_PTX.replace("st.global.f32 [%rd7], %f4;", "")


def make_inputs(rng, n=512):
    return {"a": np.float32(1.5), "x": rng.standard_normal(n, dtype=np.float32),
            "y": rng.standard_normal(n, dtype=np.float32), "out": np.zeros(n, np.float32), "n": np.int32(n)}


def saxpy(a, x, y, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = a * x[i] + y[i]


@pytest.fixture(scope="module")
def unchecked():
    kernels = {"ptx": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=2, block=256),
               "few_blocks": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=256),
               "writes_nothing": ptxmoe.PtxKernel(STORES_NOTHING, "saxpy", grid=2, block=256),
               "numba_few": ptxmoe.NumbaKernel(saxpy, grid=1, block=128)}
    return ptxmoe.compare(kernels, make_inputs, backend="sim", static=False)


def test_every_row_records_the_fraction_never_written_without_a_check(unchecked):
    assert unchecked.row("ptx").unwritten == {"x": 1.0, "y": 1.0, "out": 0.0}
    assert unchecked.row("few_blocks").unwritten["out"] == pytest.approx(0.5)
    assert unchecked.row("numba_few").unwritten["out"] == pytest.approx(0.75)
    assert unchecked.row("writes_nothing").unwritten["out"] == 1.0


def test_a_kernel_writing_nothing_or_too_few_blocks_fails_and_gets_no_verdict(unchecked):
    assert unchecked.ok("ptx")
    few = unchecked.row("few_blocks")
    assert few.status == "failed" and "output out: 50% of its elements never written" in few.reason
    assert unchecked.row("numba_few").status == "failed"
    nothing = unchecked.row("writes_nothing")
    assert nothing.status == "failed" and "wrote nothing" in nothing.reason
    for impl in ("few_blocks", "writes_nothing"):
        v = unchecked.verdict(impl, "ptx")
        assert v.verdict is None and v.speedup is None and "failed" in v.reason


def test_declared_outputs_and_allowed_unwritten():
    kernels = {"few_blocks": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=256)}
    declared = ptxmoe.compare(kernels, make_inputs, outputs=["out"], backend="sim", static=False)
    assert declared.row("few_blocks").status == "failed"
    assert declared.row("few_blocks").unwritten == {"out": pytest.approx(0.5)}
    allowed = ptxmoe.compare(kernels, make_inputs, outputs=["out"], backend="sim", static=False,
                             allow_unwritten=["out"])
    assert allowed.ok("few_blocks") and allowed.row("few_blocks").unwritten == {"out": pytest.approx(0.5)}
    with pytest.raises(ptxmoe.InputError, match="allow_unwritten"):
        ptxmoe.compare(kernels, make_inputs, backend="sim", allow_unwritten="out")


def test_a_failed_check_is_still_shown_beside_the_unwritten_output():
    kernels = {"few_blocks": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=256)}

    def check(outputs, inputs):
        return False, "values differ"
    result = ptxmoe.compare(kernels, make_inputs, check=check, outputs=["out"], backend="sim", static=False)
    reason = result.row("few_blocks").reason
    assert "never written" in reason and "values differ" in reason


def test_unwritten_rule():
    assert unwritten_problem({}, None, False) is None  # not watched (gpu)
    assert unwritten_problem({"x": 1.0, "out": 0.0}, None, False) is None  # x is an input
    assert "wrote nothing" in unwritten_problem({"x": 1.0, "out": 1.0}, None, False)
    assert unwritten_problem({"x": 1.0, "out": 1.0}, None, True) is None
    assert "output out: 25%" in unwritten_problem({"x": 1.0, "out": 0.25}, None, False)
    assert unwritten_problem({"x": 1.0, "out": 0.25}, None, ("out",)) is None
    assert "output out" in unwritten_problem({"x": 0.5, "out": 0.25}, ("out",), ("x",))
    assert unwritten_problem({"x": 0.5, "out": 0.0}, ("out",), False) is None  # x is not a declared output

"""ptxmoe.compare end to end on the sim backend: the acceptance script, failed checks, pairwise verdicts, save ->
dashboard / export, and errors that name the implementation. The GPU tier runs the same script with backend="gpu"."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import ptxmoe
from harness.timing.stats import VERDICTS, verdict_of

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SAXPY_PTX = (HERE / "saxpy.ptx").read_text()
# the same entry, but it forgets y: out = a * x (a wrong implementation the check must catch)
WRONG_PTX = SAXPY_PTX.replace("fma.rn.f32 %f4, %f1, %f2, %f3;", "mul.f32 %f4, %f1, %f2;")


def saxpy(a, x, y, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = a * x[i] + y[i]


def make_inputs(rng, n=512):
    return {"a": np.float32(1.5), "x": rng.standard_normal(n, dtype=np.float32),
            "y": rng.standard_normal(n, dtype=np.float32), "out": np.zeros(n, np.float32), "n": np.int32(n)}


def check(outputs, inputs):
    # atol: with or without fma, results may differ by an ulp of a * x
    np.testing.assert_allclose(outputs["out"], inputs["a"] * inputs["x"] + inputs["y"], rtol=1e-6, atol=1e-6)


def grid(inputs):
    return (int(inputs["n"]) + 127) // 128


def _script(backend: str) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, str(HERE / "user_script.py"), backend], capture_output=True, text=True,
                          cwd=ROOT, check=False, env=env, timeout=300)


@pytest.mark.sim
def test_user_script_compares_own_numba_and_ptx_kernels_on_sim():
    proc = _script("sim")
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("VERDICT"))
    assert "ptx vs numba [default]:" in line
    assert "(modelled v1; 95% prediction, fitted on published paired rows)" in line
    assert any(word in line for word in VERDICTS)


@pytest.mark.gpu
def test_user_script_runs_unchanged_on_a_gpu():
    proc = _script("gpu")
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("VERDICT"))
    assert "(measured; 95% bootstrap)" in line and any(word in line for word in VERDICTS)


@pytest.fixture(scope="module")
def three():
    """Numba, a correct PTX and a wrong PTX saxpy over two sizes (grid from the inputs)."""
    return ptxmoe.compare({"numba": ptxmoe.NumbaKernel(saxpy, grid=grid, block=128),
                           "ptx": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=grid, block=128),
                           "wrong": ptxmoe.PtxKernel(WRONG_PTX, "saxpy", grid=grid, block=128)},
                          make_inputs, check=check, outputs=["out"], name="saxpy", backend="sim",
                          cases={"n=512": {"n": 512}, "n=1000": {"n": 1000}}, seed=7,
                          min_bytes=lambda inp: 3 * inp["x"].nbytes, flops=lambda inp: 2 * inp["x"].size)


@pytest.mark.sim
def test_rows_are_checked_timed_counted_and_analysed(three):
    assert three.backend == "sim" and three.basis == "modelled"
    assert three.impls == ["numba", "ptx", "wrong"] and three.cases == ["n=512", "n=1000"]
    for case, n in (("n=512", 512), ("n=1000", 1000)):
        for impl in ("numba", "ptx"):
            row = three.row(impl, case)
            assert row.status == "ok", row.reason
            assert row.launches[0].grid == (-(-n // 128), 1, 1)
            assert row.timing.basis == "modelled" and three.time_us(impl, case) > 0
            # every thread of the grid ran: the simulator counted one thread per element at least
            assert three.counters(impl, case)["smsp__thread_inst_executed.sum"] >= n
            assert three.static(impl, case).totals.registers_max > 0
            assert row.throughput.min_bytes == 3 * 4 * n
    assert three.row("numba", "n=512").language == "numba" and three.row("ptx", "n=512").language == "ptx"


@pytest.mark.sim
def test_a_wrong_implementation_fails_its_check_and_gets_no_verdict(three):
    row = three.row("wrong", "n=512")
    assert row.status == "failed" and not three.ok("wrong", "n=512")
    assert "wrong" in row.reason and "Not equal to tolerance" in row.reason
    v = three.verdict("wrong", "numba", case="n=512")
    assert v.verdict is None and v.speedup is None and "wrong" in v.reason


@pytest.mark.sim
def test_pairwise_verdicts_are_the_ratio_of_modelled_times(three):
    pairs = sorted((v.case, v.candidate, v.baseline) for v in three.verdicts)
    assert pairs == sorted((c, cand, base) for c in ("n=512", "n=1000")
                           for base, cand in (("numba", "ptx"), ("numba", "wrong"), ("ptx", "wrong")))
    v = three.verdict("ptx", "numba", case="n=1000")
    expected = three.time_us("numba", "n=1000") / three.time_us("ptx", "n=1000")
    assert v.speedup == pytest.approx(expected)
    # the interval is the 95% prediction interval of the published paired rows (no device profile given)
    assert v.ci_lo < v.ci_hi and v.confidence == 0.95  # never a zero-width interval
    from ptxsim.model.interval_table import speedup_interval, version_fits

    fits = version_fits("v1")  # the committed fits of the default model, same or different limiters
    assert any((v.ci_lo, v.ci_hi) == pytest.approx(speedup_interval(v.speedup, same, fits)) for same in (True, False))
    assert v.verdict == verdict_of(v.ci_lo, v.ci_hi)
    with pytest.raises(ptxmoe.InputError, match="pass case="):
        three.verdict("ptx", "numba")
    with pytest.raises(ptxmoe.InputError, match="2 verdicts match"):
        three.verdict("wrong", case="n=512")


@pytest.mark.sim
def test_repr_and_dataframe(three):
    text = repr(three)
    assert "saxpy on sim" in text and "modelled" in text and "ptx vs numba [n=512]" in text and "failed" in text
    frame = three.to_dataframe()
    assert len(frame) == 6 and list(frame["impl"]) == ["numba", "ptx", "wrong"] * 2
    ptx = frame[(frame["impl"] == "ptx") & (frame["preset"] == "n=1000")].iloc[0]
    assert ptx["speedup_vs_numba"] == pytest.approx(three.verdict("ptx", "numba", case="n=1000").speedup)
    assert ptx["time_us"] == pytest.approx(three.time_us("ptx", "n=1000"))


@pytest.mark.sim
def test_save_then_dashboard_and_export_show_the_users_kernels(three, tmp_path):
    import pandas as pd

    from harness.cli import main

    run_dir = tmp_path / "runs" / "mine"
    three.save(run_dir)
    with pytest.raises(ptxmoe.PtxmoeError, match="exists already"):
        three.save(run_dir)
    assert main(["dashboard", str(run_dir)]) == 0
    html = (run_dir / "dashboard.html").read_text()
    assert "saxpy" in html and "n=1000" in html
    assert main(["export", str(run_dir)]) == 0
    table = pd.read_csv(run_dir / "run.csv")
    assert list(table["key"]) == [r.key for r in three.rows]
    loaded = ptxmoe.load(run_dir)
    assert loaded.verdict("ptx", "numba", case="n=512") == three.verdict("ptx", "numba", case="n=512")


@pytest.mark.sim
def test_cases_share_inputs_across_implementations_and_are_reproducible(three):
    seeds = {(r.preset, r.impl): r.seed for r in three.rows}
    assert seeds[("n=512", "numba")] == seeds[("n=512", "ptx")] != seeds[("n=1000", "numba")]

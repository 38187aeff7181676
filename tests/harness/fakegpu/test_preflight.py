"""scripts/gpu_preflight.py: on the fake driver every check is tried and recorded in order, an sm_90a module goes in
with the arch-specific JIT target and as a ptxas cubin, a failure does not stop the next check, a sticky error
stops this process with the rest named; on ptxsim the tiny Hopper kernels compute what the checks expect."""
import importlib.util
import io
import json
from pathlib import Path

import numpy as np
import pytest

from tests.harness.fakegpu.fakes import CUjit_target, CUresult

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "gpu_preflight.py"


@pytest.fixture(scope="module")
def preflight():
    spec = importlib.util.spec_from_file_location("gpu_preflight", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ON_FAKE = ["packages", "device", "ptx", "sm90a_jit", "sm90a_cubin", "cluster", "tensor_map", "shared_optin",
           "setmaxnreg", "numba", "cpp"]


def test_every_check_runs_in_order_and_is_written_before_the_next(fake_gpu, preflight, tmp_path):
    out = tmp_path / "preflight.jsonl"
    seen_before = {}
    original = dict(preflight.CHECKS)

    def spy(name):
        def check(ctx):
            seen_before[name] = len(out.read_text().splitlines()) if out.exists() else 0
            return original[name](ctx)
        return check

    checks = tuple((name, spy(name)) for name, _ in preflight.CHECKS)
    preflight.CHECKS = checks
    try:
        results = preflight.run_checks(ON_FAKE, out, preflight.Context(), log=io.StringIO())
    finally:
        preflight.CHECKS = tuple((name, original[name]) for name, _ in checks)
    assert [r["check"] for r in results] == ON_FAKE
    assert seen_before == {name: i for i, name in enumerate(ON_FAKE)}  # each earlier result already on disk
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [x["check"] for x in lines] == ON_FAKE
    status = {r["check"]: r["status"] for r in results}
    assert status["packages"] == status["device"] == "ok"
    assert results[1]["detail"]["driver_cuda"] == "13.0" and results[1]["detail"]["MULTIPROCESSOR_COUNT"] == 132
    # the fake computes nothing (memory reads back zeros): every launch ran and was judged wrong, none errored
    assert all(status[n] == "wrong" for n in ON_FAKE[2:]), status
    assert fake_gpu.errors == []
    loads = [(x["via"], x["target"]) for x in fake_gpu.module_loads]
    assert ("jit", CUjit_target.CU_TARGET_COMPUTE_90A) in loads and ("cubin", None) in loads
    launches = {x["name"]: x for x in fake_gpu.launches}
    assert launches["preflight_optin"]["shared"] == preflight.OPTIN_BYTES
    assert {"preflight_cluster", "preflight_tma", "preflight_setmaxnreg", "_numba_iota", "preflight_cpp"} <= set(
        launches)


def test_a_failed_check_does_not_stop_the_next(fake_gpu, preflight):
    fake_gpu.jit_error = "ptxas fatal: something the JIT refused"
    results = preflight.run_checks(["ptx", "sm90a_cubin", "cluster"], None, preflight.Context(), log=io.StringIO())
    assert [r["status"] for r in results] == ["error", "wrong", "error"]  # the cubin needs no JIT
    assert "something the JIT refused" in results[0]["error"] and not results[0]["sticky"]


def test_a_sticky_error_stops_here_and_names_the_rest(fake_gpu, preflight):
    fake_gpu.poison("preflight_cluster", CUresult.CUDA_ERROR_ILLEGAL_ADDRESS)
    results = preflight.run_checks(["ptx", "cluster", "tensor_map", "setmaxnreg"], None, preflight.Context(),
                                   log=io.StringIO())
    assert [r["check"] for r in results] == ["ptx", "cluster"]
    assert results[-1]["sticky"] is True and results[-1]["rest"] == ["tensor_map", "setmaxnreg"]
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in results[-1]["error"]


@pytest.mark.sim
def test_the_hopper_kernels_compute_what_the_checks_expect_on_ptxsim(preflight):
    from harness.backends.sim import SimBackend

    names = ["cluster", "tensor_map", "shared_optin", "setmaxnreg"]
    results = preflight.run_checks(names, None, preflight.Context(SimBackend()), log=io.StringIO())
    assert [(r["check"], r["status"]) for r in results] == [(n, "ok") for n in names], results


def test_a_wrong_result_names_the_first_bad_element(preflight):
    with pytest.raises(preflight.Wrong, match=r"x: element 2 is 9, expected 2 \(1 of 4 differ\)"):
        preflight._expect(np.array([0, 1, 9, 3]), np.arange(4), "x")


def test_main_hands_the_rest_to_a_fresh_process_after_a_sticky_error(preflight, monkeypatch, tmp_path):
    from types import SimpleNamespace

    out = tmp_path / "p.jsonl"
    monkeypatch.setattr(preflight, "run_checks", lambda names, path, ctx: [
        {"check": "ptx", "status": "ok"}, {"check": "cluster", "status": "error", "sticky": True,
                                           "rest": ["tensor_map", "setmaxnreg"]}])
    ran = []

    def fresh_process(cmd, check):
        ran.append(cmd)
        return SimpleNamespace(returncode=3)

    monkeypatch.setattr(preflight.subprocess, "run", fresh_process)
    assert preflight.main(["--out", str(out)]) == 3
    (cmd,) = ran
    assert cmd[2:] == ["--only", "tensor_map,setmaxnreg", "--out", str(out)] and cmd[1].endswith("gpu_preflight.py")


def test_main_refuses_an_unknown_check(preflight, capsys):
    with pytest.raises(SystemExit):
        preflight.main(["--only", "ptx,warp_drive"])
    assert "unknown check(s) ['warp_drive']" in capsys.readouterr().err

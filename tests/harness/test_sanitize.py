"""`ptxmoe compare --sanitize`: ptxsim's sanitizers on every launch of both paths, findings recorded and failing."""
import json

import numpy as np
import pytest

from harness import cell
from harness.backends.sim import SimBackend, sanitize_tools
from harness.cli import main
from harness.errors import UnknownNameError
from tests.harness.test_backends_sim import ADD_PTX


def test_sanitize_tools_parses_names():
    from ptxsim.sanitizers import NAMES

    assert sanitize_tools("all") == tuple(NAMES)
    assert sanitize_tools("nc, memcheck") == ("memcheck", "nc")  # ptxsim's order, whatever the order given
    assert sanitize_tools(None) == () and sanitize_tools("") == ()
    with pytest.raises(UnknownNameError, match=r"unknown sanitizer 'memchek'.*racecheck"):
        sanitize_tools("memcheck,memchek")


def _oob_launch(backend, n_extra: int):
    """add_scalar over 64 floats told n = 64 + n_extra: the extra threads read and write past both buffers."""
    src = backend.to_device(np.arange(64, dtype=np.float32))
    dst = backend.empty((64,), np.float32)
    return backend.launch_ptx(ADD_PTX, "add_scalar", 1, 96, [src, dst, np.float32(1), np.uint32(64 + n_extra)])


def test_backend_collects_findings_with_where():
    backend = SimBackend(sanitize="memcheck")
    _oob_launch(backend, 3)
    findings = backend.sanitizer_findings()
    assert findings, "memcheck found nothing in a kernel that reads and writes past its buffers"
    first = findings[0]
    assert first["tool"] == "memcheck" and first["kernel"] == "add_scalar" and first["launch"] == "add_scalar"
    assert first["cta"] == [0, 0, 0] and first["thread"] == [64, 0, 0]  # the first thread past the end
    lines = ADD_PTX.splitlines()
    assert lines[first["line"] - 1].strip().startswith(("ld.global", "st.global"))
    assert first["address"] > 0 and "PTX line" in first["text"]
    assert sum(f["count"] for f in findings) == 6  # 3 threads, one bad load and one bad store each


def test_backend_without_sanitize_records_nothing():
    backend = SimBackend()
    _oob_launch(backend, 0)
    assert backend.sanitize == () and backend.sanitizer_findings() == []


def test_initcheck_treats_poisoned_outputs_as_unwritten():
    """empty() poisons (kernels.md: unwritten outputs are detectable); under initcheck reading poison is reported,
    reading an uploaded input is not."""
    backend = SimBackend(sanitize="initcheck")
    src, dst = backend.empty((64,), np.float32), backend.empty((64,), np.float32)
    backend.launch_ptx(ADD_PTX, "add_scalar", 1, 64, [src, dst, np.float32(1), np.uint32(64)])
    findings = backend.sanitizer_findings()
    assert findings and all(f["tool"] == "initcheck" and "uninitialised global" in f["message"] for f in findings)
    assert sum(f["count"] for f in findings) == 64  # every thread read a poisoned float, once
    assert np.isnan(backend.to_host(src)).all()  # still poison
    clean = SimBackend(sanitize="initcheck")
    _oob_launch(clean, 0)
    assert clean.sanitizer_findings() == []


def test_gpu_backend_refuses_sanitize(tmp_path, capsys):
    assert main(["compare", "--backend", "gpu", "--sanitize", "all", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "compute-sanitizer --tool memcheck python -m harness.cli compare --backend gpu" in err
    assert "Traceback" not in err and not list(tmp_path.iterdir())


def test_unknown_sanitizer_exits_2(tmp_path, capsys):
    assert main(["compare", "--backend", "sim", "--sanitize", "bogus", "--out", str(tmp_path)]) == 2
    assert "unknown sanitizer 'bogus'" in capsys.readouterr().err


def test_finding_fails_the_row_and_is_recorded(tmp_path, capsys, monkeypatch):
    """The real Numba gate, followed by a launch reading past an input: the check passes, memcheck fails the row."""
    real_find = cell.find_run

    def find(impl, kernel):
        run, why = real_find(impl, kernel)
        if impl != "numba" or run is None:
            return run, why

        def buggy(backend, args, preset, **params):
            records = list(run(backend, args, preset, **params) or backend.records)
            logits = args["logits"]
            out = backend.empty((logits.nbytes // 4 + 2,), np.float32)
            n = np.uint32(logits.nbytes // 4 + 2)
            records.append(backend.launch_ptx(ADD_PTX, "add_scalar", (int(n) + 127) // 128, 128,
                                              [logits, out, np.float32(0), n], tag="add_scalar_oob"))
            return records

        return buggy, ""

    monkeypatch.setattr(cell, "find_run", find)
    code = main(["compare", "--backend", "sim", "--preset", "tiny", "--kernels", "gate", "--impls", "numba,ptx",
                 "--sanitize", "memcheck", "--no-static", "--no-dashboard", "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 1
    doc = json.loads(next(tmp_path.glob("*/run.json")).read_text())
    assert doc["settings"]["sanitize"] == ["memcheck"]
    rows = {r["impl"]: r for r in doc["rows"]}
    assert rows["ptx"]["status"] == "ok" and rows["ptx"]["sanitizer"]["findings"] == []
    bad = rows["numba"]
    assert "correctness" in bad, bad.get("reason")
    assert bad["correctness"]["ok"] and bad["status"] == "failed"
    finding = bad["sanitizer"]["findings"][0]
    assert finding["launch"] == "add_scalar_oob" and finding["kernel"] == "add_scalar" and finding["tool"] == "memcheck"
    assert "memcheck" in bad["reason"] and "add_scalar" in bad["reason"]
    assert "[memcheck]" in captured.err and "PTX line" in captured.err and "FAILED (1 rows)" in captured.err


def test_resume_keeps_the_sanitizers(seed):
    from harness.commands.compare_cmd import settings_from_doc
    from harness.runner import CompareSettings

    settings = CompareSettings(backend="sim", presets=("tiny",), skews=("balanced",), kernels=("gate",), seed=seed,
                               sanitize=("memcheck", "nc"), model_estimate=False)
    assert settings_from_doc({"settings": settings.as_dict()}) == settings
    old = settings.as_dict()
    del old["sanitize"], old["model_estimate"]  # a run.json from before these settings existed
    restored = settings_from_doc({"settings": old})
    assert restored.sanitize == () and restored.model_estimate is True

"""`ptxmoe compare` on bad input: one line, exit 2, no traceback; SIGTERM, the run lock and --resume options."""
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.cli import main
from tests.harness.test_cli_compare import _only_run, fake  # noqa: F401 - fake is a fixture used by name

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("fake")  # compare on the fake backend of test_cli_compare


def _one_error_line(capsys, *needles) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _unwritable_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    if not os.access(folder, os.W_OK):
        return folder
    for candidate in (Path("/sys/kernel"), Path("/proc/sys")):  # root writes anywhere but in these
        try:
            (candidate / ".ptxmoe-probe").touch()
        except OSError:
            return candidate
        (candidate / ".ptxmoe-probe").unlink()
    pytest.skip("no unwritable folder on this machine (running as root without a read-only /sys)")


def test_out_that_is_a_file(tmp_path, capsys):
    target = tmp_path / "afile"
    target.write_text("x")
    assert main(["compare", "--kernels", "gate", "--out", str(target), "--no-dashboard"]) == 2
    _one_error_line(capsys, f"--out {target}: is a file")


def test_out_under_a_missing_parent(tmp_path, capsys):
    target = tmp_path / "no" / "such" / "profiles"
    assert main(["compare", "--kernels", "gate", "--out", str(target), "--no-dashboard"]) == 2
    _one_error_line(capsys, f"parent folder {target.parent} does not exist")
    assert not (tmp_path / "no").exists()  # nothing was created on the way


def test_out_unwritable(tmp_path, capsys):
    folder = _unwritable_dir(tmp_path)
    assert main(["compare", "--kernels", "gate", "--out", str(folder), "--no-dashboard"]) == 2
    _one_error_line(capsys, f"--out {folder}: folder is not writable")
    assert main(["compare", "--kernels", "gate", "--out", str(folder / "new"), "--no-dashboard"]) == 2
    _one_error_line(capsys, f"--out {folder / 'new'}: cannot create the folder")


@pytest.mark.parametrize("budget", ["-1", "0", "nan"])
def test_budget_must_be_positive(tmp_path, capsys, budget):
    assert main(["compare", "--kernels", "gate", "--out", str(tmp_path), "--budget", budget]) == 2
    _one_error_line(capsys, "--budget", "expected a time budget per row in seconds > 0")
    assert list(tmp_path.iterdir()) == []  # refused before a run folder was made


@pytest.mark.parametrize("value", ["0", "some", "-3"])
def test_a_bad_sample_is_one_line_and_creates_no_run(tmp_path, capsys, value):
    assert main(["compare", "--kernels", "gate", "--out", str(tmp_path), "--sample", value]) == 2
    _one_error_line(capsys, f"--sample {value!r}", "expected auto, off, or a positive number of waves")
    assert list(tmp_path.iterdir()) == []


def test_sample_is_recorded_and_read_back_on_resume(tmp_path, capsys):
    from harness.commands.compare_cmd import settings_from_doc

    assert main(["compare", "--kernels", "gate", "--out", str(tmp_path), "--sample", "4", "--no-static",
                 "--no-dashboard"]) == 0
    doc = json.loads((_only_run(tmp_path) / "run.json").read_text())
    assert doc["settings"]["sample"] == "4" and settings_from_doc(doc).sample == "4"
    del doc["settings"]["sample"]  # a run.json from before --sample: it never sampled
    assert settings_from_doc(doc).sample == "off"


def test_sample_on_gpu_is_refused():
    from harness.commands.compare_cmd import sample_option
    from harness.errors import InputError

    assert sample_option(None, "gpu") == "auto" and sample_option("OFF", "sim") == "off"
    with pytest.raises(InputError, match="--sample 2: sampling is a simulator option"):
        sample_option("2", "gpu")


def test_repeated_kernel_runs_once(tmp_path, capsys):
    assert main(["compare", "--kernels", "gate,gate", "--preset", "tiny,tiny", "--out", str(tmp_path),
                 "--no-static", "--no-dashboard"]) == 0
    err = capsys.readouterr().err
    assert "resumed" not in err and "[3/3] gate/ptx/tiny/balanced" in err and "[4/" not in err
    doc = json.loads((_only_run(tmp_path) / "run.json").read_text())
    assert [r["key"] for r in doc["rows"]] == ["gate/numba/tiny/balanced", "gate/cpp/tiny/balanced",
                                               "gate/ptx/tiny/balanced"]
    assert doc["settings"]["kernels"] == ["gate"] and doc["settings"]["presets"] == ["tiny"]


def test_run_json_is_readable_by_others(tmp_path):
    assert main(["compare", "--kernels", "gate", "--out", str(tmp_path), "--no-static", "--no-dashboard"]) == 0
    assert (_only_run(tmp_path) / "run.json").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("content,needle", [
    ("[1, 2]", "holds an array, not a run document"),
    (('{"schema_version": 1, "run_id": "r", "status": "complete", "settings": {}, "environment": {}, '
      '"rows": {}, "verdicts": []}'), "field 'rows' is an object; expected an array"),
    (('{"schema_version": 1, "run_id": "r", "status": "complete", "settings": {}, "environment": {}, '
      '"rows": [], "verdicts": []}'), "settings.backend is missing; expected a string"),
])
def test_resume_of_json_that_is_no_run(tmp_path, capsys, content, needle):
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(content)
    assert main(["compare", "--resume", str(run_dir), "--no-dashboard"]) == 2
    _one_error_line(capsys, needle)


def _interrupted_run(tmp_path, capsys) -> Path:
    assert main(["compare", "--kernels", "gate", "--out", str(tmp_path), "--no-static", "--no-dashboard",
                 "--seed", "5"]) == 0
    run_dir = _only_run(tmp_path)
    doc = json.loads((run_dir / "run.json").read_text())
    doc["rows"], doc["status"] = doc["rows"][:1], "interrupted"
    (run_dir / "run.json").write_text(json.dumps(doc))
    capsys.readouterr()
    return run_dir


@pytest.mark.parametrize("extra,needle", [
    (["--preset", "small"], "--preset small (the run has tiny)"),
    (["--kernels", "gate,align"], "--kernels gate,align (the run has gate)"),
    (["--skew", "extreme"], "--skew extreme (the run has balanced)"),
    (["--seed", "6"], "--seed 6 (the run has 5)"),
])
def test_resume_with_disagreeing_options(tmp_path, capsys, extra, needle):
    run_dir = _interrupted_run(tmp_path, capsys)
    before = (run_dir / "run.json").read_text()
    assert main(["compare", "--resume", str(run_dir), "--no-dashboard", *extra]) == 2
    _one_error_line(capsys, needle, "keeps the settings in its run.json")
    assert (run_dir / "run.json").read_text() == before  # refused before touching the run


def test_resume_with_agreeing_options_runs(tmp_path, capsys):
    run_dir = _interrupted_run(tmp_path, capsys)
    assert main(["compare", "--resume", str(run_dir), "--no-dashboard", "--kernels", "gate", "--preset", "tiny",
                 "--seed", "5"]) == 0
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"


def test_resume_refuses_a_run_in_use(tmp_path, capsys):
    from harness.runlock import RunLock

    run_dir = _interrupted_run(tmp_path, capsys)
    before = (run_dir / "run.json").read_text()
    with RunLock(run_dir):  # another process resuming it: flock conflicts across open files, also in one process
        assert main(["compare", "--resume", str(run_dir), "--no-dashboard"]) == 2
        _one_error_line(capsys, f"{run_dir} is in use by another ptxmoe process (pid {os.getpid()})")
    assert (run_dir / "run.json").read_text() == before
    assert main(["compare", "--resume", str(run_dir), "--no-dashboard"]) == 0  # the lock went with its holder


SLOW_DRIVER = textwrap.dedent("""
    import sys, time
    import harness.backends.select as select
    from harness import cell
    from harness.cli import main
    from tests.harness.test_runner import FakeBackend, fake_run

    fast = fake_run("gate")

    def slow(*args, **kwargs):
        time.sleep(60)
        return fast(*args, **kwargs)

    select.select_backend = lambda name: FakeBackend()
    select.resolve_backend_name = lambda name: "sim"
    cell.find_run = lambda impl, kernel: ({"numba": fast, "cpp": fast, "ptx": slow}[impl], "")
    sys.exit(main(sys.argv[1:]))
""")


def test_sigterm_interrupts_like_sigint_and_resumes(tmp_path, capsys):
    argv = [sys.executable, "-c", SLOW_DRIVER, "compare", "--kernels", "gate", "--out", str(tmp_path),
            "--no-static", "--no-dashboard", "--seed", "3"]
    proc = subprocess.Popen(argv, cwd=REPO, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "[3/3]" in line and "running" in line:
            proc.send_signal(signal.SIGTERM)  # what `timeout` and CI runners send
            break
    rest = proc.stderr.read()
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM, "".join(lines) + rest
    assert "interrupted (SIGTERM)" in rest and "resume with: ptxmoe compare --resume" in rest
    assert "Traceback" not in rest
    run_dir = _only_run(tmp_path)
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["status"] == "interrupted" and [r["key"] for r in doc["rows"]] == ["gate/numba/tiny/balanced",
                                                                                  "gate/cpp/tiny/balanced"]
    assert main(["compare", "--resume", str(run_dir), "--no-dashboard"]) == 0  # resumable, row by row
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["status"] == "complete" and len(doc["rows"]) == 3


def test_a_bad_run_folder_beside_does_not_fail_compare(tmp_path, capsys):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "run.json").write_text("[]")  # valid JSON, not a run
    assert main(["compare", "--kernels", "gate", "--out", str(tmp_path), "--no-static"]) == 0
    cap = capsys.readouterr()
    assert "dashboard:" in cap.out and "Traceback" not in cap.err
    assert f"index: skipped {tmp_path / 'broken'}" in cap.err
    assert "broken" not in (tmp_path / "index.html").read_text()


def test_a_refused_option_creates_no_out_folder(tmp_path, capsys):
    assert main(["compare", "--kernels", "bogus", "--out", str(tmp_path / "profiles")]) == 2
    _one_error_line(capsys, "unknown kernel 'bogus'")
    assert not (tmp_path / "profiles").exists()


def test_bad_workers_is_one_line_and_creates_no_run(tmp_path, capsys):
    assert main(["compare", "--backend", "sim", "--kernels", "gate", "--workers", "-2", "--out", str(tmp_path)]) == 2
    _one_error_line(capsys, "--workers -2", "0 for one per core")
    assert list(tmp_path.iterdir()) == []

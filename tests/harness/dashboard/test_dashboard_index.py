"""The index skips run folders it cannot read (with a warning) and --vs of runs with no row in common is exit 2."""
import json

from dashboard_runs import copy_run

from harness import dashboard
from harness.cli import main
from harness.dashboard.index import index_records

BAD_RUNS = {
    "a-list": "[1, 2, 3]",
    "b-not-json": "{oops",
    "c-rows-object": json.dumps({"schema_version": 1, "run_id": "c", "status": "complete", "settings": {},
                                 "environment": {}, "rows": {"k": 1}, "verdicts": []}),
    "d-headline-breaks": json.dumps({"schema_version": 1, "run_id": "d", "status": "complete",
                                     "settings": {"backend": "sim"}, "environment": {}, "verdicts": [], "rows": []}),
}


def _headline_breaking_on_d(monkeypatch):
    """A run.json the summary code trips on in a way nobody foresaw (stands in for any unexpected shape)."""
    from harness.dashboard import index

    real = index.headline

    def headline(doc):
        if doc.run_id == "d":
            raise TypeError("unsupported operand type(s) for /: 'str' and 'float'")
        return real(doc)

    monkeypatch.setattr(index, "headline", headline)


def _bad_runs(profiles):
    for name, text in BAD_RUNS.items():
        (profiles / name).mkdir()
        (profiles / name / "run.json").write_text(text)


def test_bad_run_folders_are_skipped_with_a_warning(tmp_path, capsys, monkeypatch):
    _headline_breaking_on_d(monkeypatch)
    sim = copy_run("sim-tiny", tmp_path)
    _bad_runs(tmp_path)
    out = dashboard.build(sim)  # the good run's dashboard and the index are built all the same
    assert out.is_file()
    err = capsys.readouterr().err
    for name in BAD_RUNS:
        assert f"index: skipped {tmp_path / name}" in err
    assert "Traceback" not in err and "holds an array, not a run document" in err and "TypeError: unsupported" in err
    index = (tmp_path / "index.html").read_text()
    assert "sim-tiny/dashboard.html" in index and not any(name in index for name in BAD_RUNS)
    warnings = []
    assert [r["dir"] for r in index_records(tmp_path, warnings.append)] == ["sim-tiny"]
    assert len(warnings) == len(BAD_RUNS)


def test_dashboard_of_a_bad_run_is_one_line_exit_2(tmp_path, capsys):
    _bad_runs(tmp_path)
    for name in ("a-list", "b-not-json", "c-rows-object"):
        assert main(["dashboard", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def _renamed(tmp_path, name, field, old, new):
    run_dir = copy_run("sim-tiny", tmp_path, name)
    doc = json.loads((run_dir / "run.json").read_text())
    for item in doc["rows"] + doc["verdicts"]:
        if item.get(field) == old:
            item[field] = new
            item["key"] = item["key"].replace(f"/{old}/" if field == "preset" else old, f"/{new}/"
                                              if field == "preset" else new)
    (run_dir / "run.json").write_text(json.dumps(doc))
    return run_dir


def test_vs_without_common_rows_says_what_differs(tmp_path, capsys):
    sim = copy_run("sim-tiny", tmp_path)
    other = _renamed(tmp_path, "other-preset", "preset", "tiny", "small")
    assert main(["dashboard", str(sim), "--vs", str(other)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"--vs {other}: no rows in common" in err and "presets tiny vs small" in err
    assert "kernels" not in err.split("(")[1].split(")")[0]  # only what tells them apart
    assert not (sim / "dashboard-vs-other-preset.html").exists()
    assert main(["dashboard", str(sim), "--vs", str(copy_run("sim-tiny", tmp_path, "twin"))]) == 0


def test_vs_names_the_kernels_when_they_differ(tmp_path, capsys):
    a = tmp_path / "a"
    a.mkdir()
    sim = copy_run("sim-real-ptx-only", a)  # gate, swiglu
    doc = json.loads((sim / "run.json").read_text())
    other = copy_run("sim-real-ptx-only", tmp_path, "align-only")
    odoc = dict(doc, rows=[dict(r, kernel="align", key=r["key"].replace(r["kernel"], "align", 1))
                           for r in doc["rows"] if r["kernel"] == "gate"], verdicts=[])
    (other / "run.json").write_text(json.dumps(odoc))
    assert main(["dashboard", str(sim), "--vs", str(other)]) == 2
    assert "kernels gate,swiglu vs align" in capsys.readouterr().err


def test_vs_of_a_bad_run_names_the_vs_option(tmp_path, capsys):
    sim = copy_run("sim-tiny", tmp_path)
    _bad_runs(tmp_path)
    assert main(["dashboard", str(sim), "--vs", str(tmp_path / "a-list")]) == 2
    err = capsys.readouterr().err
    assert f"error: --vs {tmp_path / 'a-list'}: " in err and "holds an array" in err and "Traceback" not in err

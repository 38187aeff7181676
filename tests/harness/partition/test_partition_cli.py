"""`ptxmoe partition --backend sim` end to end (small target so the simulated counters take seconds), the document,
the schedule table, the figures, and the error paths."""
import json

import pytest

from harness.cli import main
from harness.partition.sweep import DOC_FILE, PartitionSettings, load_doc, parse_sms, schedule_section, write_doc


def _has_sim() -> bool:
    import ptxsim

    return hasattr(ptxsim, "Device") and hasattr(ptxsim, "load_ptx")


needs_ptxsim = pytest.mark.skipif(not _has_sim(), reason="ptxsim.Device / ptxsim.load_ptx not available")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("profiles")
    code = main(["partition", "--backend", "sim", "--preset", "small", "--ep", "4", "--sms", "0,8,20",
                 "--out", str(out), "--seed", "7", "--pp", "4", "--microbatches", "8"])
    assert code == 0
    (folder,) = out.iterdir()
    return folder


@needs_ptxsim
def test_writes_a_modelled_partition_document(run_dir):
    assert run_dir.name.split("-")[1:3] == ["partition", "sim"]
    doc = load_doc(run_dir)
    assert doc["backend"] == "sim" and doc["label"].startswith("modelled")
    assert doc["seed"] == 7 and doc["settings"]["sms"] == [0, 8, 20]
    assert [(r["series"], r["comm SMs"]) for r in doc["rows"]] == [
        (s, n) for s in ("ptx/plain", "ptx/no_allocate", "numba/plain") for n in (0, 8, 20)]
    assert all(r["modelled"] is True for r in doc["rows"])
    assert all(r["GEMM SMs"] == 132 - r["comm SMs"] for r in doc["rows"])
    model = doc["model"]
    assert "model assumption, not a measurement" in model["note"]
    assert model["constants"]["l2_share[no_allocate]"]["value"] < model["constants"]["l2_share[plain]"]["value"]
    assert {c["name"] for c in model["counters"]} == {f"{op}[{s}]" for op in ("dispatch", "combine") for s in (
        "ptx/plain", "ptx/no_allocate", "numba/plain")} | {"gemm[up]", "gemm[down]"}
    assert all(c["check"] for c in model["counters"])
    methods = [r["method"] for r in doc["schedule"]["rows"]]
    assert methods == ["1F1B", "ZB1P", "DualPipe", "DualPipeV"]
    assert doc["schedule"]["derived_from"] == {**doc["schedule"]["derived_from"], "comm SMs": 20,
                                               "series": "ptx/no_allocate"}
    assert not list(run_dir.glob(".*.tmp"))  # the atomic write left no temp file


@needs_ptxsim
def test_prints_a_readable_table(run_dir, capsys):
    # the module fixture printed before capsys was active for this test; re-render from the document
    from harness.partition.report import render

    text = render(load_doc(run_dir))
    assert "modelled" in text and "NOTE: interference is a model assumption, not a measurement" in text
    lines = text.splitlines()
    header = next(line for line in lines if line.strip().startswith("comm SMs"))
    assert "GEMM slowdown %" in header and "overlapped us" in header
    assert sum(1 for line in lines if line.strip().startswith(("0 ", "8 ", "20 "))) == 9
    assert "DualPipeV" in text


@needs_ptxsim
def test_figures_are_labelled_modelled(run_dir):
    from harness.partition.figures import dashboard_section

    figs = dashboard_section(run_dir)
    assert len(figs) == 4
    for fig in figs:
        assert "modelled" in fig.layout.title.text
        assert fig.data and all(len(tr.x) > 0 for tr in fig.data)
    assert "model assumptions" in figs[3].layout.title.text


def test_dashboard_section_is_empty_without_a_partition_file(tmp_path):
    from harness.partition.figures import dashboard_section

    assert dashboard_section(tmp_path) == []


def test_dashboard_section_refuses_a_foreign_file(tmp_path):
    from harness.errors import InputError
    from harness.partition.figures import dashboard_section

    (tmp_path / DOC_FILE).write_text(json.dumps({"kind": "something else"}))
    with pytest.raises(InputError, match="not a partition.json"):
        dashboard_section(tmp_path)


@pytest.mark.parametrize("argv,message", [
    (["--sms", "0,x"], "--sms '0,x'"),
    (["--sms", "0,200"], "outside 0..131"),
    (["--backend", "tpu"], "unknown backend 'tpu'"),
    (["--device", "a100"], "a100"),
    (["--preset", "huge"], "unknown preset 'huge'"),
    (["--ep", "3"], "divisor"),
    (["--series", "numba/no_allocate"], "only numba/plain"),
    (["--sms", "0"], "at least one count > 0"),
])
def test_bad_options_exit_2_with_the_reason(argv, message, tmp_path, capsys):
    if "--sms" in argv and "0,200" in argv and not _has_sim():
        pytest.skip("the SM range is checked by the modelled sweep, which needs ptxsim")
    code = main(["partition", "--backend", "sim", "--preset", "small", "--out", str(tmp_path), *argv])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_parse_sms():
    assert parse_sms("0,4,8") == (0, 4, 8)
    assert parse_sms("0:33:4") == (0, 4, 8, 12, 16, 20, 24, 28, 32)


def test_settings_refuse_repeats_and_negatives():
    from harness.errors import InputError

    with pytest.raises(InputError, match="repeats a value"):
        PartitionSettings(sms=(0, 4, 4))
    with pytest.raises(InputError, match="-4"):
        PartitionSettings(sms=(0, -4))
    with pytest.raises(InputError, match="'auto'"):
        PartitionSettings(backend="auto")


def _row(n, series, step, serial):
    return {"comm SMs": n, "series": series, "step overlapped (us)": step, "step back-to-back (us)": serial}


def test_schedule_chunk_times_follow_the_anchor_row():
    rows = [_row(0, "ptx/no_allocate", 10.0, 10.0), _row(16, "ptx/no_allocate", 8.0, 12.0),
            _row(24, "ptx/no_allocate", 7.0, 14.0), _row(20, "ptx/plain", 1.0, 2.0)]
    section = schedule_section(rows, 4, 8)
    assert section["derived_from"]["comm SMs"] == 16  # nearest to 20 among no_allocate rows; ties go low
    t = section["chunk_times_ns"]
    assert (t["F"], t["B"], t["W"]) == (8000, 16000, 8000)
    assert t["FB"] == round(3 * 8000 * 8.0 / 12.0)
    assert len(section["rows"]) == 4


def test_write_doc_is_atomic_and_load_checks_the_kind(tmp_path):
    from harness.errors import InputError

    path = write_doc({"backend": "sim", "kind": "partition", "schema_version": 1, "rows": []}, tmp_path, "r1")
    assert path == tmp_path / "r1" / DOC_FILE
    assert load_doc(tmp_path / "r1")["run_id"] == "r1"
    (tmp_path / "r1" / DOC_FILE).write_text("{not json")
    with pytest.raises(InputError, match="cannot read"):
        load_doc(tmp_path / "r1")


@pytest.mark.parametrize("argv,message", [
    (["--microbatches", "1000000000"], "microbatches=1000000000; expected <= 4096"),
    (["--pp", "100000"], "pp=100000; expected <= 256"),
    (["--pp", "128", "--microbatches", "256"], "= 32768; expected <= 16384"),
    (["--microbatches", "3"], "(the schedule table): ZB1P: microbatches=3 with pp=8; expected >= 8"),
    (["--sms", "0:1000000000"], "1000000000 SM counts; expected at most 256"),
    (["--sms", "0,5000"], "each <= 1024"),
])
def test_sizes_have_upper_bounds_checked_before_the_sweep(argv, message, tmp_path, capsys, monkeypatch):
    from harness.partition import sweep

    monkeypatch.setattr(sweep, "run_sweep", lambda settings: pytest.fail("the sweep ran with sizes it must refuse"))
    assert main(["partition", "--backend", "sim", "--out", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not any(tmp_path.iterdir())


def test_bad_out_is_refused_before_the_sweep(tmp_path, capsys, monkeypatch):
    from harness.partition import sweep

    monkeypatch.setattr(sweep, "run_sweep", lambda settings: pytest.fail("the sweep ran with an unusable --out"))
    (tmp_path / "f").write_text("x")
    assert main(["partition", "--backend", "sim", "--out", str(tmp_path / "f")]) == 2
    assert "--out" in capsys.readouterr().err

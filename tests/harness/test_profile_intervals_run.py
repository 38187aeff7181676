"""A run given --device-profile (the CLI and ptxmoe.compare) whose profile carries measured paired variants: its
modelled verdicts' 95% intervals are fitted on those pairs, run.json says so (Verdict.interval_basis, the profile's
digest in the settings), the CLI's answer table says so, a malformed profile is refused naming the file and the
field, and --resume refuses another profile or a changed one. The measured ratios are fake readings built from the
model's own ratios with chosen small errors (measuring needs a GPU), so the measured-pairs interval is far narrower
than the published rows' one."""
import json

import pytest

from harness.cli import main
from harness.static import analyse_ptx
from ptxsim.model.devices import get_device
from ptxsim.model.paired import measured_pair_rows
from ptxsim.model.profile import DeviceProfile, MeasuredPair, load_profile, save_profile
from ptxsim.model.profile_intervals import PUBLISHED_BASIS, profile_digest

FAST = ("ilp_fma_1_vs_4", "ilp_iadd_1_vs_8", "stream_add_vs_copy", "stream_triad_vs_copy")  # quick on ptxsim
SMALL_ERRORS = (1.01, 0.99, 1.02, 1.0)


def _profile(path, errors=SMALL_ERRORS, names=FAST):
    """A profile of the H200 with the model's default constants and clock and measured pairs `errors` off the
    model's ratios (modelled / measured), as calibrate would write it."""
    modelled = {r.name: r.modelled for r in measured_pair_rows(get_device("H200 SXM"), dict.fromkeys(names, 1.0),
                                                                static_facts=analyse_ptx)}
    pairs = {n: MeasuredPair(n, modelled[n] / e, (modelled[n] / e * 0.99, modelled[n] / e * 1.01), 10)
             for n, e in zip(names, errors, strict=True)}
    save_profile(DeviceProfile("H200 SXM", {}, pairs=pairs), path)
    return path


def _compare(out, *extra) -> dict:
    assert main(["compare", "--backend", "sim", "--kernels", "gate", "--preset", "tiny", "--impls", "cpp,ptx",
                 "--no-static", "--no-dashboard", "--out", str(out), *extra]) == 0
    (run_dir,) = out.iterdir()
    return json.loads((run_dir / "run.json").read_text()) | {"_dir": str(run_dir)}


def _modelled(doc) -> dict:
    [v] = [v for v in doc["verdicts"] if v["speedup"] is not None]
    return v


def test_measured_pairs_set_the_verdict_interval_and_run_json_and_the_cli_say_so(tmp_path, capsys):
    profile = _profile(tmp_path / "h200-pairs.json")
    plain = _modelled(_compare(tmp_path / "plain"))
    capsys.readouterr()
    doc = _compare(tmp_path / "profiled", "--device-profile", str(profile))
    printed = capsys.readouterr().out
    v = _modelled(doc)
    digest = profile_digest(load_profile(profile))
    assert plain["interval_basis"] == PUBLISHED_BASIS
    assert v["interval_basis"] == f"4 measured pairs of profile h200-pairs.json (sha256 {digest})"
    assert doc["settings"]["device_profile_digest"] == digest
    # the same modelled times (no constants, no clock in the profile), another interval: the measured pairs' errors
    # are ~1%, the published rows' tens of per cent
    assert v["speedup"] == pytest.approx(plain["speedup"])
    assert v["ci_hi"] / v["ci_lo"] < (plain["ci_hi"] / plain["ci_lo"]) ** 0.5
    assert v["ci_lo"] <= v["speedup"] * 1.1 and v["speedup"] / 1.1 <= v["ci_hi"]
    assert "modelled 95% prediction intervals fitted on: 4 measured pairs of profile h200-pairs.json" in printed


def test_one_measured_pair_keeps_the_published_rows(tmp_path):
    profile = _profile(tmp_path / "one.json", errors=(1.0,), names=("ilp_fma_1_vs_4",))
    assert _modelled(_compare(tmp_path / "runs", "--device-profile", str(profile)))["interval_basis"] == \
        PUBLISHED_BASIS


def test_a_malformed_profile_is_refused_naming_the_file_and_the_field(tmp_path, capsys):
    import ptxmoe

    path = _profile(tmp_path / "bad.json")
    doc = json.loads(path.read_text())
    doc["pairs"]["ilp_fma_1_vs_4"]["ci95"] = [5.0, 1.0]
    path.write_text(json.dumps(doc))
    assert main(["compare", "--backend", "sim", "--kernels", "gate", "--preset", "tiny", "--impls", "ptx",
                 "--no-dashboard", "--out", str(tmp_path / "runs"), "--device-profile", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "pairs.ilp_fma_1_vs_4.ci95" in err and "Traceback" not in err
    with pytest.raises(ptxmoe.InputError, match=r"bad\.json.*pairs\.ilp_fma_1_vs_4\.ci95"):
        ptxmoe.compare({"a": ptxmoe.PtxKernel("x", "k", grid=1, block=1)}, lambda rng: {"x": 1.0}, backend="sim",
                       device_profile=str(path))


def test_resume_refuses_another_profile_or_a_changed_one(tmp_path, capsys):
    profile = _profile(tmp_path / "a.json")
    run_dir = _compare(tmp_path / "runs", "--device-profile", str(profile))["_dir"]
    other = _profile(tmp_path / "b.json", errors=(1.05, 0.95, 1.0, 1.0))
    capsys.readouterr()
    assert main(["compare", "--resume", run_dir, "--device-profile", str(other), "--no-dashboard"]) == 2
    assert f"--device-profile {other} (the run has {profile.resolve()})" in capsys.readouterr().err
    other.replace(profile)          # the same path, other content
    assert main(["compare", "--resume", run_dir, "--no-dashboard"]) == 2
    err = capsys.readouterr().err
    assert "is not the one the run started with" in err and profile_digest(load_profile(profile)) in err


def test_no_profile_pays_nothing_and_a_profiles_fits_are_computed_once(tmp_path, monkeypatch):
    from harness.verdicts import interval_fits
    from ptxsim.model import paired, profile_intervals
    from ptxsim.model.interval_table import version_fits

    path = _profile(tmp_path / "p.json")
    calls = []
    real = paired.measured_pair_rows

    def counted(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)
    monkeypatch.setattr(paired, "measured_pair_rows", counted)
    monkeypatch.setattr(profile_intervals, "_FITS_CACHE", {})
    assert interval_fits(None, "v1") == (version_fits("v1"), PUBLISHED_BASIS) and calls == []   # no model run
    first = interval_fits(str(path), "v1")
    assert len(calls) == 1 and set(calls[0]) == set(FAST)
    again = interval_fits(str(path), "v1")
    assert again[0] is first[0] and len(calls) == 1          # cached: the variants ran once
    assert interval_fits(str(path), "v2")[0] is not first[0] and len(calls) == 2   # per model version

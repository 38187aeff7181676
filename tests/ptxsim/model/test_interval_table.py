"""The committed interval table (interval_table.json): its fits are what its rows give, its rows are
validation.json's paired rows in speedup orientation, per model version; the orientation, the bias correction and the
measured-pairs hook."""
import json
import math
from types import SimpleNamespace

import pytest

from ptxsim.model import interval_table as it
from ptxsim.model.errors import ModelArgumentError
from ptxsim.model.intervals import fit_by_limiter, fit_log_ratio
from ptxsim.model.paired import PAIRS
from ptxsim.model.validation import RECORD

STALE = "ptxsim/model/interval_table.json is stale: run python benchmarks/model_validation.py"


def _validation_errors(doc: dict) -> dict[str, dict[str, float]]:
    """{version: {pair: modelled / published in the pair's own orientation}} from validation.json."""
    out = {doc["model_version"]: {p["name"]: p["error_ratio"] for p in doc["pairs"]}}
    for version, other in doc.get("other_models", {}).items():
        out[version] = dict(other["pairs"])
    return out


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_committed_fits_are_what_the_committed_rows_give(version):
    rows = it.committed_rows(version)
    assert len(rows) == it.error_figures(version)["n"] == len(PAIRS)
    refit = fit_by_limiter(rows)
    for key, fit in it.version_fits(version).items():
        for field in ("n", "bias", "spread", "t_quantile", "half_width"):
            assert getattr(fit, field) == pytest.approx(getattr(refit[key], field), rel=1e-12), (key, field, STALE)
        assert fit.basis == refit[key].basis


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_committed_rows_are_the_validation_records_rows_oriented(version):
    """Every row of the table is validation.json's pair of that version, turned to the faster variant's speedup."""
    doc = json.loads(RECORD.read_text())
    recorded = _validation_errors(doc)[version]
    units = {pair.name: (pair.unit, pair.value) for pair in PAIRS}
    for row in it.committed_rows(version):
        unit, published = units[row.name]
        expected = it.oriented_error(recorded[row.name] * published, published, unit)
        assert row.error_ratio == pytest.approx(expected, rel=1e-12), (row.name, STALE)
    figures = it.error_figures(version)
    errors = doc if doc["model_version"] == version else doc["other_models"][version]
    assert figures["error_pairs_predicted"] == pytest.approx(errors["error_pairs_predicted"], rel=1e-12), STALE
    assert figures["error_predicted"] == pytest.approx(errors["error_predicted"], rel=1e-12), STALE


def test_recorded_limiters_decide_the_split():
    rows = it.committed_rows("v1")
    assert all(r.same_limiter == (r.limiters[0] == r.limiters[1]) for r in rows)
    assert it.version_fits("v1")["same_limiter"].n == sum(r.same_limiter for r in rows)


@pytest.mark.parametrize("modelled, published, unit, expected", [
    (0.5, 0.4, "GB/s", 0.4 / 0.5),    # numerator slower by throughput: seen as denominator over numerator
    (2.0, 1.6, "GB/s", 2.0 / 1.6),    # numerator faster: as it is
    (2.0, 4.0, "clk", 2.0 / 4.0),     # numerator takes 4x the clocks: the denominator 4x faster, modelled 2x
    (0.5, 0.8, "clk", (1 / 0.5) / (1 / 0.8)),
])
def test_orientation_is_the_faster_variants_speedup(modelled, published, unit, expected):
    assert it.oriented_error(modelled, published, unit) == pytest.approx(expected)


def test_the_orientation_does_not_depend_on_which_variant_the_source_put_first():
    assert it.oriented_error(0.7, 0.5, "GB/s") == pytest.approx(it.oriented_error(1 / 0.7, 1 / 0.5, "GB/s"))
    assert it.oriented_error(0.7, 0.5, "clk") == pytest.approx(it.oriented_error(1 / 0.7, 1 / 0.5, "clk"))


def _fits(errors, same=True):
    fit = fit_log_ratio(errors, basis="same_limiter" if same else "different_limiters")
    return {"same_limiter": fit, "different_limiters": fit, "all": fit}


def test_an_understating_model_has_its_speedups_moved_away_from_one():
    fits = _fits([0.8 * f for f in (1.01, 0.99, 1.0, 1.02, 0.98)])   # every effect modelled 20% too small
    lo, hi = it.speedup_interval(1.2, True, fits)
    assert lo < 1.5 < hi and lo > 1.2                     # true ~ 1.2 / 0.8 = 1.5
    lo, hi = it.speedup_interval(1 / 1.2, True, fits)      # the other direction: mirrored
    assert lo < 1 / 1.5 < hi and hi < 1 / 1.2


def test_an_exaggerating_model_is_pulled_to_one_but_not_past_it():
    fits = _fits([1.5 * f for f in (1.01, 0.99, 1.0, 1.02, 0.98)])
    lo, hi = it.speedup_interval(1.2, True, fits)           # 1.2 modelled, effects 1.5x too big: centre 1, not 0.8
    assert math.sqrt(lo * hi) == pytest.approx(1.0)
    lo, hi = it.speedup_interval(3.0, True, fits)
    assert math.sqrt(lo * hi) == pytest.approx(2.0, rel=1e-3)


def test_no_difference_modelled_stays_centred_on_one():
    fits = _fits([0.7, 0.9, 1.1, 0.8])
    lo, hi = it.speedup_interval(1.0, True, fits)
    assert lo * hi == pytest.approx(1.0) and lo < 1 < hi


def test_different_limiters_use_their_own_fit():
    same = fit_log_ratio([1.0, 1.01, 0.99], basis="same_limiter")
    diff = fit_log_ratio([0.5, 1.5, 1.0], basis="different_limiters")
    fits = {"same_limiter": same, "different_limiters": diff, "all": same}
    narrow, wide = it.speedup_interval(1.3, True, fits), it.speedup_interval(1.3, False, fits)
    assert wide[0] < narrow[0] and narrow[1] < wide[1]


def test_measured_pairs_replace_or_augment_the_committed_rows():
    measured = [SimpleNamespace(error_ratio=e, same_limiter=s) for e, s in
                ((1.01, True), (0.99, True), (1.02, True), (0.9, False), (1.1, False))]
    replaced = it.version_fits("v1", measured)
    assert replaced["same_limiter"].n == 3 and replaced["different_limiters"].n == 2
    assert replaced["same_limiter"].spread < 0.03 < it.version_fits("v1")["same_limiter"].spread
    augmented = it.version_fits("v1", measured, mode="augment")
    assert augmented["all"].n == len(PAIRS) + 5
    with pytest.raises(ModelArgumentError, match="mode 'merge'"):
        it.version_fits("v1", measured, mode="merge")


def test_a_missing_version_or_table_names_what_is_wrong(tmp_path):
    with pytest.raises(ModelArgumentError, match="no entry for timing model 'v9'"):
        it.version_fits("v9")
    with pytest.raises(ModelArgumentError, match="unreadable"):
        it.version_fits("v1", path=tmp_path / "none.json")
    with pytest.raises(ModelArgumentError, match="finite number > 0"):
        it.speedup_interval(0.0, True, it.version_fits("v1"))


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("same", [True, False])
def test_decided_beyond_is_where_the_interval_just_excludes_one(version, same):
    fits = it.version_fits(version)
    edge = it.decided_beyond(fits["same_limiter" if same else "different_limiters"])
    assert it.speedup_interval(edge * 1.001, same, fits)[0] > 1.0 > it.speedup_interval(edge * 0.999, same, fits)[0]
    assert it.speedup_interval(1 / (edge * 1.001), same, fits)[1] < 1.0    # and SLOWER, mirrored
    assert f"{edge:.2f}x" in it.decides_text(version)


def test_a_measured_pair_is_oriented_like_the_published_ones():
    # the numerator took 2x the denominator's time on the GPU, 1.5x in the model: the faster variant's speedup is
    # 2.0 measured and 1.5 modelled
    row = it.measured_pair("copy_20_vs_all_sms", 1.5, 2.0, ("dram", "dram"))
    assert row.error_ratio == pytest.approx(0.75) and row.same_limiter and row.source == "measured"
    assert it.measured_pair("x", 1.5, 2.0, ("dram", "issue")).same_limiter is False
    fits = it.version_fits("v1", [row, it.measured_pair("y", 1.0, 1.1, ("issue", "issue"))])
    assert fits["same_limiter"].n == 2


# --- the absolute rows: each modelled row time's 95% prediction interval ---------------------------------------------
def _validation_absolute(doc: dict, version: str) -> list[tuple[str, str, str, float]]:
    """[(name, source, unit, modelled / published quantity)] of validation.json's PREDICTED absolute rows with a
    figure, for one model version (the other versions' rows are keyed "<name> <source>")."""
    rows = doc["rows"]
    ratios = ({f"{r['name']} {r['source']}": r["ratio"] for r in rows} if version == doc["model_version"]
              else doc["other_models"][version]["rows"])
    return [(r["name"], r["source"], r["unit"], ratios[f"{r['name']} {r['source']}"]) for r in rows
            if r["role"] == "predicted" and ratios[f"{r['name']} {r['source']}"]]


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_committed_absolute_rows_are_the_validation_records_predicted_rows_as_time_errors(version):
    doc = json.loads(RECORD.read_text())
    expected = _validation_absolute(doc, version)
    committed = json.loads(it.TABLE.read_text())["models"][version]["absolute"]["rows"]
    assert [(r["name"], r["source"], r["unit"]) for r in committed] == [e[:3] for e in expected], STALE
    for row, (_, _, unit, ratio) in zip(committed, expected, strict=True):
        # a throughput modelled 10% high is a time modelled 10% low
        assert row["time_error"] == pytest.approx(ratio if unit in ("clk", "ns", "us") else 1 / ratio,
                                                  rel=1e-12), (row["name"], STALE)
    assert len(committed) >= 10


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_committed_absolute_fit_is_what_its_rows_give(version):
    rows = json.loads(it.TABLE.read_text())["models"][version]["absolute"]["rows"]
    logs = [math.log(r["time_error"]) for r in rows]
    n = len(logs)
    bias = sum(logs) / n
    spread = math.sqrt(sum((x - bias) ** 2 for x in logs) / (n - 1))
    fit = it.time_fit(version)
    assert (fit.n, fit.confidence, fit.basis) == (n, 0.95, "absolute")
    assert (fit.bias, fit.spread) == pytest.approx((bias, spread), rel=1e-12), STALE
    t = it.time_interval(10.0, version)
    h = fit.t_quantile * spread * math.sqrt(1 + 1 / n)
    assert t == pytest.approx((10.0 * math.exp(-bias - h), 10.0 * math.exp(-bias + h)), rel=1e-12)


def test_time_errors_invert_throughputs_and_refuse_unknown_units():
    assert it.time_error(1.25, "GB/s") == pytest.approx(0.8) and it.time_error(1.25, "ns") == 1.25
    with pytest.raises(ModelArgumentError, match="unit 'furlongs'"):
        it.time_error(1.0, "furlongs")
    with pytest.raises(ModelArgumentError, match="ratio 0"):
        it.time_error(0, "ns")
    rows = [SimpleNamespace(name=f"r{i}", source="s", unit="GB/s", limiter="dram", ratio=r, role=role)
            for i, (r, role) in enumerate(((0.5, "predicted"), (2.0, "predicted"), (1.0, "fit"), (None, "predicted")))]
    entry = it.absolute_entry(rows)   # fit rows and rows without a figure are left out
    assert [r["name"] for r in entry["rows"]] == ["r0", "r1"] and entry["fit"]["n"] == 2
    assert entry["fit"]["bias"] == pytest.approx(0.0)


def test_a_table_without_absolute_rows_names_what_is_missing(tmp_path):
    doc = json.loads(it.TABLE.read_text())
    del doc["models"]["v1"]["absolute"]
    path = tmp_path / "table.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelArgumentError, match="no 'absolute' entry"):
        it.time_fit("v1", path)

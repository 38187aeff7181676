"""The answer table (harness.answer: PTX against the best C++ present, per cell) and the modelled verdict rule
(harness.verdicts.timed_verdict: the 95% prediction interval of the rows' model version and limiter split,
NOT_MODELLED when the model saw the same work, SAME [1, 1] for the very same PTX)."""
import pytest

from harness.answer import answer_rows, answer_text, best_cpp
from harness.implementations import CPP_SIDE, PTX_SIDE
from harness.run_records import (
    KernelStatic,
    ModelError,
    ModelledLaunch,
    ModelledTiming,
    Row,
    SimCounters,
    StaticFacts,
    Sweep,
    SweepSettings,
)
from harness.timing.stats import verdict_of
from harness.verdicts import not_modelled, timed_verdict
from ptxsim.model.interval_table import speedup_interval, version_fits


def _row(impl, us, *, status="ok", limiter="dram", version="v1", counters=None, digest=None, label="gate",
         preset="tiny"):
    launch = ModelledLaunch(name="k", modelled_s=us * 1e-6, model_version=version,
                            model_error=ModelError(relative=0.2, limiter=limiter))
    return Row(key=f"{label}/{impl}/{preset}/balanced", kernel=label, impl=impl, preset=preset, status=status,
               skew="balanced", timing=ModelledTiming(basis="modelled", modelled_us=us, launches=(launch,)),
               sim_counters=SimCounters(total=counters if counters is not None else {"inst": us}),
               static=None if digest is None else StaticFacts(kernels={"k": KernelStatic(entry="k", digest=digest)}))


def _sweep(*rows):
    return Sweep(schema_version=0, run_id="t", status="complete", settings=SweepSettings(backend="sim"),
                 environment={}, rows=rows, verdicts=())


def test_the_cpp_side_is_declared_once_and_holds_cutlass_and_triton():
    assert PTX_SIDE == "ptx" and set(CPP_SIDE) == {"cpp", "cutlass", "triton"}


def test_best_cpp_is_the_fastest_c_plus_plus_row_that_ran_ok():
    rows = {"cpp": _row("cpp", 10.0), "triton": _row("triton", 8.0), "cutlass": _row("cutlass", 1.0, status="failed"),
            "numba": _row("numba", 0.5), "ptx": _row("ptx", 0.1)}
    assert best_cpp(rows) == "triton"                   # failed cutlass, numba and ptx are not candidates
    assert best_cpp({**rows, "cutlass": _row("cutlass", 7.0)}) == "cutlass"  # a cutlass row just joins
    assert best_cpp({"numba": rows["numba"]}) is None


def test_answer_row_is_ptx_against_the_best_cpp_with_the_prediction_interval():
    sweep = _sweep(_row("cpp", 10.0, limiter="issue"), _row("triton", 8.0), _row("cutlass", 9.0),
                   _row("ptx", 4.0, limiter="tensor"))
    [a] = answer_rows(sweep)
    assert (a.best_cpp, a.cpp_present, a.ptx) == ("triton", ("cpp", "cutlass", "triton"), "ptx")
    assert a.speedup == pytest.approx(2.0) and (a.ptx_limiter, a.cpp_limiter) == ("tensor", "dram")
    assert (a.ci_lo, a.ci_hi) == pytest.approx(speedup_interval(2.0, False, version_fits("v1")))   # different limiters
    assert a.verdict == verdict_of(a.ci_lo, a.ci_hi) and (a.confidence, a.interval, a.model_version) == (
        0.95, "prediction", "v1")
    text = answer_text([a])
    assert text.startswith("ANSWER: hand PTX against the best C++ present")
    assert "PTX / Triton" in text and "2.00x [" in text and "95% prediction, modelled v1" in text
    assert "tensor / dram" in text


def test_answer_says_why_a_cell_has_no_ratio():
    sweep = _sweep(_row("cpp", 10.0), _row("ptx", 4.0, status="failed"),
                   _row("cpp", 3.0, label="align"), _row("numba", 2.0, label="topk"),
                   _row("ptx", 2.0, label="moe"), _row("numba", 2.0, label="moe"))
    by_cell = {a.label: a for a in answer_rows(sweep)}
    assert set(by_cell) == {"gate", "align", "moe"}      # a cell of neither side is not the question's
    assert by_cell["gate"].reason.startswith("PTX failed") and by_cell["gate"].best_cpp == "cpp"
    assert by_cell["align"].reason == "no PTX row"
    assert by_cell["moe"].reason.startswith("no C++-side row ran ok") and by_cell["moe"].speedup is None


def test_modelled_verdict_uses_the_rows_version_and_limiter_split():
    base, impl = _row("cpp", 12.0, version="v2"), _row("ptx", 10.0, version="v2")
    v = timed_verdict(base, impl, "modelled")
    assert (v["model_version"], v["limiter_split"], v["limiters"]) == ("v2", "same_limiter", ["dram", "dram"])
    assert (v["ci_lo"], v["ci_hi"]) == pytest.approx(speedup_interval(1.2, True, version_fits("v2")))
    mixed = timed_verdict(base, _row("ptx", 10.0, version="v1"), "modelled")
    assert isinstance(mixed, str) and "two model versions" in mixed


def test_measured_pairs_reach_the_verdict_through_the_fits_hook():
    from types import SimpleNamespace

    tight = version_fits("v1", [SimpleNamespace(error_ratio=e, same_limiter=True) for e in (1.01, 0.99, 1.0, 1.02)]
                         + [SimpleNamespace(error_ratio=e, same_limiter=False) for e in (1.0, 1.03)])
    base, impl = _row("cpp", 12.0), _row("ptx", 10.0)
    published = timed_verdict(base, impl, "modelled")
    assert published["verdict"] == "UNDECIDED"      # today's paired errors: too wide
    assert published["interval_basis"] == "published paired rows"
    given = timed_verdict(base, impl, "modelled", fits=tight)
    assert given["verdict"] == "FASTER" and given["interval_basis"] == "fits given by the caller"


def test_same_time_and_counters_are_not_modelled_unless_the_ptx_is_the_same():
    counters = {"smsp__inst_executed.sum": 100.0, "dram__bytes_read.sum": 4096.0}
    base = _row("cpp", 10.0, counters=counters, digest="aaa")
    other = _row("ptx", 10.0, counters=dict(counters), digest="bbb")
    assert not_modelled(base, other)
    v = timed_verdict(base, other, "modelled")
    assert v["verdict"] == "NOT_MODELLED" and v["ci_lo"] < 1 < v["ci_hi"] and "does not represent" in v["reason"]
    same = timed_verdict(base, _row("ptx", 10.0, counters=dict(counters), digest="aaa"), "modelled")
    assert (same["verdict"], same["ci_lo"], same["ci_hi"], same["reason"]) == ("SAME", 1.0, 1.0,
                                                                             "the same PTX on both sides")
    # the same module but another entry is other code
    other_entry = _row("ptx", 10.0, counters=dict(counters), digest="aaa")
    other_entry = Row(**{**other_entry.__dict__, "static": StaticFacts(kernels={"k": KernelStatic(entry="k2",
                                                                                                  digest="aaa")})})
    assert timed_verdict(base, other_entry, "modelled")["verdict"] == "NOT_MODELLED"
    # the same time but different counters: the model saw different work and gave equal bounds; its interval decides
    differs = _row("ptx", 10.0, counters={**counters, "dram__bytes_read.sum": 8192.0}, digest="bbb")
    assert not_modelled(base, differs) is None
    assert timed_verdict(base, differs, "modelled")["verdict"] == "UNDECIDED"
    # different times: never NOT_MODELLED
    assert not_modelled(base, _row("ptx", 9.0, counters=dict(counters), digest="bbb")) is None


def test_the_interval_basis_reaches_the_answer_table_the_dashboard_and_the_row_line():
    from types import SimpleNamespace

    from harness.dashboard.sections import interval_basis_words
    from harness.row_report import _row_status
    from harness.run_records import Verdict

    measured = "4 measured pairs of profile h200.json (sha256 0123456789ab)"
    verdict = Verdict(key="gate/tiny/balanced/ptx-vs-cpp", kernel="gate", preset="tiny", skew="balanced", impl="ptx",
                      baseline="cpp", basis="modelled", speedup=2.0, ci_lo=1.5, ci_hi=2.5, verdict="FASTER",
                      confidence=0.95, interval="prediction", model_version="v1", interval_basis=measured)
    sweep = Sweep(schema_version=0, run_id="t", status="complete", settings=SweepSettings(backend="sim"),
                  environment={}, rows=(_row("cpp", 10.0), _row("ptx", 5.0)), verdicts=(verdict,))
    [a] = answer_rows(sweep)
    assert a.interval_basis == measured and (a.ci_lo, a.ci_hi) == (1.5, 2.5)      # the recorded verdict's
    assert answer_text([a]).endswith(f"modelled 95% prediction intervals fitted on: {measured}")
    assert interval_basis_words(SimpleNamespace(sweep=sweep)) == f"fitted on {measured}"
    older = Sweep(**{**sweep.__dict__, "verdicts": ()})
    assert interval_basis_words(SimpleNamespace(sweep=older)) == "fitted on published paired rows"
    row = Row(key="gate/ptx/tiny/balanced", kernel="gate", impl="ptx", preset="tiny", status="ok", skew="balanced",
              timing=ModelledTiming(basis="modelled", modelled_us=1.0, interval_us=(0.56, 1.92), launch_us=2.0))
    assert "modelled 1 us (95% [0.56, 1.92]) + launch 2 us" in _row_status(row)

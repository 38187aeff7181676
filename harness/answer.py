"""The answer table: per kernel cell, hand PTX against the best C++ present, first in the CLI output and on the
dashboard (issue 29 item 5, issue 28 item 2).

PTX is the `ptx` row of the cell (the top rung of a laddered kernel); the best C++ present is the fastest row of the
cell's C++-side implementations (harness.implementations.CPP_SIDE: CUDA C++ through public APIs, the vendor's
templates, Triton) that ran ok. The ratio is the best C++ time over the PTX time (> 1: PTX faster), with the 95%
interval and the call of the cell's verdict for that pair (harness.verdicts: measured, a bootstrap; modelled, the
model's prediction interval), the model version and each side's limiter (the model's; for a measured row, that of
the model estimate recorded beside it, when there is one).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from harness.implementations import CPP_SIDE, PTX_SIDE, impl_name
from harness.run_records import ModelledTiming, Row, Sweep, Verdict
from harness.verdicts import best_cpp


@dataclass(frozen=True)
class AnswerRow:
    """PTX vs the best C++ present in one (kernel[variant], preset, skew) cell, or why there is no ratio."""

    label: str
    preset: str
    skew: str | None
    ptx: str | None = None           # the PTX slot: "ptx" ("rung 5 of 5" in `ptx_rung` when laddered)
    ptx_rung: str | None = None
    best_cpp: str | None = None      # the fastest C++-side implementation that ran ok
    cpp_present: tuple[str, ...] = ()  # every C++-side implementation with an ok row in the cell
    speedup: float | None = None     # best C++ time / PTX time
    ci_lo: float | None = None
    ci_hi: float | None = None
    verdict: str | None = None
    basis: str | None = None
    confidence: float | None = None
    interval: str | None = None
    model_version: str | None = None
    interval_basis: str | None = None  # modelled: the rows its 95% interval was fitted on (Verdict.interval_basis)
    ptx_limiter: str | None = None
    cpp_limiter: str | None = None
    reason: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


VERDICT_FIELDS = ("speedup", "ci_lo", "ci_hi", "verdict", "basis", "confidence", "interval", "model_version",
                  "interval_basis")


def row_limiter(row: Row) -> str | None:
    """The model's limiter of a row: its modelled timing's, else that of the model estimate beside a measurement."""
    if isinstance(row.timing, ModelledTiming):
        return row.timing.limiter
    return row.model_estimate.limiter if row.model_estimate is not None else None


def _cells(sweep: Sweep) -> dict[tuple, dict[str, Row]]:
    """{(label, preset, skew): {impl: plain row}} in run order (lower rungs left out: PTX is its top rung)."""
    from harness.implementations import canonical_impl

    cells: dict[tuple, dict[str, Row]] = {}
    for row in sweep.plain_rows:
        cells.setdefault((row.label, row.preset, row.skew), {})[str(canonical_impl(row.impl))] = row
    return cells


def _verdict(sweep: Sweep, key: tuple, best: str) -> Verdict | None:
    return next((v for v in sweep.verdicts if (v.label, v.preset, v.skew) == key and v.impl == PTX_SIDE
                 and v.baseline == best and v.baseline_rung is None), None)


def answer_rows(sweep: Sweep) -> list[AnswerRow]:
    """One AnswerRow per cell that has a PTX row or a C++-side row (cells of neither are not the question's)."""
    from harness.verdicts import timed_verdict
    from ptxsim.model.errors import ModelError

    out = []
    for key, rows in _cells(sweep).items():
        present = tuple(s for s in CPP_SIDE if s in rows and rows[s].status == "ok" and rows[s].time_us)
        if PTX_SIDE not in rows and not present:
            continue
        ptx = rows.get(PTX_SIDE)
        rung = ptx.rung if ptx is not None else None
        base = AnswerRow(label=key[0], preset=key[1], skew=key[2], ptx=PTX_SIDE if ptx is not None else None,
                         cpp_present=present, ptx_rung=f"rung {rung.number} of {rung.of}" if rung is not None else None)
        best = best_cpp(rows)
        if ptx is None or ptx.status != "ok" or not ptx.time_us:
            why = "no PTX row" if ptx is None else f"PTX {ptx.status}" + (f" ({ptx.why})" if ptx.why else "")
            out.append(AnswerRow(**{**base.as_dict(), "best_cpp": best, "reason": why}))
            continue
        if best is None:
            out.append(AnswerRow(**{**base.as_dict(), "reason": "no C++-side row ran ok ("
                                    + ", ".join(impl_name(s) for s in CPP_SIDE) + ")"}))
            continue
        judged: dict | str
        record = _verdict(sweep, key, best)
        if record is not None and record.verdict is not None:
            judged = {k: getattr(record, k) for k in VERDICT_FIELDS}
        else:   # a C++-side implementation no verdict pair names yet: the same rule, here
            try:
                judged = timed_verdict(rows[best], ptx, sweep.basis, sweep.settings.device_profile)
            except ModelError as exc:   # the run's device profile can no longer be read
                judged = f"no interval: {exc}"
        fields = {**base.as_dict(), "best_cpp": best, "ptx_limiter": row_limiter(ptx),
                  "cpp_limiter": row_limiter(rows[best])}
        if isinstance(judged, str):
            out.append(AnswerRow(**{**fields, "reason": judged}))
        else:
            out.append(AnswerRow(**{**fields, **{k: judged.get(k) for k in VERDICT_FIELDS}}))
    return out


def _ratio(a: AnswerRow) -> str:
    if a.speedup is None:
        return "-"
    return f"{a.speedup:.2f}x [{a.ci_lo:.2f}, {a.ci_hi:.2f}]"


def interval_words(a: AnswerRow) -> str:
    """"95% prediction, modelled v1" / "95% bootstrap, measured"."""
    if a.speedup is None:
        return ""
    kind = f"{a.confidence:.0%} {a.interval}" if a.confidence and a.interval else "interval"
    return f"{kind}, {a.basis}" + (f" {a.model_version}" if a.model_version else "")


def answer_text(rows: list[AnswerRow]) -> str:
    """The answer table as text lines (the CLI prints it first)."""
    if not rows:
        return ""
    head = ("kernel cell", "PTX / best C++ present", "speedup of PTX [95% interval]", "verdict", "interval",
            "limiters (PTX / C++)")
    lines = []
    for a in rows:
        cell = f"{a.label} {a.preset}/{a.skew}"
        ptx = "PTX" + (f" ({a.ptx_rung})" if a.ptx_rung else "")
        against = f"{ptx} / {impl_name(a.best_cpp)}" if a.best_cpp else f"{ptx} / -"
        limiters = f"{a.ptx_limiter or '?'} / {a.cpp_limiter or '?'}" if a.speedup is not None else ""
        lines.append((cell, against, _ratio(a), a.verdict or ("no ratio: " + (a.reason or "?")), interval_words(a),
                      limiters))
    widths = [max(len(str(x[i])) for x in [head, *lines]) for i in range(len(head) - 1)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths) + "  {}"
    return "\n".join(["ANSWER: hand PTX against the best C++ present (speedup > 1: PTX faster)",
                      fmt.format(*head), *(fmt.format(*line) for line in lines), *interval_basis_lines(rows)])


def interval_basis_lines(rows: list[AnswerRow]) -> list[str]:
    """One line per distinct basis of the modelled rows' 95% prediction intervals ("published paired rows", or a
    device profile's measured pairs), so the reader knows what the interval was fitted on."""
    bases = list(dict.fromkeys(a.interval_basis for a in rows if a.interval_basis))
    return [f"modelled 95% prediction intervals fitted on: {basis}" for basis in bases]

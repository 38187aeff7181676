"""The result of `ptxmoe.compare`: a run.json document with accessors, a table, and a readable summary.

A Result is the document `ptxmoe compare` would write (docs/run-json.md): `save(run_dir)` writes it as a normal run
folder that `ptxmoe dashboard` and `ptxmoe export` read, and `load(run_dir)` reads any run folder back (a CLI run
too). Times are labelled with their basis: "modelled" (sim: the ptxsim timing model) or "measured" (gpu: CUDA
events). Speedups are baseline time / candidate time: above 1 the candidate is faster.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from ptxmoe.errors import InputError, PtxmoeError

if TYPE_CHECKING:  # NOTE: `import ptxmoe` stays cheap: harness is imported when a Result is first read
    from harness.run_records import Row, StaticFacts, Sweep
    from harness.run_records import Verdict as VerdictRecord


# files made from a run folder's run.json (dashboard, comparisons, exports): stale once run.json is replaced
DERIVED_FILES = ("dashboard.html", "dashboard-vs-*.html", "run.csv", "run.parquet")


@dataclass(frozen=True)
class Verdict:
    """One pairwise verdict: `candidate` against `baseline` in one case."""

    case: str
    kernel: str
    skew: str | None
    candidate: str
    baseline: str
    speedup: float | None
    ci_lo: float | None
    ci_hi: float | None
    verdict: str | None  # FASTER / SAME / SLOWER / UNDECIDED / NOT_MODELLED (harness.timing.stats.verdict_of),
    # None with a `reason`
    basis: str | None
    reason: str | None
    confidence: float | None = None  # 0.95
    interval: str | None = None  # "bootstrap" (measured) or "prediction" (modelled: the model's paired errors)
    model_version: str | None = None  # modelled: the timing model version ("v1", "v2")
    # modelled: the rows the interval was fitted on ("published paired rows", or a device profile's measured pairs)
    interval_basis: str | None = None

    def __str__(self) -> str:
        where = self.case if self.skew in (None, "none") else f"{self.case}/{self.skew}"
        head = f"{self.kernel}: {self.candidate} vs {self.baseline} [{where}]"
        if self.verdict is None:
            return f"{head}: {self.reason}"
        kind = f"; {self.confidence:.0%} {self.interval}" if self.confidence and self.interval else ""
        version = f" {self.model_version}" if self.model_version else ""
        fitted = f", fitted on {self.interval_basis}" if self.interval_basis else ""
        return (f"{head}: {self.verdict}, {self.speedup:.3f}x [{self.ci_lo:.3f}, {self.ci_hi:.3f}] "
                f"({self.basis}{version}{kind}{fitted})")


def _verdict_of(v: VerdictRecord) -> Verdict:
    return Verdict(case=v.preset, kernel=v.label, skew=v.skew, candidate=v.impl or "ptx",
                   baseline=v.baseline or "numba", speedup=v.speedup, ci_lo=v.ci_lo, ci_hi=v.ci_hi,
                   verdict=v.verdict, basis=v.basis, reason=v.reason, confidence=v.confidence, interval=v.interval,
                   model_version=v.model_version, interval_basis=v.interval_basis)


@dataclass(frozen=True)
class Result:
    """What `compare` found; `doc` is the run.json document, `sweep` its typed records (harness.run_records)."""

    doc: dict
    run_dir: Path | None = None
    records: Sweep | None = field(default=None, compare=False, repr=False)  # when the reader built them already

    @cached_property
    def sweep(self) -> Sweep:
        if self.records is not None:
            return self.records
        from harness.results import records_of

        return records_of(self.doc, self.run_dir or "ptxmoe.Result")

    # identity ---------------------------------------------------------------------------------------------
    @property
    def backend(self) -> str:
        return self.sweep.backend

    @property
    def basis(self) -> str:
        """"modelled" (sim backend) or "measured" (gpu)."""
        return self.sweep.basis

    @property
    def impls(self) -> list[str]:
        return _unique(r.impl for r in self.sweep.rows)

    @property
    def cases(self) -> list[str]:
        return _unique(r.preset for r in self.sweep.rows)

    @property
    def kernels(self) -> list[str]:
        """Kernel labels ("saxpy", "grouped_gemm[up]") in run order."""
        return _unique(r.label for r in self.sweep.rows)

    @property
    def skews(self) -> list[str]:
        return _unique(r.skew for r in self.sweep.rows)

    @property
    def rows(self) -> list[Row]:
        return list(self.sweep.rows)

    @property
    def verdicts(self) -> list[Verdict]:
        return [_verdict_of(v) for v in self.sweep.verdicts]

    # lookups ----------------------------------------------------------------------------------------------
    def _case(self, case: str | None) -> str:
        cases = self.cases
        if case is None:
            if len(cases) != 1:
                raise InputError(f"this result has cases {', '.join(cases)}; pass case= one of them")
            return cases[0]
        if case not in cases:
            raise InputError(f"case {case!r} not in this result; it has {', '.join(cases)}")
        return case

    def row(self, impl: str, case: str | None = None, *, kernel: str | None = None, skew: str | None = None) -> Row:
        """The run.json row (a harness.run_records.Row) of one implementation in one case (the only case when there
        is one). `kernel` ("grouped_gemm[up]") and `skew` pick among several, as in runs of `ptxmoe compare`."""
        case = self._case(case)
        found = [r for r in self.sweep.rows if r.impl == impl and r.preset == case
                 and kernel in (None, r.label) and skew in (None, r.skew)]
        if len(found) != 1:
            raise InputError(f"{len(found)} rows match impl={impl!r}, case={case!r}, kernel={kernel!r}, skew={skew!r}"
                             f"; this result has implementations {', '.join(self.impls)}, kernels "
                             f"{', '.join(self.kernels)}, skews {', '.join(map(str, self.skews))}")
        return found[0]

    def time_us(self, impl: str, case: str | None = None, **where) -> float | None:
        """Modelled (sim) or median measured (gpu) time in µs; None when it could not be had."""
        return self.row(impl, case, **where).time_us

    def ok(self, impl: str, case: str | None = None, **where) -> bool:
        """Whether the implementation passed the check."""
        return self.row(impl, case, **where).status == "ok"

    def counters(self, impl: str, case: str | None = None, **where) -> dict:
        """ptxsim's counters summed over the launches (ncu metric names; sim backend only, {} on gpu)."""
        counters = self.row(impl, case, **where).sim_counters
        return dict(counters.total) if counters is not None else {}

    def static(self, impl: str, case: str | None = None, **where) -> StaticFacts | None:
        """Static facts (harness.run_records.StaticFacts: kernels by launch name, totals), None when not collected."""
        return self.row(impl, case, **where).static

    def verdict(self, candidate: str | None = None, baseline: str | None = None, case: str | None = None, *,
                kernel: str | None = None, skew: str | None = None) -> Verdict:
        """The verdict of `candidate` over `baseline` (defaults: the only pair; the baseline is the first
        implementation); `kernel` and `skew` as for `row`."""
        case = self._case(case)
        found = [v for v in self.verdicts if v.case == case and candidate in (None, v.candidate)
                 and baseline in (None, v.baseline) and kernel in (None, v.kernel) and skew in (None, v.skew)]
        if len(found) != 1:
            pairs = sorted({f"{v.candidate} vs {v.baseline}" for v in self.verdicts if v.case == case})
            raise InputError(f"{len(found)} verdicts match candidate={candidate!r}, baseline={baseline!r}, "
                             f"kernel={kernel!r}, skew={skew!r} in case {case!r}; pairs: {', '.join(pairs) or 'none'}"
                             f", kernels: {', '.join(self.kernels)}")
        return found[0]

    # out --------------------------------------------------------------------------------------------------
    def to_dataframe(self):
        """One row per kernel x implementation x case x skew (pandas DataFrame; see harness.export)."""
        from harness.export import run_to_dataframe

        return run_to_dataframe(self.doc)

    def save(self, run_dir, overwrite: bool = False) -> Path:
        """Write `run_dir/run.json` atomically (a normal run folder for `ptxmoe dashboard` / `export`). With
        overwrite, what was made from the old run.json (its dashboard.html, run.csv / run.parquet exports) is removed
        first, so no file in the folder describes another run.

        Raises:
            PtxmoeError: run.json exists there already and overwrite is False; ResultsError (a PtxmoeError): the
                folder cannot be created or written (the message says why: a file in the way, /proc, permissions).
        """
        from harness.results import RUN_FILE, RunFile

        run_dir = Path(run_dir)
        if (run_dir / RUN_FILE).exists() and not overwrite:
            raise PtxmoeError(f"{run_dir / RUN_FILE} exists already; pass overwrite=True or another folder")
        if overwrite and run_dir.is_dir():
            for pattern in DERIVED_FILES:
                for stale in run_dir.glob(pattern):
                    stale.unlink()
        return RunFile(run_dir, self.doc).save()

    def __repr__(self) -> str:
        return summary(self)


def load(run_dir) -> Result:
    """A Result from a run folder written by `Result.save` or `ptxmoe compare` (ResultsError if unreadable)."""
    from harness.results import RunFile

    run = RunFile.load(run_dir)
    return Result(run.doc, run.run_dir, run.sweep)


def _unique(values) -> list:
    out = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def _fmt(value, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def summary(result: Result) -> str:
    """A readable summary: one line per row (status, time with its basis), then one per verdict."""
    rows = result.sweep.rows
    kernels = ", ".join(_unique(r.kernel for r in rows))
    unit = "modelled by ptxsim" if result.basis == "modelled" else "measured, median"
    lines = [f"<ptxmoe.Result {kernels} on {result.backend}: {len(rows)} rows, times {unit}>"]
    width = max([len(r.impl) for r in rows] + [4])
    for r in rows:
        reason = f"  {r.reason}" if r.status != "ok" and r.reason else ""
        if r.arg_types and "unchecked" in r.arg_types:
            reason += "  (" + r.arg_types[r.arg_types.index("argument types unchecked"):] + ")"
        lines.append(f"  {r.kernel} [{r.preset}] {r.impl.ljust(width)}  "
                     f"{r.status.ljust(6)}  {_fmt(r.time_us):>10} us{reason}")
    for v in result.verdicts:
        lines.append(f"  {v}")
    return "\n".join(lines)

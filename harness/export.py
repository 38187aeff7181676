"""Run results as a table: one row per kernel x implementation x preset x skew (a pandas DataFrame, CSV, Parquet).

Columns, units in the names (HolisticTraceAnalysis style): the row's identity (`key, kernel, variant, label, impl,
preset, skew, seed, backend, status, reason, check_message`), its time (`basis`: modelled/measured, `time_us`: the
modelled time or the median sample, `time_ci_lo_us`/`time_ci_hi_us`: the bootstrap interval of the median, or
the modelled row's 95% prediction interval), `samples`, `sim_wall_s`), throughput (`achieved_gbps, achieved_tflops,
pct_peak_bandwidth, pct_peak_flops`), static totals (`registers_max, spills_bytes, shared_bytes_max,
ptx_instructions, sass_instructions`), one column per simulator counter (`counter:<ncu metric name>`; sim rows),
and, on the candidate's row of each verdict, `speedup_vs_<baseline>`, `ci_lo_vs_<baseline>`,
`ci_hi_vs_<baseline>`, `verdict_vs_<baseline>`, `interval_vs_<baseline>` ("95% bootstrap" measured, "95% prediction"
modelled), `interval_basis_vs_<baseline>` (what a modelled interval was fitted on) (speedup = baseline time / this
row's time: > 1, this row is faster).
Rows of a laddered kernel (issue #16) also have `rung` (1-based), `rung_name` and `slot` ("ptx", or "ptx.r1" for a
lower rung's row); a rung's verdict against the rung below it is `speedup_vs_rung_below` (and its ci/verdict columns).
A run of `ptxmoe.sweep` has one more column per size axis (`n`, `m`...), after `preset`, holding the row's value.
"""
from __future__ import annotations

from pathlib import Path

from harness.errors import InputError
from harness.implementations import row_slot
from harness.run_records import MeasuredTiming, Row, StaticTotals, Sweep, Throughput

FORMATS = ("csv", "parquet")
COUNTER_PREFIX = "counter:"
STATIC_TOTALS = ("registers_max", "spills_bytes", "shared_bytes_max", "ptx_instructions", "sass_instructions")
THROUGHPUT = ("achieved_gbps", "achieved_tflops", "pct_peak_bandwidth", "pct_peak_flops")
# the implementation a verdict judges, and the one it is judged against, for verdicts that do not name them
DEFAULT_CANDIDATE, DEFAULT_BASELINE = "ptx", "numba"
RUNG_BELOW = "rung_below"  # the baseline name of a rung's verdict against the rung below it


def _sweep(run) -> Sweep:
    """The typed records of a run: a Sweep, a run.json document (an older schema upgraded, on a copy), a RunFile /
    Result / dashboard Run (`.sweep`), or a run folder path."""
    from harness.dashboard.data import as_sweep
    from harness.results import RunFile

    if isinstance(run, Sweep):
        return run
    if isinstance(run, dict):
        return as_sweep(run)
    if isinstance(run, (str, Path)):
        return RunFile.load(run).sweep
    sweep = getattr(run, "sweep", None)
    if isinstance(sweep, Sweep):
        return sweep
    raise InputError(f"run = {type(run).__name__}; expected a run.json document, a RunFile or a run folder path")


def _time_columns(row: Row) -> dict:
    timing = row.timing
    if isinstance(timing, MeasuredTiming):
        return {"basis": "measured", "time_us": timing.time_us, "time_ci_lo_us": timing.device.ci_lo_us,
                "time_ci_hi_us": timing.device.ci_hi_us, "samples": timing.device.n, "sim_wall_s": None}
    t = None if timing is None else timing.time_us
    # a modelled row's 95% prediction interval (timing.interval_us, from the predicted absolute validation rows);
    # a row recorded before it had one keeps lo = hi = its time
    lo, hi = (timing.interval_us[0], timing.interval_us[-1]) if timing is not None and timing.interval_us else (t, t)
    return {"basis": None if timing is None else "modelled", "time_us": t, "time_ci_lo_us": lo, "time_ci_hi_us": hi,
            "samples": None, "sim_wall_s": None if timing is None else timing.sim_wall_s}


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _counter_columns(row: Row) -> dict:
    out = {}
    total = row.sim_counters.total if row.sim_counters is not None else {}
    for name, value in total.items():
        if isinstance(value, dict):
            out.update({f"{COUNTER_PREFIX}{name}.{k}": v for k, v in value.items() if _is_number(v)})
        elif _is_number(value):
            out[f"{COUNTER_PREFIX}{name}"] = value
    return out


def _verdict_columns(sweep: Sweep) -> dict[tuple, dict]:
    """{(label, impl, preset, skew) of the candidate: its verdict columns} over every verdict of the run."""
    out: dict[tuple, dict] = {}
    for v in sweep.verdicts:
        cand = v.impl or DEFAULT_CANDIDATE
        base = RUNG_BELOW if v.baseline_rung is not None and v.rung is not None else (v.baseline or
                                                                                       DEFAULT_BASELINE)
        cols = out.setdefault((v.label, cand, v.preset, v.skew), {})
        cols.update({f"speedup_vs_{base}": v.speedup, f"ci_lo_vs_{base}": v.ci_lo,
                     f"ci_hi_vs_{base}": v.ci_hi, f"verdict_vs_{base}": v.verdict,
                     f"interval_vs_{base}": None if v.interval is None else f"{v.confidence:.0%} {v.interval}",
                     f"interval_basis_vs_{base}": v.interval_basis})
    return out


def row_record(row: Row) -> dict:
    """The table columns of one run.json row (verdict columns apart)."""
    correctness = row.correctness
    totals = row.static.totals if row.static is not None else StaticTotals()
    tp = row.throughput or Throughput()
    rung = row.rung
    return {"key": row.key, "kernel": row.kernel, "variant": row.variant, "label": row.label,
            "impl": row.impl, "rung": None if rung is None else rung.number,
            "rung_name": None if rung is None else rung.name, "slot": row_slot(row), "preset": row.preset,
            "skew": row.skew, "seed": row.seed, "backend": row.backend, "status": row.status, "reason": row.reason,
            "check_ok": None if correctness is None else correctness.ok,
            "check_message": None if correctness is None else correctness.message,
            **_time_columns(row),
            **{k: getattr(tp, k) for k in THROUGHPUT},
            **{k: getattr(totals, k) for k in STATIC_TOTALS},
            **_counter_columns(row)}


COLUMNS = ("key", "kernel", "variant", "label", "impl", "rung", "rung_name", "slot", "preset", "skew", "seed",
           "backend", "status", "reason", "check_ok", "check_message", "basis", "time_us", "time_ci_lo_us",
           "time_ci_hi_us", "samples", "sim_wall_s", *THROUGHPUT, *STATIC_TOTALS)


def run_to_dataframe(run):
    """One DataFrame row per run.json row (kernel x impl x preset x skew), in run order.

    Args:
        run: a run.json document, a RunFile or ptxmoe.Result, or a run folder path.
    Returns:
        pandas.DataFrame with the columns listed in this module's docstring.
    Raises:
        InputError: `run` is none of those; ResultsError: a folder without a readable run.json.
    """
    import pandas as pd

    sweep = _sweep(run)
    verdicts = _verdict_columns(sweep)
    axes = sweep.settings.axes  # ptxmoe.sweep: each size axis a column, beside the case (preset) it names
    records = []
    for row in sweep.rows:
        record = row_record(row)
        if axes:
            at = list(record).index("preset") + 1
            items = list(record.items())
            record = dict(items[:at] + [(axis, row.params.get(axis)) for axis in axes] + items[at:])
        record.update(verdicts.get((record["label"], record["slot"], record["preset"], record["skew"]), {}))
        records.append(record)
    frame = pd.DataFrame.from_records(records)
    if not records:
        frame = pd.DataFrame(columns=list(COLUMNS))
    return frame


def default_output(run_dir, fmt: str) -> Path:
    return Path(run_dir) / f"run.{fmt}"


def export_run(run_dir, fmt: str = "csv", out=None) -> tuple[Path, int]:
    """Write a run folder's table as CSV or Parquet atomically; returns (path, number of rows).

    Raises:
        InputError: an unknown format. ResultsError: no readable run.json. OSError: the file cannot be written.
    """
    import io

    from harness.atomic import atomic_write_bytes

    if fmt not in FORMATS:
        raise InputError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")
    frame = run_to_dataframe(Path(run_dir))
    buffer = io.BytesIO()
    if fmt == "csv":
        frame.to_csv(buffer, index=False)
    else:
        frame.to_parquet(buffer, index=False)
    path = atomic_write_bytes(Path(out) if out else default_output(run_dir, fmt), buffer.getvalue())
    return path, len(frame)

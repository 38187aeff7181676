"""Run results as a table: one row per kernel x implementation x preset x skew (a pandas DataFrame, CSV, Parquet).

Columns, units in the names (HolisticTraceAnalysis style): the row's identity (`key, kernel, variant, label, impl,
preset, skew, seed, backend, status, reason, check_message`), its time (`basis`: modelled/measured, `time_us`: the
modelled time or the median sample, `time_ci_lo_us`/`time_ci_hi_us`: the bootstrap interval of the median (equal
to time_us when modelled), `samples`, `sim_wall_s`), throughput (`achieved_gbps, achieved_tflops,
pct_peak_bandwidth, pct_peak_flops`), static totals (`registers_max, spills_bytes, shared_bytes_max,
ptx_instructions, sass_instructions`), one column per simulator counter (`counter:<ncu metric name>`; sim rows),
and, on the candidate's row of each verdict, `speedup_vs_<baseline>`, `ci_lo_vs_<baseline>`,
`ci_hi_vs_<baseline>`, `verdict_vs_<baseline>` (speedup = baseline time / this row's time: > 1, this row is faster).
Rows of a laddered kernel (issue #16) also have `rung` (1-based), `rung_name` and `slot` ("ptx", or "ptx.r1" for a
lower rung's row); a rung's verdict against the rung below it is `speedup_vs_rung_below` (and its ci/verdict columns).
"""
from __future__ import annotations

from pathlib import Path

from harness.errors import InputError
from harness.implementations import row_slot

FORMATS = ("csv", "parquet")
COUNTER_PREFIX = "counter:"
STATIC_TOTALS = ("registers_max", "spills_bytes", "shared_bytes_max", "ptx_instructions", "sass_instructions")
THROUGHPUT = ("achieved_gbps", "achieved_tflops", "pct_peak_bandwidth", "pct_peak_flops")
# the implementation a verdict judges, and the one it is judged against, for verdicts that do not name them
DEFAULT_CANDIDATE, DEFAULT_BASELINE = "ptx", "numba"
RUNG_BELOW = "rung_below"  # the baseline name of a rung's verdict against the rung below it


def _doc(run) -> dict:
    """A run.json document (an older schema upgraded, on a copy) from a document, a RunFile / Result (`.doc`), or a
    run folder path."""
    if isinstance(run, dict):
        return _current(run)
    if hasattr(run, "doc") and isinstance(run.doc, dict):
        return _current(run.doc)
    if isinstance(run, (str, Path)):
        from harness.results import RunFile

        return RunFile.load(run).doc
    raise InputError(f"run = {type(run).__name__}; expected a run.json document, a RunFile or a run folder path")


def _current(doc: dict) -> dict:
    """`doc` at the current schema (schema-1 runs name the Numba path "cuda": upgraded on a deep copy)."""
    import copy

    from harness.run_schema import READABLE_VERSIONS, SCHEMA_VERSION, upgrade

    version = doc.get("schema_version")
    if version == SCHEMA_VERSION or version not in READABLE_VERSIONS:
        return doc
    return upgrade(copy.deepcopy(doc))


def _d(value) -> dict:
    return value if isinstance(value, dict) else {}


def _num(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _time_columns(row: dict) -> dict:
    timing = _d(row.get("timing"))
    if timing.get("basis") == "modelled" or (timing.get("basis") is None and "modelled_us" in timing):
        t = _num(timing.get("modelled_us"))
        return {"basis": "modelled", "time_us": t, "time_ci_lo_us": t, "time_ci_hi_us": t, "samples": None,
                "sim_wall_s": _num(timing.get("sim_wall_s"))}
    device = _d(timing.get("device"))
    return {"basis": timing.get("basis"), "time_us": _num(device.get("median_us")),
            "time_ci_lo_us": _num(device.get("ci_lo_us")), "time_ci_hi_us": _num(device.get("ci_hi_us")),
            "samples": _num(device.get("n")), "sim_wall_s": None}


def _counter_columns(row: dict) -> dict:
    out = {}
    for name, value in _d(_d(row.get("sim_counters")).get("total")).items():
        if isinstance(value, dict):
            out.update({f"{COUNTER_PREFIX}{name}.{k}": v for k, v in value.items() if _num(v) is not None})
        elif _num(value) is not None:
            out[f"{COUNTER_PREFIX}{name}"] = value
    return out


def _verdict_columns(doc: dict) -> dict[tuple, dict]:
    """{(label, impl, preset, skew) of the candidate: its verdict columns} over every verdict of the run."""
    out: dict[tuple, dict] = {}
    for v in doc.get("verdicts", []):
        cand = v.get("impl") or DEFAULT_CANDIDATE
        base = v.get("baseline") or v.get("ptx_over") or DEFAULT_BASELINE
        if isinstance(v.get("baseline_rung"), dict) and isinstance(v.get("rung"), dict):
            base = RUNG_BELOW
        label = f"{v.get('kernel')}[{v.get('variant')}]" if v.get("variant") else v.get("kernel")
        cols = out.setdefault((label, cand, v.get("preset"), v.get("skew")), {})
        cols.update({f"speedup_vs_{base}": _num(v.get("speedup")), f"ci_lo_vs_{base}": _num(v.get("ci_lo")),
                     f"ci_hi_vs_{base}": _num(v.get("ci_hi")), f"verdict_vs_{base}": v.get("verdict")})
    return out


def row_record(row: dict) -> dict:
    """The table columns of one run.json row (verdict columns apart)."""
    label = f"{row.get('kernel')}[{row.get('variant')}]" if row.get("variant") else row.get("kernel")
    correctness = _d(row.get("correctness"))
    totals = _d(_d(row.get("static")).get("totals"))
    tp = _d(row.get("throughput"))
    rung = _d(row.get("rung"))
    return {"key": row.get("key"), "kernel": row.get("kernel"), "variant": row.get("variant"), "label": label,
            "impl": row.get("impl"), "rung": _num(rung.get("number")), "rung_name": rung.get("name"),
            "slot": row_slot(row) if row else None, "preset": row.get("preset"), "skew": row.get("skew"),
            "seed": row.get("seed"),
            "backend": row.get("backend"), "status": row.get("status"), "reason": row.get("reason"),
            "check_ok": correctness.get("ok"), "check_message": correctness.get("message"),
            **_time_columns(row),
            **{k: _num(tp.get(k)) for k in THROUGHPUT},
            **{k: _num(totals.get(k)) for k in STATIC_TOTALS},
            **_counter_columns(row)}


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

    doc = _doc(run)
    verdicts = _verdict_columns(doc)
    records = []
    for row in doc.get("rows", []):
        record = row_record(row)
        record.update(verdicts.get((record["label"], record["slot"], record["preset"], record["skew"]), {}))
        records.append(record)
    frame = pd.DataFrame.from_records(records)
    if not records:
        frame = pd.DataFrame(columns=list(row_record({}).keys()))
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

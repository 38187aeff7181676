"""The ablation ladders of a run (issue #16) as records: per laddered cell, each rung's time and its three speedups.

A kernel an implementation writes as a ladder has a row per rung in each cell (run.json rows with `rung`); the runner
gives each rung a verdict against the rung below it and against the other paths (docs/run-json.md). Here they are
gathered per cell, lowest rung first, so the dashboard can say where the gain comes from. No plotting here.
"""
from __future__ import annotations

from harness.dashboard.data import as_sweep, row_limiter, row_slot, row_time, verdict_records
from harness.implementations import PAIRS, canonical_impl
from harness.run_records import Row, Rung

_NO_TIME = {"time_us": None, "lo_us": None, "hi_us": None, "basis": None}


def _time(row: Row) -> dict:
    if not row.ran:
        return dict(_NO_TIME)
    t = row_time(row)
    return {k: t[k] for k in _NO_TIME}


def _speedup(v: dict | None) -> dict | None:
    """{speedup, ci_lo, ci_hi, verdict, reason} of a verdict record, None when there is no such verdict."""
    if v is None:
        return None
    return {k: v[k] for k in ("speedup", "ci_lo", "ci_hi", "verdict", "reason")}


def baselines_of(impl: str) -> list[str]:
    """The paths a ladder's rungs are compared with: those PAIRS compare `impl` with (ptx: cpp, then numba)."""
    return [p.baseline for p in PAIRS if p.impl == impl]


def ladder_cells(doc) -> list[dict]:
    """One record per laddered cell (kernel[variant], preset, skew, implementation), in the run's row order.

    Each: {label, preset, skew, impl, basis, rungs: [per rung, lowest first: {number, name, of, top, slot, key,
    status, time_us, lo_us, hi_us, basis, limiter (the timing model's, when modelled), below (the speedup over the
    rung below: {speedup, ci_lo, ci_hi, verdict, reason}, None for the first rung), vs {baseline impl: speedup record
    or None}}], baselines {impl: {time_us, lo_us, hi_us, basis} of the other paths' rows}}.
    """
    sweep = as_sweep(doc)
    verdicts = {(v["label"], v["preset"], v["skew"], v["impl"], v["baseline"]): v for v in verdict_records(sweep)}
    cells: dict[tuple, list[tuple[Rung, Row]]] = {}
    for row in sweep.rows:
        if row.rung is None:
            continue
        impl = canonical_impl(row.impl)
        cells.setdefault((row.label, row.preset, row.skew, impl), []).append((row.rung, row))
    others: dict[tuple, dict[str, Row]] = {}
    for row in sweep.plain_rows:
        others.setdefault((row.label, row.preset, row.skew), {})[canonical_impl(row.impl)] = row
    out = []
    for (label, preset, skew, impl), found in cells.items():
        found.sort(key=lambda pair: pair[0].number)
        bases = [b for b in baselines_of(impl) if b in others.get((label, preset, skew), {})]
        rungs = []
        for i, (rung, row) in enumerate(found):
            slot = row_slot(row)
            below = row_slot(found[i - 1][1]) if i else None
            rungs.append({"number": rung.number, "name": rung.name, "of": rung.of, "top": rung.top, "slot": slot,
                          "key": row.key, "status": row.status, **_time(row), "limiter": row_limiter(row),
                          "below": _speedup(verdicts.get((label, preset, skew, slot, below))) if below else None,
                          "vs": {b: _speedup(verdicts.get((label, preset, skew, slot, b))) for b in bases}})
        base_rows = others.get((label, preset, skew), {})
        out.append({"label": label, "preset": preset, "skew": skew, "impl": impl,
                    "basis": next((r["basis"] for r in rungs if r["basis"]), None), "rungs": rungs,
                    "baselines": {b: _time(base_rows[b]) for b in bases}})
    return out


def slower_rungs(cells: list[dict]) -> list[str]:
    """One line per rung SLOWER than the rung below it: "grouped_gemm_fp8[up] tiny/balanced: rung 3 (wgmma+TMA)
    is SLOWER than rung 2: 0.80x"."""
    out = []
    for c in cells:
        for r in c["rungs"]:
            below = r["below"] or {}
            if below.get("verdict") == "SLOWER":
                out.append(f"{c['label']} {c['preset']}/{c['skew']}: rung {r['number']} ({r['name']}) is SLOWER "
                           f"than rung {r['number'] - 1}: {below['speedup']:.2f}x")
    return out

"""profiles/index.html: one table row per run folder (its headline and a link to its dashboard); no plotly.

A folder whose run.json cannot be used (not JSON, JSON that is no run, rows of the wrong shape) is left out with a
warning: one bad folder under profiles/ never breaks the index, nor the dashboard of another run.
"""
from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import quote

from harness.dashboard.data import DashboardError, headline, load_run
from harness.dashboard.html import CSS, Raw, badge, esc, table
from harness.timing.stats import VERDICTS


def warn_stderr(message: str) -> None:
    print(f"ptxmoe: warning: {message}", file=sys.stderr)


def index_records(profiles_dir: Path, warn=warn_stderr) -> list[dict]:
    """{run_id, dir, backend, status, created, pair, geomean, lo, hi, verdict, counts, dashboard, error} per run
    folder; the numbers are of the run's headline pair (PTX vs CUDA C++ when it has one).

    A run folder that cannot be read is skipped and `warn(message)` says which and why.
    """
    out = []
    for run_dir in sorted(p for p in Path(profiles_dir).iterdir()
                          if (p / "run.json").is_file() or (p / "partition.json").is_file()):
        rec = {"run_id": run_dir.name, "dir": run_dir.name, "backend": None, "status": None, "created": None,
               "pair": None, "geomean": None, "lo": None, "hi": None, "verdict": None, "counts": None, "basis": None,
               "dashboards": sorted(p.name for p in run_dir.glob("dashboard*.html")), "error": None}
        if not (run_dir / "run.json").is_file():
            rec.update(_partition_record(run_dir))
            out.append(rec)
            continue
        try:
            run = load_run(run_dir)
            h = headline(run.sweep)
            rec.update(run_id=run.run_id, backend=run.backend, status=run.sweep.status,
                       created=run.sweep.created_utc, pair=h["title"], geomean=h["geomean"], lo=h["lo"],
                       hi=h["hi"], verdict=h["verdict"], counts=h["counts"], basis=run.basis)
        except DashboardError as exc:
            warn(f"index: skipped {run_dir}: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001 - rows of an unexpected shape: skip this folder, keep the index
            warn(f"index: skipped {run_dir}: its run.json cannot be summarised ({type(exc).__name__}: {exc})")
            continue
        out.append(rec)
    return sorted(out, key=lambda r: str(r["created"] or ""), reverse=True)


def _partition_record(run_dir: Path) -> dict:
    import json

    try:
        doc = json.loads((run_dir / "partition.json").read_text())
        doc = doc if isinstance(doc, dict) else {}
        return {"run_id": str(doc.get("run_id") or run_dir.name), "backend": doc.get("backend"),
                "basis": "partition study", "status": "complete", "created": doc.get("created")}
    except (OSError, ValueError) as exc:
        return {"error": f"partition.json: {exc}"}


def index_page(profiles_dir: Path, warn=warn_stderr) -> str:
    recs = index_records(profiles_dir, warn)
    rows = []
    for r in recs:
        links = " ".join(f'<a href="{esc(quote(r["dir"]))}/{esc(quote(d))}">{esc(d)}</a>' for d in r["dashboards"])
        counts = r["counts"] or {}
        rows.append([Raw(links or esc(r["run_id"])), r["run_id"], r["backend"], r["basis"], r["status"], r["created"],
                     r["pair"], r["geomean"], r["lo"], r["hi"], badge(r["verdict"]),
                     " / ".join(str(counts.get(k, 0)) for k in VERDICTS) if counts else None, r["error"]])
    tbl = table(["dashboard", "run", "backend", "basis", "status", "created (UTC)", "headline pair", "geomean speedup",
                 "CI low", "CI high", "verdict", " / ".join(k.lower().replace("_", " ") for k in VERDICTS), "problem"],
                rows)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ptxmoe runs</title>"
            f"<style>{CSS}</style></head><body><header><h1>ptxmoe runs</h1><div class=\"sub\">{len(recs)} run(s) in "
            f"{esc(Path(profiles_dir).resolve())}</div></header><main><section>{tbl}</section></main></body></html>\n")

"""`ptxmoe import FILE --run DIR`: bring an Nsight file into a run folder and attach its metrics to run.json rows."""
from __future__ import annotations

import sys
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "import", help="import an Nsight file (ncu CSV/.ncu-rep, nsys .sqlite) into a run folder",
        description="Copy an Nsight Compute / Nsight Systems file into RUN_DIR/nsight/, normalise it, and attach "
                    "each metric row to the run.json row of its ptxmoe NVTX range (<kernel>/<impl>/<preset>/<skew>).")
    parser.add_argument("file", help="ncu CSV or .ncu-rep, nsys .sqlite or stats CSV")
    parser.add_argument("--run", required=True, metavar="DIR", help="run folder written by `ptxmoe compare`")
    parser.set_defaults(func=run)


def attach_nsight(run_file, table, source_name: str) -> tuple[int, int]:
    """Append each labelled metric row to run.json row["nsight"]; returns (rows attached, rows with no ptxmoe row).

    Re-importing the same file replaces what it attached before (rows carry `file`).
    """
    from harness.nsight.table import label_rows

    by_key = {row["key"]: row for row in run_file.doc["rows"]}
    for row in by_key.values():
        if isinstance(row.get("nsight"), list):
            row["nsight"] = [m for m in row["nsight"] if m.get("file") != source_name]
    attached = unmatched = 0
    for record in label_rows(table.rows):
        key = None
        if record.get("ptxmoe_kernel"):
            key = f"{record['ptxmoe_kernel']}/{record['impl']}/{record['preset']}/{record['skew']}"
        target = by_key.get(key)
        if target is None:
            unmatched += 1
            continue
        record["file"] = source_name
        target.setdefault("nsight", [])
        if not isinstance(target["nsight"], list):
            target["nsight"] = []
        target["nsight"].append(record)
        attached += 1
    files = run_file.doc.setdefault("nsight_files", [])
    files[:] = [f for f in files if f.get("file") != source_name]
    files.append({"file": source_name, "format": table.format, "rows": len(table.rows), "attached": attached,
                  "unmatched": unmatched, "empty_reason": table.empty_reason})
    return attached, unmatched


def import_file(path, run_dir) -> tuple[Path, int, int]:
    """import_into_run + attach to run.json (saved atomically); returns (rows.json path, attached, unmatched)."""
    from harness.nsight.importer import import_into_run, load_rows_json
    from harness.results import RunFile

    run_file = RunFile.load(run_dir)
    rows_json = import_into_run(path, run_dir)
    table = load_rows_json(rows_json)
    attached, unmatched = attach_nsight(run_file, table, Path(path).name)
    run_file.save()
    return rows_json, attached, unmatched


def rebuild_dashboard(run_dir) -> None:
    """Rebuild the run's dashboard after an import, when harness.dashboard exists (best effort, says what broke)."""
    try:
        from harness.dashboard import build
    except ImportError:
        return
    try:
        print(f"dashboard: {build(run_dir)}")
    except Exception as exc:  # noqa: BLE001 - the import itself succeeded
        print(f"ptxmoe: the dashboard could not be rebuilt ({type(exc).__name__}: {exc})", file=sys.stderr)


def run(args) -> int:
    rows_json, attached, unmatched = import_file(args.file, args.run)
    rebuild_dashboard(args.run)
    print(f"imported {args.file} -> {rows_json}; {attached} metric rows attached to run.json rows"
          + (f", {unmatched} outside any ptxmoe row range" if unmatched else ""))
    if attached == 0:
        print("ptxmoe import: no metric row matched a row of this run (were the NVTX ranges captured? ncu needs "
              "--nvtx, nsys -t nvtx)", file=sys.stderr)
    return 0

"""`ptxmoe export RUN [--format csv|parquet] [-o FILE]`: a run's rows as one table (harness.export)."""
from __future__ import annotations


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "export", help="write a run's rows as a CSV or Parquet table (one row per kernel x impl x preset x skew)",
        description="One row per run.json row: identity, status, time (modelled or measured, with its interval), "
                    "throughput, static totals, simulator counters (counter:<ncu name>) and, on each verdict's "
                    "candidate row, speedup_vs_<baseline> with its interval and verdict.")
    parser.add_argument("run", metavar="RUN", help="run folder (profiles/<run-id>) holding run.json")
    parser.add_argument("--format", choices=("csv", "parquet"), default="csv", help="table format (default csv)")
    parser.add_argument("-o", "--output", metavar="FILE", help="output file (default RUN/run.csv or RUN/run.parquet)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from harness.errors import PtxmoeError
    from harness.export import export_run

    try:
        path, rows = export_run(args.run, args.format, args.output)
    except OSError as exc:
        raise PtxmoeError(f"cannot write the {args.format} table of {args.run}: {exc}") from None
    print(f"{args.format}: {path} ({rows} rows)")
    return 0

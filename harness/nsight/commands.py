"""`ptxmoe nsight FILE [--csv]`: print the normalised table of any Nsight file."""
from __future__ import annotations

import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "nsight", help="print the normalised metrics of an Nsight file (ncu CSV/.ncu-rep, nsys .sqlite/stats CSV)",
        description="Read an Nsight Compute or Nsight Systems file and print launch, kernel, NVTX range, metric, "
                    "value and unit (base units: ns, byte, byte/s, hz, %...).")
    parser.add_argument("file", help="ncu CSV (details or raw page), .ncu-rep, nsys .sqlite[.gz] or nsys stats CSV")
    parser.add_argument("--csv", action="store_true", help="print CSV instead of aligned text")
    parser.set_defaults(func=run)


def run(args) -> int:
    from harness.nsight import render
    from harness.nsight.reader import read_nsight

    table = read_nsight(args.file)
    if args.csv:
        sys.stdout.write(render.to_csv(table))
        if not table.rows:
            print(f"ptxmoe nsight: no results: {table.empty_reason}", file=sys.stderr)
    else:
        sys.stdout.write(render.to_text(table))
    return 0

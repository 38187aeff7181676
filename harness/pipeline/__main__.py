"""`python -m harness.pipeline --pp 8 --microbatches 20 --F 1 --B 2 --W 1 --FB 2.5`: print Table 2, simulated."""
from __future__ import annotations

import argparse
import json
import sys

from harness.errors import PtxmoeError

COLUMNS = ("method", "devices", "bubble", "formula_bubble", "formula_exact", "parameter_x", "activation", "makespan")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.pipeline", description=__doc__)
    parser.add_argument("--pp", type=int, default=8, help="pipeline stages (even for DualPipe/DualPipeV)")
    parser.add_argument("--microbatches", type=int, default=20, help="micro-batches in all (default 20)")
    for name, default, what in (("F", 1.0, "forward chunk"), ("B", 2.0, "full backward chunk"),
                                ("W", 1.0, "weight-gradient chunk"), ("FB", 2.5, "overlapped forward+backward pair")):
        parser.add_argument(f"--{name}", type=float, default=default, help=f"time of one {what} (default {default})")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    args = parser.parse_args(argv)
    from harness.pipeline.model import ChunkTimes
    from harness.pipeline.report import schedule_table

    try:
        rows = schedule_table(args.pp, args.microbatches, ChunkTimes(args.F, args.B, args.W, args.FB))
    except PtxmoeError as exc:
        print(f"harness.pipeline: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    table = [COLUMNS] + [tuple(str(r[c]) for c in COLUMNS) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())

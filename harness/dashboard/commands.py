"""`ptxmoe dashboard RUN [--vs OTHER_RUN] [-o FILE]`: write a run's self-contained HTML dashboard."""
from __future__ import annotations


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "dashboard", help="write a run's self-contained HTML dashboard (and refresh profiles/index.html)",
        description="Headline speedup of PTX over CUDA C++ with its interval (PTX vs Numba and CUDA C++ vs Numba "
                    "beside it), per-kernel verdicts of every pair, timing, roofline, "
                    "layer stages, simulator counters, static facts, Nsight metrics, NVTX timeline, environment. "
                    "One HTML file with plotly.js inside: it opens from file:// with no network.")
    parser.add_argument("run", metavar="RUN", help="run folder (profiles/<run-id>) holding run.json; a profiles "
                                                   "folder of runs instead: only write its index.html")
    parser.add_argument("--vs", metavar="OTHER_RUN", help="a second run folder to compare with (e.g. sim vs gpu)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="output file (default RUN/dashboard.html; with --vs RUN/dashboard-vs-<OTHER>.html)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from pathlib import Path

    from harness.dashboard import build, build_index

    folder = Path(args.run)
    if not (folder / "run.json").exists() and folder.is_dir() and any(folder.glob("*/run.json")):
        print(f"index: {build_index(folder)}")
        return 0
    path = build(args.run, vs=args.vs, out=args.output)
    print(f"dashboard: {path}")
    return 0

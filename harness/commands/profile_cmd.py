"""`ptxmoe profile --tool ncu|nsys [compare options]`: re-run the comparison under Nsight, import what it wrote.
`ptxmoe profile --tool ncu --script my_kernels.py --run RUN`: the same for your own kernels (ptxmoe.compare in a
script that saves its result into RUN); ncu's rows attach to its rows by their NVTX ranges.

The comparison runs as a child `python -m harness.cli compare ... --run-id ID --quick-timing --no-model-estimate`
under the tool (command lines from harness.nsight.tools), so the run folder is known in advance; the tool's report is
then imported into that run folder (`ptxmoe import`), its metric rows attached to the run.json rows by NVTX range.
ncu profiles the first launch of each launch configuration only (`--ncu-launches all` for every launch), with the
metrics the GPU supports (`ncu --query-metrics`; unknown ones are dropped with a warning); a known ncu failure (no
counter permission, no profiler in a sandbox) is explained.
"""
from __future__ import annotations

import collections
import subprocess
import sys
from pathlib import Path

from harness.backends.kinds import backend_kind
from harness.commands.compare_cmd import add_compare_options
from harness.errors import PtxmoeError, ToolchainError

TOOLS = ("ncu", "nsys")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "profile", help="re-run compare under Nsight Compute (ncu) or Nsight Systems (nsys) and import the report",
        description="Run `ptxmoe compare` under ncu or nsys (NVTX ranges on), then import the report into the run "
                    "folder. Exits 2 if the tool is not installed. Timing inside the profiler is reduced to one "
                    "sample per row (profiler overhead makes timings meaningless anyway).")
    parser.add_argument("--tool", required=True, choices=TOOLS, help="ncu (per-kernel metrics) or nsys (timeline)")
    parser.add_argument("--ncu-launches", choices=("first", "all"), default="first",
                        help="ncu: profile the first launch of each kernel launch configuration (default; the "
                             "check run of its row) or "
                             "every launch (check, warm-up, sample and stage runs, each replayed per metric pass)")
    parser.add_argument("--script", metavar="PY", help="profile your own kernels: run this script (which calls "
                        "ptxmoe.compare or sweep and saves its result with result.save(RUN)) under the tool instead "
                        "of the built-in comparison; needs --run")
    parser.add_argument("--run", metavar="RUN", help="with --script: the run folder the script saves to, where "
                        "the report is imported")
    add_compare_options(parser)
    parser.set_defaults(func=run)


def script_run(args) -> tuple[list[str], Path]:
    """(the app argv, the run folder) of `--script S --run RUN`: the user's script, whose compare labels every
    launch with the NVTX range of its row ("name/impl/case/none") and saves its run.json into RUN."""
    if not args.run:
        raise PtxmoeError("--script needs --run RUN: the folder the script saves its result to (result.save(RUN))")
    script = Path(args.script)
    if not script.is_file():
        raise PtxmoeError(f"--script {script}: no such file")
    return [sys.executable, str(script)], Path(args.run)


def child_argv(args, run_id: str) -> list[str]:
    """The compare command line the profiler runs."""
    argv = [sys.executable, "-m", "harness.cli", "compare", "--backend", args.backend, "--out", args.out,
            "--run-id", run_id, "--quick-timing", "--no-model-estimate"]
    for p in args.preset or ():
        argv += ["--preset", p]
    for s in args.skew or ():
        argv += ["--skew", s]
    if args.kernels:
        argv += ["--kernels", args.kernels]
    if getattr(args, "impls", None):
        argv += ["--impls", args.impls]
    if args.seed is not None:
        argv += ["--seed", str(args.seed)]
    if args.no_static:
        argv.append("--no-static")
    return argv


def run(args) -> int:
    from harness.backends.select import resolve_backend_name
    from harness.commands.import_cmd import import_file, rebuild_dashboard
    from harness.nsight.tools import (
        FIRST_LAUNCH_PER_CONFIG,
        explain_ncu_output,
        find_tool,
        ncu_command,
        nsys_commands,
        tool_env,
    )
    from harness.results import new_run_id

    if args.resume:
        raise PtxmoeError("profile does not resume runs; profile a fresh run (drop --resume)")
    try:
        tool = find_tool(args.tool)
    except ToolchainError as exc:
        print(f"ptxmoe profile: {exc}", file=sys.stderr)
        return 2
    if getattr(args, "script", None):  # the user's own kernels: the script chooses its backend and saves its run
        app, run_dir = script_run(args)
    else:
        backend = resolve_backend_name(args.backend)
        if backend_kind(backend).simulated:
            raise PtxmoeError(f"profiling with {args.tool} needs the gpu backend (a visible CUDA GPU); backend "
                              f"resolved to {backend!r}")
        run_id = new_run_id("gpu") + f"-{args.tool}"
        run_dir = Path(args.out) / run_id
        app = child_argv(args, run_id)
    nsight_dir = run_dir / "nsight"
    nsight_dir.mkdir(parents=True, exist_ok=True)
    if args.tool == "ncu":
        report = nsight_dir / "profile.ncu-rep"
        # NOTE: no --nvtx-include filter: the child runs only ptxmoe kernels, and our range names hold '/', which
        # ncu's include syntax treats as nesting. The NVTX stacks still label every kernel (--nvtx is on).
        metrics = _supported_metrics(tool)
        filters = FIRST_LAUNCH_PER_CONFIG if getattr(args, "ncu_launches", "first") == "first" else ()
        commands = [ncu_command(app, metrics, None, report, ncu=tool, filters=filters)]
    else:
        prefix = nsight_dir / "profile"
        commands = nsys_commands(app, prefix, nsys=tool)
        report = Path(f"{prefix}.sqlite")
    rc = 0
    for argv in commands:
        print("ptxmoe profile: " + " ".join(argv), file=sys.stderr)
        rc, output = _run_echoed(argv, tool_env())
        help_text = explain_ncu_output(output) if args.tool == "ncu" else None
        if help_text:
            print(f"ptxmoe profile: {help_text}", file=sys.stderr)
            return 2
        if rc not in (0, 1):  # 1: compare reported a failed row; the profile is still worth importing
            print(f"ptxmoe profile: {argv[0]} exited {rc}", file=sys.stderr)
            return rc
    if not report.exists():
        print(f"ptxmoe profile: {args.tool} wrote no report at {report}", file=sys.stderr)
        return 1
    if not (run_dir / "run.json").exists():
        print(f"ptxmoe profile: no run.json in {run_dir}: the script must save its result there "
              f"(result.save({str(run_dir)!r}, overwrite=True)); the report is kept at {report}", file=sys.stderr)
        return 1
    try:
        _rows_json, attached, unmatched = import_file(report, run_dir)
    except ToolchainError as exc:  # e.g. no ncu_report module here: ncu itself exports the report as CSV
        exported = export_ncu_csv(tool, report) if args.tool == "ncu" else None
        if exported is None:
            print(f"ptxmoe profile: {exc}; the report is kept at {report}: import it where ncu_report is installed "
                  f"with `ptxmoe import {report} {run_dir}`", file=sys.stderr)
            return 1
        print(f"ptxmoe profile: {exc}; imported ncu's CSV export {exported} instead", file=sys.stderr)
        _rows_json, attached, unmatched = import_file(exported, run_dir)
    print(f"profile: {report} imported ({attached} metric rows attached, {unmatched} unmatched); run {run_dir}")
    rebuild_dashboard(run_dir)
    return rc


def export_ncu_csv(tool, report: Path, run=subprocess.run) -> Path | None:
    """`ncu --import REPORT --csv --page raw` into REPORT's folder as <stem>-raw.csv (what `ptxmoe import` reads
    without the ncu_report module, which may not import under this Python); None when ncu cannot export it.

    NOTE: `--csv` beside `-o` at profiling time prints nothing (the metrics go to the report only); the CSV comes from
    this second, import-only call.
    """
    out = report.with_name(f"{report.stem}-raw.csv")
    argv = [str(tool), "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]
    try:
        proc = run(argv, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"ptxmoe profile: {' '.join(argv)} could not run: {exc}", file=sys.stderr)
        return None
    if proc.returncode != 0 or '"ID",' not in proc.stdout:
        why = (proc.stderr or proc.stdout or "").strip().splitlines()[-1:] or ["no CSV"]
        print(f"ptxmoe profile: {' '.join(argv)} exited {proc.returncode}: {why[0]}", file=sys.stderr)
        return None
    out.write_text(proc.stdout)
    return out


def _supported_metrics(tool) -> list[str]:
    """DASHBOARD_NCU_METRICS less those `ncu --query-metrics` says this GPU lacks (each dropped one is named)."""
    from harness.nsight.tools import DASHBOARD_NCU_METRICS, query_metric_names, validate_metrics

    known = query_metric_names(tool)
    if known is None:
        print("ptxmoe profile: warning: `ncu --query-metrics` gave no list; metric names not checked", file=sys.stderr)
    kept, dropped = validate_metrics(DASHBOARD_NCU_METRICS, known)
    for metric in dropped:
        print(f"ptxmoe profile: warning: metric {metric} is not supported on this GPU (ncu --query-metrics); "
              "left out", file=sys.stderr)
    if not kept:
        raise PtxmoeError(f"none of the ncu metrics {', '.join(DASHBOARD_NCU_METRICS)} is supported on this GPU")
    return kept


def _run_echoed(argv, env, keep_lines: int = 400) -> tuple[int, str]:
    """Run `argv`, echoing its output (stdout and stderr merged) to our stderr as it comes; (rc, last lines)."""
    tail: collections.deque = collections.deque(maxlen=keep_lines)
    with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace") as proc:
        assert proc.stdout is not None  # stdout=PIPE always gives a pipe (not user input)
        for line in proc.stdout:
            sys.stderr.write(line)
            tail.append(line)
        rc = proc.wait()
    return rc, "".join(tail)

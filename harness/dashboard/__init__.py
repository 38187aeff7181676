"""Self-contained HTML dashboards of a comparison run (issue #8), and the index of every run under profiles/.

    from harness.dashboard import build, build_index
    build("profiles/<run-id>")                      # -> profiles/<run-id>/dashboard.html, and profiles/index.html
    build("profiles/<sim-run>", vs="profiles/<gpu-run>")   # -> dashboard-vs-<gpu-run>.html: simulated vs measured

data.py turns run.json into records, figures.py draws them with Plotly, html.py/sections.py assemble one page with
plotly.js inline (opens from file:// with no network). Files are written atomically.
"""
from __future__ import annotations

import re
from pathlib import Path

from harness.dashboard.errors import DashboardError
from harness.errors import PtxmoeError

DASHBOARD_FILE = "dashboard.html"
INDEX_FILE = "index.html"
PARTITION_FILE = "partition.json"  # written by `ptxmoe partition` (harness.partition) instead of run.json

__all__ = ["DASHBOARD_FILE", "INDEX_FILE", "DashboardError", "build", "build_index", "render"]


def render(run_dir, vs=None) -> str:
    """The dashboard of `run_dir` (compared with the run folder `vs` when given) as one HTML document."""
    from plotly.offline import get_plotlyjs

    from harness.dashboard.data import device_ceilings, impls_present, load_run
    from harness.dashboard.html import esc, page
    from harness.dashboard.sections import basis_badge, build_sections
    from harness.implementations import impl_name

    if not (Path(run_dir) / "run.json").exists() and (Path(run_dir) / PARTITION_FILE).is_file() and vs is None:
        return render_partition(run_dir)
    run = load_run(run_dir)
    other = _load_other(load_run, vs) if vs is not None else None
    if other is not None:
        check_comparable(run, other)
    body, figs, nav = build_sections(run, other)
    ceil = device_ceilings(run)
    sweep = run.sweep
    subtitle = (f"{basis_badge(run.basis, ceil['name'] if ceil else None)} &nbsp; backend {esc(run.backend)}, "
                f"status {esc(sweep.status)}, created {esc(sweep.created_utc)}, {len(sweep.rows)} rows")
    names = " vs ".join(impl_name(i) for i in reversed(impls_present(sweep))) or "no implementations"
    title = f"ptxmoe: {names}, run {run.run_id}" + (f" vs {other.run_id}" if other else "")
    return page(title, subtitle, nav, body, figs, get_plotlyjs())


def _load_other(load_run, vs):
    """The --vs run; its errors say they are about --vs (load_run's own say "cannot build a dashboard of ...")."""
    from harness.results import RunFile

    try:
        RunFile.load(vs)
    except PtxmoeError as exc:
        raise DashboardError(f"--vs {vs}: {exc}") from None
    return load_run(vs)


def check_comparable(run, other) -> None:
    """DashboardError when two runs have no row in common, saying what differs (presets, kernels, skews...)."""
    from harness.dashboard.data import compare_runs, run_differences

    if compare_runs(run, other):
        return
    why = "; ".join(run_differences(run, other)) or "neither has rows"
    raise DashboardError(f"--vs {other.run_dir}: no rows in common with {run.run_dir} ({why}); compare runs of the "
                         f"same presets, kernels and skews")


def render_partition(run_dir) -> str:
    """The page of a `ptxmoe partition` folder (partition.json, no run.json): the partition figures alone."""
    import json

    from plotly.offline import get_plotlyjs

    from harness.dashboard.data import Run
    from harness.dashboard.html import esc, page
    from harness.dashboard.sections import partition_section

    run_dir = Path(run_dir)
    try:
        meta = json.loads((run_dir / PARTITION_FILE).read_text())
    except (OSError, ValueError) as exc:
        raise DashboardError(f"cannot read {run_dir / PARTITION_FILE}: {exc}") from None
    meta = meta if isinstance(meta, dict) else {}
    figs: dict = {}
    body = partition_section(Run(run_dir, {}), figs)
    run_id = str(meta.get("run_id") or run_dir.name)
    subtitle = f"{esc(meta.get('label') or '')} &nbsp; backend {esc(meta.get('backend'))}, created " \
               f"{esc(meta.get('created'))}"
    return page(f"ptxmoe: SM partition study, run {run_id}", subtitle, [("partition", "partition")], body, figs,
                get_plotlyjs())


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:80] or "other"


def build(run_dir, vs=None, out=None) -> Path:
    """Write the dashboard of a run folder and refresh the index of the folder holding it.

    Args:
        run_dir: a run folder with run.json (and optionally nsight/*.rows.json), or a `ptxmoe partition` folder
            with partition.json only (its figures alone).
        vs: another run folder to compare with (simulated vs measured, two GPUs...).
        out: the output file; default `run_dir/dashboard.html` (`run_dir/dashboard-vs-<other run>.html` with vs).
    Returns:
        The path written.
    Raises:
        DashboardError: a run folder without a readable run.json, or an output that cannot be written.
    """
    from harness.atomic import atomic_write_text

    run_dir = Path(run_dir)
    if out is None:
        out = run_dir / (DASHBOARD_FILE if vs is None else f"dashboard-vs-{_safe_name(Path(vs).name)}.html")
    text = render(run_dir, vs)
    try:
        path = atomic_write_text(out, text)
        _readable(path)
    except OSError as exc:
        raise DashboardError(f"cannot write the dashboard to {out}: {exc}") from None
    try:
        build_index(run_dir.parent)
    except OSError:
        pass  # NOTE: a read-only profiles folder still gets its dashboard; the index is a convenience
    return path


def build_index(profiles_dir) -> Path:
    """Write `profiles_dir/index.html`: every run folder in it with its headline, newest first.

    Returns:
        The index's path.
    Raises:
        OSError: the folder cannot be written.
    """
    from harness.atomic import atomic_write_text
    from harness.dashboard.index import index_page

    profiles_dir = Path(profiles_dir)
    return _readable(atomic_write_text(profiles_dir / INDEX_FILE, index_page(profiles_dir)))


def _readable(path: Path) -> Path:
    """rw-r--r--: atomic writes start from a private temp file (0600); a page is meant to be opened and shared."""
    import os

    os.chmod(path, 0o644)
    return path

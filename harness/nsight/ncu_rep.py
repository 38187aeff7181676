"""Nsight Compute reports (.ncu-rep) through NVIDIA's `ncu_report` module (PyPI ncu-report; needs no GPU).

Only the documented interface is used: load_report(path) -> context; context.num_ranges()/range_by_idx(i);
range.num_actions()/action_by_idx(j); action.name(base); action.metric_names(); action.metric_by_name(n) ->
metric or None; metric.value(), metric.unit(); action.nvtx_state().domains()/domain_by_id(d) -> domain with
name() and push_pop_ranges() (outermost first). `rows_from_report` takes any object with that shape.
"""
from __future__ import annotations

from harness.errors import ToolchainError
from harness.nsight.errors import NsightFormatError
from harness.nsight.ncu_nvtx import domain_name, innermost
from harness.nsight.table import MetricRow, NsightTable
from harness.nsight.units import normalise, parse_number

SOURCE = "ncu-rep"


def load_report_function():
    """ncu_report.load_report, or a ToolchainError saying how to get it."""
    try:
        import ncu_report
    except ImportError:
        import sys

        from harness.nsight.tools import ncu_python_dirs  # NOTE: the copy that ships with ncu itself

        sys.path.extend(str(d) for d in ncu_python_dirs() if str(d) not in sys.path)
    try:
        import ncu_report
    except ImportError as exc:
        raise ToolchainError(f"cannot import ncu_report ({exc}); install it with `pip install ncu-report` "
                             "(or use the one under Nsight Compute's extras/python)") from None
    return ncu_report.load_report


def read_ncu_rep(path, load_report=None) -> NsightTable:
    """Read a .ncu-rep file into a table (load_report defaults to ncu_report.load_report).

    The file's framing is checked first (ncu_rep_file): ncu_report itself loads a truncated, corrupt or foreign file
    as an empty report without a word.

    Raises:
        ToolchainError: ncu_report is not importable.
        NsightFormatError: the file is empty, truncated or corrupt (named by byte offset), the module cannot load
            it, loads none of the kernel results its block headers announce, or the report does not behave as
            documented.
    """
    from harness.nsight.ncu_rep_file import check_ncu_rep

    layout = check_ncu_rep(path)
    load = load_report or load_report_function()
    try:
        context = load(str(path))
    except Exception as exc:  # the SWIG module raises plain RuntimeError/Exception on bad files
        raise NsightFormatError(path, None, "an Nsight Compute report that ncu_report can load",
                                found=f"{type(exc).__name__}: {exc}") from None
    if context is None:
        raise NsightFormatError(path, None, "an Nsight Compute report that ncu_report can load", found="None")
    rows, launches = rows_and_launches(context, path)
    if not launches and layout.results:
        raise NsightFormatError(path, None, f"the {layout.results} kernel result(s) its block headers announce",
                                found="none that ncu_report could load: the report is corrupt, or newer than this "
                                      "ncu_report (pip install -U ncu-report)")
    reason = "" if rows else (f"a valid report with no profiled kernels ({layout.blocks} block(s), no kernel "
                              "results)" if not launches else "the report's kernels carry no metrics")
    return NsightTable(str(path), SOURCE, tuple(rows), {}, reason)


def rows_from_report(context, path="<report>") -> list[MetricRow]:
    """Rows of every action (kernel launch) of every range of a loaded report; launch counts across ranges."""
    return rows_and_launches(context, path)[0]


def rows_and_launches(context, path="<report>") -> tuple[list[MetricRow], int]:
    """(rows_from_report's rows, the number of actions (kernel launches) read)."""
    rows, launch = [], 0
    for r in range(context.num_ranges()):
        rng = context.range_by_idx(r)
        for a in range(rng.num_actions()):
            where = f"range {r} action {a}"
            try:
                rows += _action_rows(rng.action_by_idx(a), launch)
            except (AttributeError, TypeError) as exc:
                raise NsightFormatError(path, where, "an action with the documented ncu_report interface",
                                        found=str(exc)) from None
            launch += 1
    return rows, launch


def _kernel_name(action) -> str:
    base = getattr(type(action), "NameBase_DEMANGLED", None)
    return str(action.name(base) if base is not None else action.name())


def _stack(action) -> tuple[tuple[str, str], ...]:
    state = action.nvtx_state()
    if state is None:
        return ()
    ids = state.domains() if hasattr(state, "domains") else (0,)
    stack: tuple[tuple[str, str], ...] = ()
    for d in ids:
        domain = state.domain_by_id(d)
        if domain is None:
            continue
        name = domain_name(str(domain.name())) if d != 0 else ""
        stack += tuple((name, str(rng)) for rng in domain.push_pop_ranges())
    return stack


def _action_rows(action, launch) -> list[MetricRow]:
    kernel = _kernel_name(action)
    stack = _stack(action)
    domain, nvtx = innermost(stack)
    rows = []
    for name in action.metric_names():
        metric = action.metric_by_name(name)
        if metric is None:
            continue
        value, unit = normalise(parse_number(metric.value()), str(metric.unit() or ""))
        rows.append(MetricRow(SOURCE, kernel, nvtx, str(name), value, unit, launch, domain, stack))
    return rows

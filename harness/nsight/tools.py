"""Command lines for running Nsight Compute (ncu) and Nsight Systems (nsys) on the harness, and finding them.

Neither tool is on PyPI: they come with NVIDIA's CUDA toolkit or from developer.nvidia.com. Always run them with
LC_ALL=C (see tool_env) so numbers carry no locale thousands separators.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

from harness.errors import ToolchainError

# What the dashboards read (nsight-formats.md "Useful metrics"). DRAM bytes are not in ncu's default set.
DASHBOARD_NCU_METRICS = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "launch__registers_per_thread",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
)
TOOL_ENV = {"LC_ALL": "C"}
_PRODUCTS = {
    "ncu": ("Nsight Compute", "https://developer.nvidia.com/nsight-compute",
            ("/usr/local/cuda/bin/ncu", "/usr/local/cuda-*/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu",
             "/usr/local/cuda/nsight-compute-*/ncu")),
    "nsys": ("Nsight Systems", "https://developer.nvidia.com/nsight-systems",
             ("/usr/local/cuda/bin/nsys", "/usr/local/cuda-*/bin/nsys", "/opt/nvidia/nsight-systems/*/bin/nsys",
              "/usr/local/cuda/nsight-systems-*/bin/nsys")),
}


def find_tool(name: str) -> Path:
    """Path of `ncu` or `nsys`: PATH first, then the usual CUDA toolkit / Nsight install folders.

    Raises:
        ToolchainError: unknown tool name, or the tool is not installed (the message says where to get it).
    """
    if name not in _PRODUCTS:
        raise ToolchainError(f"unknown Nsight tool {name!r}; expected one of: {', '.join(sorted(_PRODUCTS))}")
    found = shutil.which(name)
    if found:
        return Path(found)
    product, url, patterns = _PRODUCTS[name]
    for pattern in patterns:
        hits = sorted(p for p in glob.glob(pattern) if os.access(p, os.X_OK))
        if hits:
            return Path(hits[-1])
    raise ToolchainError(f"{name} ({product}) is not installed: not on PATH nor in {', '.join(patterns[:3])}. It is "
                         f"not on PyPI; install it with NVIDIA's CUDA toolkit or from {url}, then put it on PATH")


def tool_env(base=None) -> dict:
    """The environment to run ncu/nsys with: `base` (default os.environ) plus LC_ALL=C."""
    env = dict(os.environ if base is None else base)
    env.update(TOOL_ENV)
    return env


def ncu_command(app_argv, metrics, nvtx_include, report_path, ncu="ncu", filters=()) -> list[str]:
    """The ncu argv profiling `app_argv` (run it with env=tool_env(): LC_ALL=C).

    Args:
        app_argv: the program and its arguments.
        metrics: metric names (e.g. DASHBOARD_NCU_METRICS), passed as one --metrics list.
        nvtx_include: one --nvtx-include expression or a list of them ("A/" push/pop range A, "A/B" nested,
            "dom@A/" in domain dom, "regex:..."). NOTE: ptxmoe's kernel ranges hold '/' themselves, so filter on
            the run range ("ptxmoe@<run>/") or use a regex rather than a plain kernel range name.
        report_path: the .ncu-rep to write (-o).
        ncu: the executable (find_tool("ncu") for the installed one).
        filters: more ncu launch filters, e.g. FIRST_LAUNCH_PER_CONFIG.
    Returns:
        [ncu, --nvtx, --nvtx-include X..., *filters, --clock-control none, --print-units base,
         --metrics m1,m2, -o report, *app_argv].
    """
    includes = [nvtx_include] if isinstance(nvtx_include, str) else list(nvtx_include or ())
    metrics = list(metrics)
    if not metrics:
        raise ToolchainError("ncu_command needs at least one metric (e.g. DASHBOARD_NCU_METRICS)")
    if not list(app_argv):
        raise ToolchainError("ncu_command needs the program to profile (app_argv is empty)")
    argv = [str(ncu), "--nvtx"]
    for include in includes:
        argv += ["--nvtx-include", include]
    argv += [str(f) for f in filters]
    argv += ["--clock-control", "none", "--print-units", "base", "--metrics", ",".join(metrics),
             "-o", str(report_path)]  # NOTE: no --csv: beside -o it prints nothing (profile_cmd exports the CSV)
    return argv + [str(a) for a in app_argv]


# The first launch of each launch configuration (kernel, grid, block, shared memory) only: a row's check launch, not
# its warm-up, sample and stage launches again, each replayed per metric pass (ncu docs, "Filter Options":
# --launch-count applies per configuration in per-launch-config mode).
FIRST_LAUNCH_PER_CONFIG = ("--launch-count", "1", "--filter-mode", "per-launch-config")

NCU_PERMISSION_HELP = (
    "ncu reported ERR_NVGPUCTRPERM: this user may not read the GPU performance counters. Run the profile as root "
    "(sudo), or let every user read them: write `options nvidia NVreg_RestrictProfilingToAdminUsers=0` to a file in "
    "/etc/modprobe.d/ and reload the nvidia kernel module (or reboot); in a container, start it with "
    "--cap-add=SYS_ADMIN. See https://developer.nvidia.com/ERR_NVGPUCTRPERM")
NCU_NO_PROFILER_HELP = (
    "ncu could not initialise the profiler on this machine ('Failed to initialize the profiler'; gVisor sandboxes "
    "cannot read GPU counters): profile on a machine that runs the driver natively")


def explain_ncu_output(text: str) -> str | None:
    """A what-to-do message for a known ncu failure in its output (counter permission, no profiler), else None."""
    if "ERR_NVGPUCTRPERM" in text:
        return NCU_PERMISSION_HELP
    if "Failed to initialize the profiler" in text:
        return NCU_NO_PROFILER_HELP
    return None


_METRIC_LINE = re.compile(r"^\s*([a-z0-9]+__[A-Za-z0-9_]+)\b")


def query_metric_names(ncu="ncu", run=subprocess.run) -> set[str] | None:
    """Base metric names the attached GPU supports (`ncu --query-metrics`), or None when the query fails."""
    try:
        proc = run([str(ncu), "--query-metrics"], capture_output=True, text=True, timeout=30, env=tool_env(),
                   check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = {m.group(1) for line in (proc.stdout or "").splitlines() if (m := _METRIC_LINE.match(line))}
    return names if proc.returncode == 0 and names else None


def validate_metrics(metrics, known: set[str] | None) -> tuple[list[str], list[str]]:
    """(kept, dropped): metrics whose base name (before the first '.') the chip lacks are dropped.

    NOTE: a metric family the listing does not cover at all (e.g. launch__*, which --query-metrics may not list) is
    kept: only a name contradicted by the listing is dropped. With no listing (known None) nothing is dropped.
    """
    metrics = list(metrics)
    if not known:
        return metrics, []
    families = {name.split("__", 1)[0] for name in known}
    kept, dropped = [], []
    for metric in metrics:
        base = metric.split(".", 1)[0]
        if base not in known and base.split("__", 1)[0] in families:
            dropped.append(metric)
        else:
            kept.append(metric)
    return kept, dropped


def ncu_python_dirs(ncu: Path | None = None) -> list[Path]:
    """Folders holding Nsight Compute's own `ncu_report` module (<install>/extras/python), for when the ncu-report
    wheel is not installed (the lent GPU machine has ncu but no PyPI)."""
    try:
        ncu = Path(ncu) if ncu else find_tool("ncu")
    except ToolchainError:
        return []
    out = []
    for root in (ncu.resolve().parent, ncu.resolve().parent.parent, ncu.parent.parent):
        for pattern in ("extras/python", "nsight-compute*/extras/python"):
            out += [Path(p) for p in sorted(glob.glob(str(root / pattern))) if Path(p, "ncu_report.py").exists()]
    return list(dict.fromkeys(out))


def nsys_commands(app_argv, out_prefix, nsys="nsys") -> list[list[str]]:
    """Two argvs: `nsys profile -t cuda,nvtx` writing OUT.nsys-rep, then `nsys export --type sqlite` to OUT.sqlite.

    Run both with env=tool_env(). Returns [profile_argv, export_argv].
    """
    if not list(app_argv):
        raise ToolchainError("nsys_commands needs the program to profile (app_argv is empty)")
    prefix = str(out_prefix)
    profile = [str(nsys), "profile", "-t", "cuda,nvtx", "--force-overwrite", "true", "-o", prefix,
               *[str(a) for a in app_argv]]
    export = [str(nsys), "export", "--type", "sqlite", "--force-overwrite", "true", "-o", f"{prefix}.sqlite",
              f"{prefix}.nsys-rep"]
    return [profile, export]

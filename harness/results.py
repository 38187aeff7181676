"""run.json: the versioned results file of one comparison run (schema in docs/run-json.md), written atomically.

A RunFile holds the document in memory and rewrites `profiles/<run-id>/run.json` atomically after every row, so an
interrupted run leaves a complete file that `--resume RUN_DIR` continues (rows already done are skipped).
"""
from __future__ import annotations

import json
import math
import os
import platform
import socket
import subprocess
import sys
import time
from dataclasses import asdict, is_dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from harness.backends.kinds import backend_kind
from harness.errors import PtxmoeError
from harness.run_records import Row, Sweep
from harness.run_schema import READABLE_VERSIONS, SCHEMA_VERSION, upgrade

RUN_FILE = "run.json"
# rows with these statuses are finished and skipped on --resume; "error" rows (unexpected exceptions) are re-run
DONE_STATUSES = ("ok", "failed", "missing")
ROW_STATUSES = ("ok", "failed", "missing", "error", "skipped")  # skipped: too big for this machine; re-run on resume
PACKAGES = ("ptxmoe", "numpy", "ml_dtypes", "numba", "numba-cuda", "cuda-python", "cuda-bindings", "cuda-pathfinder",
            "nvtx", "plotly", "ncu-report", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvrtc",
            "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime", "nvidia-cuda-nvdisasm")  # CUDA 12 and 13 wheel names


class ResultsError(PtxmoeError):
    """A run folder or run.json that cannot be used (missing, unreadable, wrong schema version)."""


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_run_id(backend: str) -> str:
    """<UTC time>-<backend>-<pid>: sortable and unique enough for one machine."""
    return f"{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}-{backend}-{os.getpid()}"


def row_key(kernel: str, variant: str | None, impl: str, preset: str, skew: str) -> str:
    """The unique key of a row: "grouped_gemm[up]/ptx/tiny/balanced", "gate/numba/tiny/balanced"."""
    name = f"{kernel}[{variant}]" if variant else kernel
    return f"{name}/{impl}/{preset}/{skew}"


def jsonable(value):
    """Plain JSON data from NumPy scalars/arrays, dataclasses, tuples, Paths; non-finite floats become None."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    if is_dataclass(value) and not isinstance(value, type):
        return jsonable(asdict(value))
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, Path):
        return str(value)
    return str(value)


# ---------------------------------------------------------------------------------------------------- environment
def _package_versions() -> dict[str, str | None]:
    from importlib import metadata

    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _git(*args: str) -> str | None:
    root = Path(__file__).resolve().parent.parent
    try:
        proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _toolchain_versions() -> dict:
    from harness import toolchain

    out = {}
    for name, fn in (("ptxas", toolchain.ptxas_version), ("nvdisasm", toolchain.nvdisasm_version),
                     ("nvrtc", toolchain.nvrtc_version)):
        try:
            out[name] = fn()
        except Exception as exc:  # noqa: BLE001 - a missing tool is recorded, not fatal
            out[name] = f"unavailable: {exc}"
    return out


def device_spec_dict(name: str) -> dict | None:
    """The ptxsim.model DeviceSpec of a GPU name as a dict, or None when the model does not know it."""
    try:
        from ptxsim.model.devices import get_device
    except ImportError:
        return None
    try:
        return jsonable(get_device(name))
    except Exception:  # noqa: BLE001 - unknown device: no specs
        return None


def _gpu_environment() -> dict:
    from harness.toolchain import gpu_visible

    ok, name = gpu_visible()
    env: dict[str, Any] = {"visible": ok, "name": name if ok else None, "reason": None if ok else name}
    if not ok:
        return env
    try:
        from cuda.bindings import driver, runtime

        env["driver_version"] = driver.cuDriverGetVersion()[1]
        env["cuda_runtime_version"] = runtime.cudaRuntimeGetVersion()[1]
    except Exception as exc:  # noqa: BLE001 - recorded, not fatal
        env["driver_error"] = str(exc)
    try:
        proc = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,memory.total,clocks.max.sm,clocks.max.mem",
                               "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20,
                              check=False)
        if proc.returncode == 0 and proc.stdout.strip():
            drv, mem, sm, memclk = [s.strip() for s in proc.stdout.splitlines()[0].split(",")]
            env.update(driver=drv, memory_total_mib=mem, clocks_max_sm_mhz=sm, clocks_max_mem_mhz=memclk)
    except (OSError, subprocess.TimeoutExpired, ValueError):
        pass
    env["specs"] = device_spec_dict(name)
    return env


def collect_environment(backend_name: str, model_device: str = "H200 SXM") -> dict:
    """GPU (and its specs), driver, CUDA, packages, toolchain, git commit, host; `model_device` for sim rows."""
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "backend": backend_name,
        "gpu": {"visible": False, "name": None} if backend_kind(backend_name).simulated else _gpu_environment(),
        "model_device": {"name": model_device, "specs": device_spec_dict(model_device)},
        "packages": _package_versions(),
        "toolchain": _toolchain_versions(),
        "git": {"commit": _git("rev-parse", "HEAD"), "dirty": bool(status) if status is not None else None},
        "host": {"hostname": socket.gethostname(), "platform": platform.platform(), "machine": platform.machine(),
                 "cpu_count": os.cpu_count(), "python": sys.version.split()[0]},
    }


# ------------------------------------------------------------------------------------------------- document shape
# top-level fields of a run document and their JSON types; rows and verdicts are objects with a string "key"
DOC_FIELDS = {"run_id": str, "status": str, "settings": dict, "environment": dict, "rows": list, "verdicts": list}
OPTIONAL_LIST_FIELDS = ("nvtx_ranges", "missing", "resumed_utc")
_JSON_TYPE = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number",
              bool: "true/false", type(None): "null"}


def _json_type(value) -> str:
    return _JSON_TYPE.get(type(value), type(value).__name__)


def check_doc(doc, path) -> None:
    """Check that `doc` (parsed from `path`) has the shape of a run document; fills absent optional lists.

    Raises:
        ResultsError: naming the file, the field and the type found against the type expected.
    """
    if not isinstance(doc, dict):
        raise ResultsError(f"{path} holds {_json_type(doc)}, not a run document; expected an object with "
                           f"schema_version, run_id, settings, rows, verdicts (written by `ptxmoe compare`)")
    if doc.get("schema_version") not in READABLE_VERSIONS:
        raise ResultsError(f"{path} has schema_version {doc.get('schema_version')!r}; this ptxmoe reads versions "
                           f"{', '.join(map(str, READABLE_VERSIONS))}")
    for name, kind in DOC_FIELDS.items():
        if not isinstance(doc.get(name), kind):
            found = "no such field" if name not in doc else _json_type(doc[name])
            raise ResultsError(f"{path}: field {name!r} is {found}; expected {_JSON_TYPE[kind]}")
    for name in OPTIONAL_LIST_FIELDS:
        doc.setdefault(name, [])
        if not isinstance(doc[name], list):
            raise ResultsError(f"{path}: field {name!r} is {_json_type(doc[name])}; expected an array")
    for name in ("rows", "verdicts"):
        for i, item in enumerate(doc[name]):
            if not isinstance(item, dict) or not isinstance(item.get("key"), str):
                found = _json_type(item) if not isinstance(item, dict) else "an object without a string 'key'"
                raise ResultsError(f"{path}: {name}[{i}] is {found}; expected an object with a string 'key'")


def records_of(doc: dict, path) -> Sweep:
    """The typed records of a run document (ResultsError naming the file and the field when one is of the wrong
    type)."""
    from harness.json_records import RecordError

    try:
        return Sweep.from_document(doc, f"{path}:")
    except RecordError as exc:
        raise ResultsError(str(exc)) from None


def typed_row(row) -> Row:
    """A row the runner made (JSON-able data) as its typed record (ResultsError naming the bad field)."""
    from harness.json_records import RecordError

    if isinstance(row, Row):
        return row
    try:
        return Row.from_json(jsonable(row), f"row {row.get('key') if isinstance(row, dict) else row!r}:")
    except RecordError as exc:
        raise ResultsError(str(exc)) from None


# ------------------------------------------------------------------------------------------------------ the file
class RunFile:
    """One run's document; `add_row`/`set_verdict`/`save` rewrite run.json atomically."""

    def __init__(self, run_dir: Path, doc: dict, sweep: Sweep | None = None):
        self.run_dir = Path(run_dir)
        self.doc = doc  # the document being written (JSON data)
        self._sweep = sweep

    @property
    def sweep(self) -> Sweep:
        """The document's typed records (harness.run_records): built once when the file is read (`load` checks every
        field), else from the document as it is now."""
        if self._sweep is None:
            return records_of(self.doc, self.path)
        return self._sweep

    @property
    def path(self) -> Path:
        return self.run_dir / RUN_FILE

    @classmethod
    def create(cls, profiles_dir: Path, run_id: str, settings: dict, environment: dict, command=None) -> RunFile:
        run_dir = Path(profiles_dir) / run_id
        if (run_dir / RUN_FILE).exists():
            raise ResultsError(f"{run_dir / RUN_FILE} exists already; use --resume {run_dir} to continue it")
        now = utc_now()
        doc = {"schema_version": SCHEMA_VERSION, "run_id": run_id, "status": "running", "created_utc": now,
               "updated_utc": now, "command": list(command or sys.argv), "settings": settings,
               "environment": environment, "rows": [], "verdicts": [], "nvtx_ranges": [], "missing": [],
               "resumed_utc": []}
        run = cls(run_dir, doc)
        run.save()
        return run

    @classmethod
    def load(cls, run_dir) -> RunFile:
        """Open an existing run folder (for --resume or `ptxmoe import`); older schema versions are upgraded in memory
        (harness.run_schema), so the document is always of SCHEMA_VERSION.

        Raises:
            ResultsError: the folder or its run.json is missing, unreadable, of a schema version not readable, or
                JSON that is not a run document (a list, a row without a key...).
        """
        run_dir = Path(run_dir)
        path = run_dir / RUN_FILE
        if not path.is_file():
            raise ResultsError(f"{path} not found; expected a run folder written by `ptxmoe compare`")
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ResultsError(f"{path} is not readable JSON: {exc}") from exc
        check_doc(doc, path)
        doc = upgrade(doc)
        return cls(run_dir, doc, records_of(doc, path))

    def save(self) -> Path:
        """Rewrite run.json atomically, readable by others (0644).

        Raises:
            ResultsError: the run folder cannot be created or written (the message names the folder and the cause).
        """
        from harness.atomic import atomic_write_text

        self.doc["updated_utc"] = utc_now()
        text = json.dumps(jsonable(self.doc), indent=1, allow_nan=False)
        try:
            return atomic_write_text(self.path, text + "\n")
        except OSError as exc:
            raise ResultsError(f"cannot write {self.path}: {why_unwritable(self.path.parent, exc)}") from None

    # rows ----------------------------------------------------------------------------------------------------
    def row(self, key: str) -> dict | None:
        for row in self.doc["rows"]:
            if row["key"] == key:
                return row
        return None

    def is_done(self, key: str) -> bool:
        row = self.row(key)
        return row is not None and row.get("status") in DONE_STATUSES

    def add_row(self, row: dict, save: bool = True) -> None:
        """Insert or replace the row with the same key, then rewrite run.json atomically."""
        if row.get("status") not in ROW_STATUSES:
            raise ResultsError(f"row {row.get('key')!r} has status {row.get('status')!r}; expected one of "
                               f"{', '.join(ROW_STATUSES)}")
        rows = self.doc["rows"]
        for i, old in enumerate(rows):
            if old["key"] == row["key"]:
                rows[i] = row
                break
        else:
            rows.append(row)
        if save:
            self.save()

    def set_verdict(self, verdict: dict, save: bool = True) -> None:
        key = verdict["key"]
        self.doc["verdicts"] = [v for v in self.doc["verdicts"] if v["key"] != key] + [verdict]
        if save:
            self.save()

    def add_ranges(self, ranges: list[dict]) -> None:
        self.doc["nvtx_ranges"].extend(ranges)

    def finish(self, status: str = "complete") -> Path:
        self.doc["status"] = status
        self.doc["finished_utc"] = utc_now()
        return self.save()


def elapsed_since(t0: float) -> float:
    return time.perf_counter() - t0


PSEUDO_FILESYSTEMS = frozenset({"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs",
                                "securityfs", "configfs", "bpf", "pstore", "efivarfs", "fusectl", "mqueue"})


def _mount_of(path: Path) -> tuple[str, str] | None:
    """(mount point, filesystem type) holding `path` (Linux /proc/mounts), None where unknown."""
    try:
        mounts = [line.split()[1:3] for line in Path("/proc/mounts").read_text().splitlines() if line.strip()]
    except OSError:
        return None
    best = None
    for point, kind in mounts:
        point = point.replace("\\040", " ")
        if (path == Path(point) or Path(point) in path.parents) and (best is None or len(point) > len(best[0])):
            best = (point, kind)
    return best


def why_unwritable(folder: Path, exc: OSError) -> str:
    """The real reason a run folder cannot be created or written, beyond the OS's bare "No such file or directory":
    the nearest existing folder above it is a file, on a pseudo-filesystem (/proc, /sys), or not writable."""
    folder = Path(folder).absolute()
    existing = next((p for p in (folder, *folder.parents) if p.exists()), Path("/"))
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    mount = _mount_of(existing)
    if mount is not None and mount[1] in PSEUDO_FILESYSTEMS:
        where = f"{existing} is" + ("" if str(existing) == mount[0] else f" on {mount[0]},")
        return (f"{where} a {mount[1]} pseudo-filesystem (the kernel's view, not a disk), where no folder or file "
                f"can be created; choose a folder on a disk")
    if not os.access(existing, os.W_OK):
        return f"{existing} is not writable by this user ({exc.strerror or exc})"
    return str(exc.strerror or exc)

"""Fixture run folders for the dashboard tests (copied to tmp: building writes dashboard.html beside run.json)."""
import json
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
RUNS = REPO / "tests" / "fixtures" / "runs"
NSYS = REPO / ".." / "shared" / "fixtures" / "nsight" / "pipit_nsys2022.2_saxpy_mpi_cuda_A100_nvtx.sqlite.gz"
XSS_KERNEL = "<script>alert(1)</script>"
XSS_VARIANT = "</script><img src=x onerror=\"window.__xss=1;alert(2)\">"


def copy_run(name: str, dest: Path, as_name: str | None = None) -> Path:
    out = dest / (as_name or name)
    shutil.copytree(RUNS / name, out)
    return out


def nsys_fixture() -> Path:
    if not NSYS.is_file():
        pytest.skip(f"shared fixture {NSYS} not present (CI keeps shared/ beside the clone, as ../shared)")
    return NSYS


def make_xss_run(dest: Path) -> Path:
    """The sim fixture with script-bearing names wherever a file's text reaches the page."""
    run_dir = copy_run("sim-tiny", dest, "xss-run")
    path = run_dir / "run.json"
    doc = json.loads(path.read_text())
    for item in doc["rows"] + doc["verdicts"]:
        if item["kernel"] == "gate":
            item["kernel"] = XSS_KERNEL
            item["key"] = item["key"].replace("gate", XSS_KERNEL, 1)
        if item["kernel"] == "grouped_gemm" and item.get("variant") == "up":
            item["variant"] = XSS_VARIANT
        if "static" in item and item["static"]:
            item["static"]["kernels"] = {XSS_VARIANT if k == "ptx_gate" else k: v
                                         for k, v in item["static"]["kernels"].items()}
        if item.get("stages_us") and "swiglu" in item["stages_us"]:
            item["stages_us"][XSS_VARIANT] = item["stages_us"].pop("swiglu")
    for r in doc["nvtx_ranges"]:
        r["name"] = r["name"].replace("gate", XSS_KERNEL)
    doc["environment"]["host"]["hostname"] = XSS_VARIANT
    doc["settings"]["skews"] = [XSS_KERNEL, *doc["settings"]["skews"]]
    path.write_text(json.dumps(doc))
    return run_dir

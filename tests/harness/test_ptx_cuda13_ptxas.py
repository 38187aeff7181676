"""Every PTX text the GPU path loads assembles with a CUDA 13 ptxas without a warning, when one is installed here
(/usr/local/cuda, or $CUDA_HOME): the target's driver (580, CUDA 13.0) JIT-compiles with the same ptxas, so a PTX
it refuses, or a `setmaxnreg` it ignores (C7508), shows up here before a GPU run (issue 25)."""
import importlib
import importlib.util
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _cuda13_ptxas() -> Path | None:
    home = Path(os.environ.get("CUDA_HOME") or "/usr/local/cuda")
    ptxas = home / "bin" / "ptxas"
    if not ptxas.is_file():
        return None
    out = subprocess.run([str(ptxas), "--version"], capture_output=True, text=True, check=False).stdout
    match = re.search(r"release (\d+)\.", out)
    return ptxas if match and int(match.group(1)) >= 13 else None


PTXAS = _cuda13_ptxas()
pytestmark = pytest.mark.skipif(PTXAS is None, reason="no CUDA 13 ptxas installed here (/usr/local/cuda, $CUDA_HOME)")


def _sources() -> dict[str, str]:
    from harness.calibrate_pairs import PAIRS
    from harness.timing.gpu import BLOCKER_PTX
    from ptx_impl.static import ptx_sources

    out = dict(ptx_sources())
    for rung in range(1, 12):  # the FP8 ladder's rung files
        module = importlib.import_module(f"ptx_impl.gemm_fp8_r{rung}")
        out.update({f"r{rung}:{k}": v for k, v in getattr(module, "ptx_modules", dict)().items()})
    out["stream_blocker"] = BLOCKER_PTX
    out.update({f"pair:{s.entry}": s.ptx for p in PAIRS.values() for s in (p.numerator, p.denominator)})
    spec = importlib.util.spec_from_file_location("gpu_preflight", ROOT / "scripts" / "gpu_preflight.py")
    preflight = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(preflight)
    for name in ("CLUSTER_PTX", "TMA_PTX", "OPTIN_PTX", "SETMAXNREG_PTX"):
        out[f"preflight:{name}"] = getattr(preflight, name)
    return out


def test_every_gpu_ptx_assembles_with_cuda13_ptxas_without_warnings(tmp_path):
    problems = []
    sources = _sources()
    assert len(sources) > 20  # every ladder rung's modules are in
    for name, ptx in sources.items():
        arch = "sm_90a" if re.search(r"^\s*\.target\s+sm_90a", ptx, re.M) else "sm_90"
        src = tmp_path / "m.ptx"
        src.write_text(ptx)
        proc = subprocess.run([str(PTXAS), f"-arch={arch}", str(src), "-o", str(tmp_path / "m.cubin")],
                              capture_output=True, text=True, check=False)
        said = (proc.stderr + proc.stdout).strip()
        if proc.returncode != 0 or said:
            problems.append(f"{name} ({arch}): exit {proc.returncode}: {said[:300]}")
    assert not problems, "\n".join(problems)

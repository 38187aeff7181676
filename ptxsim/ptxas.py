"""Optional second opinion: assemble a module with ptxas (from the nvidia-cuda-nvcc-cu12 wheel) and report its errors.

Found as harness/toolchain.py finds it (site-packages/nvidia/*/bin/ptxas) without importing harness; a path can be
passed instead. Used by `load_ptx(text, validate=True)`.
"""
from __future__ import annotations

import re
from pathlib import Path

from ptxsim.errors import PtxasError

_DIAG = re.compile(r"^ptxas[^,]*,\s*line\s+(\d+);\s*(error|fatal)\s*:\s*(.*)$", re.MULTILINE)
_GENERAL = re.compile(r"^ptxas\s+(?:error|fatal)\s*:\s*(.*)$", re.MULTILINE)  # errors without a line
TIMEOUT_S = 120


def find_ptxas() -> Path | None:
    """ptxas of the nvidia-cuda-nvcc wheel in the running interpreter's site-packages, or None."""
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        for pattern in ("cuda_nvcc/bin/ptxas", "*/bin/ptxas"):
            hits = sorted(Path(root).glob(pattern))
            if hits:
                return hits[0]
    return None


def _arch(target: str) -> str:
    for name in target.split(","):
        m = re.match(r"^(?:sm|compute)_(\d+[af]?)$", name)
        if m:
            return f"sm_{m.group(1)}"
    return "sm_90"


def check(text: str, target: str, ptxas: str | Path | None = None) -> bool:
    """Assemble `text` with ptxas for the module's target. Returns False when no ptxas is available.

    Raises:
        PtxasError: ptxas rejected the module; `.diagnostics` holds (PTX line, message) pairs.
    """
    import subprocess
    import tempfile

    exe = Path(ptxas) if ptxas is not None else find_ptxas()
    if exe is None:
        return False
    if not exe.is_file():
        raise PtxasError(f"ptxas not found at {exe} (pass the path of a ptxas executable, or None to use the "
                         "nvidia-cuda-nvcc-cu12 wheel's)")
    with tempfile.TemporaryDirectory(prefix="ptxsim-ptxas-") as tmp:
        src = Path(tmp) / "module.ptx"
        src.write_text(text)
        try:
            proc = subprocess.run([str(exe), f"-arch={_arch(target)}", str(src), "-o", str(Path(tmp) / "m.cubin")],
                                  capture_output=True, text=True, check=False, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise PtxasError(f"ptxas ran longer than {TIMEOUT_S} s on this module") from None
        except OSError as e:
            raise PtxasError(f"could not run ptxas at {exe}: {e}") from None
    if proc.returncode == 0:
        return True
    out = proc.stderr + proc.stdout
    diags = [(int(m.group(1)), m.group(3).strip()) for m in _DIAG.finditer(out)]
    diags += [(0, m.group(1).strip()) for m in _GENERAL.finditer(out)]
    shown = "\n".join(f"  PTX line {line}: {msg}" if line else f"  {msg}" for line, msg in diags[:20])
    more = f"\n  ... and {len(diags) - 20} more" if len(diags) > 20 else ""
    raise PtxasError(f"ptxas ({_arch(target)}) rejected the module:\n{shown or out.strip()[:2000]}{more}", diags)

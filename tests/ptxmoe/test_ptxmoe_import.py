"""`import ptxmoe` stays cheap: no Numba, pandas, plotly, pyarrow, simulator or NumPy until they are used."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numba", "pandas", "plotly", "pyarrow", "ptxsim", "numpy", "harness", "cpp_impl", "cuda.bindings")


def test_import_ptxmoe_loads_no_heavy_module():
    code = (f"import sys, ptxmoe; heavy = {HEAVY!r}; "
            "print(sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in heavy)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_public_names():
    import ptxmoe

    assert {"compare", "NumbaKernel", "CppKernel", "PtxKernel", "Result", "load"} <= set(ptxmoe.__all__)
    assert all(hasattr(ptxmoe, name) for name in ptxmoe.__all__)

"""The house reads one way: contract -> implementations -> harness. Imports against that direction are bugs."""
import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROJECT_PACKAGES = {"contract", "cuda_impl", "cpp_impl", "ptx_impl", "triton_impl", "cutlass_impl", "harness", "ptxsim",
                    "ptxmoe"}
# package -> the project packages it may import (besides itself)
ALLOWED = {
    "contract": set(),
    "cuda_impl": {"contract"},
    "cpp_impl": {"contract"},
    "ptx_impl": {"contract"},
    "triton_impl": {"contract"},
    "cutlass_impl": {"contract", "cpp_impl"},  # cpp_impl.nvrtc: the project's one NVRTC driver
    "ptxsim": set(),
}


def imported_packages(path: Path) -> set[tuple[str, int]]:
    """(top-level project package, line) of every import in the file, including ones inside functions."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".", 1)[0]
            if top in PROJECT_PACKAGES:
                found.add((top, node.lineno))
    return found


def violations(package: str) -> list[str]:
    bad = []
    for path in sorted((REPO / package).rglob("*.py")):
        for top, line in imported_packages(path):
            if top != package and top not in ALLOWED[package]:
                bad.append(f"{path.relative_to(REPO)}:{line} imports {top}")
    return bad


@pytest.mark.parametrize("package", sorted(p for p in ALLOWED if (REPO / p).is_dir()))
def test_package_imports_only_what_it_may(package):
    assert violations(package) == []


def test_checker_catches_a_violation(tmp_path, monkeypatch):
    """The walker sees imports inside functions too (the usual way a layering slip hides)."""
    (tmp_path / "contract").mkdir()
    (tmp_path / "contract" / "bad.py").write_text("def f():\n    from harness import runner\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert violations("contract") == ["contract/bad.py:2 imports harness"]

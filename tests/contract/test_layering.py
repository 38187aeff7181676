"""The house reads one way: contract -> implementations -> harness -> ptxmoe, with ptxsim beside them importing none
of them. Imports against that direction are bugs, and so is an import circle among modules (read from the code,
imports inside functions included)."""
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
    "harness": {"contract", "cuda_impl", "cpp_impl", "ptx_impl", "ptxsim"},
    "ptxmoe": {"contract", "cuda_impl", "cpp_impl", "ptx_impl", "harness"},
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


# ------------------------------------------------------------------------------------------------ module circles
def module_names(repo: Path) -> dict[str, Path]:
    """{dotted module name: file} of every module of the project packages under `repo`."""
    out = {}
    for package in sorted(PROJECT_PACKAGES):
        for path in sorted((repo / package).rglob("*.py")):
            parts = path.relative_to(repo).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def import_graph(repo: Path) -> dict[str, set[str]]:
    """{module: the project modules it imports}. `from pkg import sub` imports the submodule `sub` (not the package's
    own names); `from pkg import name` a name defined in the package imports the package."""
    modules = module_names(repo)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*parent, *([base] if base else [])])
                subs = [f"{base}.{alias.name}" for alias in node.names]
                targets = [t for t in subs if t in modules]
                if len(targets) < len(subs):
                    targets.append(base)
            else:
                continue
            for target in targets:
                parts = target.split(".")
                while parts and ".".join(parts) not in modules:
                    parts.pop()
                if parts and ".".join(parts) != name:
                    graph[name].add(".".join(parts))
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_no_import_circle_among_the_houses_modules():
    """contract, the implementations, harness and ptxmoe: no module reaches itself through its imports."""
    graph = import_graph(REPO)
    assert [c for c in circles(graph) if not c[0].startswith("ptxsim")] == []


def test_no_import_circle_inside_ptxsim():
    """ptxsim too: its lane marks live in a leaf (ptxsim/lanes.py), the ops families import their entry type from
    ptxsim/ops/opspec.py (not the package that imports them), and ptxsim/launch.py takes a DeviceMemory
    (ptxsim/buffers.py), the Device that launches on itself being built on top of both."""
    graph = import_graph(REPO)
    assert [c for c in circles(graph) if c[0].startswith("ptxsim")] == []


def test_the_circle_finder_sees_a_circle_through_a_function_level_import(tmp_path, monkeypatch):
    """a -> b at import time, b -> a inside a function: a circle all the same; a package importing its own
    submodule, which takes a name from a sibling, is not one."""
    for package in PROJECT_PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "harness" / "__init__.py").write_text("from harness.a import x\n")
    (tmp_path / "harness" / "a.py").write_text("from harness import b\nx = 1\n")
    (tmp_path / "harness" / "b.py").write_text("def f():\n    from harness.a import x\n    return x\n")
    (tmp_path / "harness" / "c.py").write_text("from harness.a import x\n")
    assert circles(import_graph(tmp_path)) == [["harness.a", "harness.b"]]

"""The test tree itself: pytest (rootdir-relative imports) needs unique test module basenames across folders."""
from collections import Counter
from pathlib import Path


def test_test_module_basenames_are_unique():
    names = Counter(p.name for p in Path(__file__).parent.rglob("test_*.py"))
    assert [n for n, c in names.items() if c > 1] == []


def test_every_top_level_package_is_installed():
    """An installed ptxmoe (run outside the source tree) imports only the packages pyproject.toml lists: a package
    left out makes its rows 'not implemented' everywhere but in a checkout."""
    import fnmatch

    import pytest

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    root = Path(__file__).resolve().parents[1]
    include = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = sorted(p.parent.name for p in root.glob("*/__init__.py") if p.parent.name not in ("tests",))
    missing = [p for p in packages if not any(fnmatch.fnmatch(p, pattern) for pattern in include)]
    assert missing == [], f"top-level packages pyproject.toml does not install: {missing}"

"""The test tree itself: pytest (rootdir-relative imports) needs unique test module basenames across folders."""
from collections import Counter
from pathlib import Path


def test_test_module_basenames_are_unique():
    names = Counter(p.name for p in Path(__file__).parent.rglob("test_*.py"))
    assert [n for n, c in names.items() if c > 1] == []

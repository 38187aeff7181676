"""harness.atomic: written files are rw-r--r-- (a temp file from mkstemp is 0600) whatever the umask, or as asked."""
import os

from harness.atomic import atomic_copy, atomic_write_bytes, atomic_write_text


def test_files_are_readable_by_others(tmp_path):
    old = os.umask(0o077)  # the strictest common umask: the mode is set explicitly, not left to it
    try:
        a = atomic_write_text(tmp_path / "a.json", "{}")
        b = atomic_copy(a, tmp_path / "sub" / "b.json")
        c = atomic_write_bytes(tmp_path / "c.bin", b"x", mode=0o600)
    finally:
        os.umask(old)
    assert [p.stat().st_mode & 0o777 for p in (a, b, c)] == [0o644, 0o644, 0o600]
    assert b.read_text() == "{}" and sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "c.bin", "sub"]

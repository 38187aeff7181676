"""Precise text edits on generated PTX, as data: a regex, its replacement and how many matches it must have, so a
mutation that no longer applies (the kernel changed under it) is an error, never a silent pass."""
from __future__ import annotations

import re
from dataclasses import dataclass


class MutationError(Exception):
    """A mutation that does not apply as written: its pattern matched another number of times than it expects."""


@dataclass(frozen=True)
class Edit:
    """re.subn(pattern, replacement, text) with re.MULTILINE, which must replace exactly `count` matches."""

    pattern: str
    replacement: str
    count: int = 1

    def apply(self, text: str, where: str) -> str:
        out, n = re.subn(self.pattern, self.replacement, text, flags=re.MULTILINE)
        if n != self.count:
            raise MutationError(f"{where}: pattern {self.pattern!r} matched {n} time(s); expected {self.count}")
        return out


def _line(regex: str) -> str:
    """A whole source line (indentation to newline) whose text after the indentation matches `regex`."""
    return rf"^[ \t]*{regex}[^\n]*\n"


def delete(regex: str, count: int = 1) -> Edit:
    """Delete the `count` lines whose text (after the indentation) starts with `regex`."""
    return Edit(_line(regex), "", count)


def replace(regex: str, replacement: str, count: int = 1) -> Edit:
    """Replace `count` matches of `regex` within lines (no match may span a newline)."""
    return Edit(regex, replacement, count)


def insert_after(anchor: str, lines: str, count: int = 1) -> Edit:
    """Insert `lines` (full lines, newline-terminated) after each of the `count` lines starting with `anchor`."""
    return Edit(f"({_line(anchor)})", r"\g<1>" + lines.replace("\\", "\\\\"), count)


def move_after(regex: str, anchor: str) -> Edit:
    """Move the one line starting with `regex` down to just after the first later line starting with `anchor`."""
    return Edit(f"({_line(regex)})((?:[^\n]*\n)*?{_line(anchor)})", r"\2\1", 1)


def move_before(regex: str, anchor: str) -> Edit:
    """Move the one line starting with `regex` up to just before the nearest earlier line starting with `anchor`."""
    return Edit(f"({_line(anchor)}(?:[^\n]*\n)*?)({_line(regex)})", r"\2\1", 1)


def entry_span(ptx: str, entry: str) -> tuple[int, int]:
    """(start, end) of entry `entry` in a PTX module: from its `.visible .entry` line to its closing brace line."""
    m = re.search(rf"^\.visible \.entry {re.escape(entry)}\(", ptx, flags=re.MULTILINE)
    if m is None:
        raise MutationError(f"entry {entry} is not in the module")
    end = ptx.find("\n}\n", m.start())
    if end < 0:
        raise MutationError(f"entry {entry} has no closing brace")
    return m.start(), end + 3


def apply_edits(ptx: str, entry: str, edits, where: str) -> str:
    """The module with `edits` applied in order to entry `entry` only (other entries and the header untouched)."""
    start, end = entry_span(ptx, entry)
    body = ptx[start:end]
    for i, edit in enumerate(edits):
        body = edit.apply(body, f"{where} edit {i + 1}")
    if body == ptx[start:end]:
        raise MutationError(f"{where}: the edits leave the entry unchanged")
    return ptx[:start] + body + ptx[end:]

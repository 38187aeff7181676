"""Sanitizers (memcheck, racecheck, initcheck, synccheck, nc): hooks on the running launch."""
from __future__ import annotations

from ptxsim.errors import LaunchError

NAMES = ("memcheck", "racecheck", "initcheck", "synccheck", "nc")


def make_sanitizers(sanitize, report: bool, dev) -> list:
    if sanitize is None or sanitize == set() or sanitize == ():
        return []
    names = set(NAMES) if sanitize == "all" else ({sanitize} if isinstance(sanitize, str) else set(sanitize))
    bad = names - set(NAMES)
    if bad:
        raise LaunchError(f"unknown sanitizer(s) {sorted(bad)}; choose from {', '.join(NAMES)} or 'all'")
    raise LaunchError("sanitizers are not implemented yet")

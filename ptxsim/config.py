"""Environment flags, read once at import (documented here, nowhere else).

PTXSIM_TRACE=1          print every executed instruction with its active lanes.
PTXSIM_BUDGET=<n>       default warp-instruction budget per launch (default 5e8).
PTXSIM_MAX_LANES=<n>    most threads simulated in one lane vector (CTAs are batched up to this; default 32768).
"""
from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Config:
    trace: bool
    budget: int
    max_lanes: int


def _read() -> Config:
    return Config(
        trace=os.environ.get("PTXSIM_TRACE", "0") not in ("", "0"),
        budget=int(float(os.environ.get("PTXSIM_BUDGET", "5e8"))),
        max_lanes=int(os.environ.get("PTXSIM_MAX_LANES", "32768")),
    )


CONFIG = _read()

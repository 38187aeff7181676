"""Environment flags, read once at import (documented here, nowhere else).

PTXSIM_TRACE=1          print every executed instruction with its active lanes.
PTXSIM_BUDGET=<n>       default warp-instruction budget per launch (default 5e8).
PTXSIM_MAX_LANES=<n>    most threads simulated in one lane vector (CTAs are batched up to this; default 32768).
PTXSIM_TIME_LIMIT=<s>   wall-clock seconds one launch may run before TimeLimitExceeded (default 60; 0 = no limit).
PTXSIM_MAX_CALL_DEPTH=<n>  deepest nesting of .func calls, recursion included (default 256).
PTXSIM_MAX_GLOBAL=<n>   bytes of eagerly backed simulated global memory (allocations copied in or poisoned, module
                        variables; default 2 GiB). Lazy allocations (pages filled when first touched) do not count.
PTXSIM_STRICT_ASYNC=1   adversarial timing of asynchronous operations in every launch (it is always on when a launch
                        has sanitizers): async-copy destinations hold poison until a waiter observes completion,
                        try_wait / test_wait fail once per wait, bulk stores read and land at their wait_group, wgmma
                        re-reads its shared operands at retire (ptxsim/README.md, "Strict asynchronous timing").
PTXSIM_WAIT_TIMEOUTS=1  when every live thread is blocked, those blocked in mbarrier try_wait / test_wait time out
                        (get false and go on) instead of the launch ending as a deadlock: a kernel that bounds its wait
                        loops then reaches its own trap (a loop without a bound spins to the budget or time limit).
"""
from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Config:
    trace: bool
    budget: int
    max_lanes: int
    time_limit: float = 60.0
    max_call_depth: int = 256
    max_global: int = 2 << 30
    strict_async: bool = False
    wait_timeouts: bool = False


def _read() -> Config:
    return Config(
        trace=os.environ.get("PTXSIM_TRACE", "0") not in ("", "0"),
        budget=int(float(os.environ.get("PTXSIM_BUDGET", "5e8"))),
        max_lanes=int(os.environ.get("PTXSIM_MAX_LANES", "32768")),
        time_limit=float(os.environ.get("PTXSIM_TIME_LIMIT", "60")),
        max_call_depth=int(os.environ.get("PTXSIM_MAX_CALL_DEPTH", "256")),
        max_global=int(float(os.environ.get("PTXSIM_MAX_GLOBAL", str(2 << 30)))),
        strict_async=os.environ.get("PTXSIM_STRICT_ASYNC", "0") not in ("", "0"),
        wait_timeouts=os.environ.get("PTXSIM_WAIT_TIMEOUTS", "0") not in ("", "0"),
    )


CONFIG = _read()

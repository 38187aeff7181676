"""Sweep progress with an estimate of the time left, from each row's predicted cost.

Rows differ by five orders of magnitude (a tiny gate against a DeepSeek-V3 layer), so `[i/N]` says little about
what is left. Each row gets a predicted cost (bytes it moves plus the GEMM work it computes, in arbitrary units);
seconds per unit are learned from the rows finished so far, per class of row (GEMM rows, whose cost is mostly FLOPs,
and the others, mostly bytes: one rate for both put dsv3-prefill's first gate rows at ~70 h for a ~1 h run), and the
time left is each class's rate times its cost left (a class with no finished row yet takes the rate of all rows),
divided by the rows running at once (Dask workers).
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

FLOP_WEIGHT = 1 / 8  # cost units per FLOP against one per byte: the simulator runs ~8 FLOPs in the time of a byte
# Fixed work of every row (drawing inputs, parsing PTX, the check, static facts, the model): ~0.7 s at dsv3-decode on
# two cores, where the rest runs at ~2-5e-8 s a unit (measured: gate 0.8 s, sampled up GEMM 21 s for 1e9 units).
ROW_OVERHEAD = 2e7
GEMM_STAGES = {"grouped_gemm": ("gemm",), "grouped_gemm_fp8": ("gemm",), "layer": ("up", "down")}


def _gemm_fraction(p, n: int, sample) -> float:
    """Share of a GEMM launch's work `sample` (harness.sampling.SamplePolicy) simulates: the routing blocks of its
    stratified sample's runs of one expert (about rows_per_wave each; the tail's rows exit at once and cost next to
    nothing) over the routing blocks; grid ~ (n / 64, n_blocks)."""
    if sample is None:
        return 1.0
    policy = sample.for_preset(p)
    if policy.sampled_fraction((max(1, n // 64), p.n_blocks, 1)) >= 1.0:
        return 1.0
    return min(1.0, policy.waves * policy.rows_per_wave / p.n_blocks)


def predicted_cost(kernel: str, preset, variant: str | None, sample=None) -> float:
    """A row's predicted cost: a fixed ROW_OVERHEAD, bytes in and out, and weighted worst-case GEMM FLOPs (rows padded
    to P_max), the GEMM launches' share scaled by the fraction of their CTAs `sample` simulates (a sampled dsv3 GEMM
    touches a few routing blocks of its 14 GiB of weights, not all of them)."""
    from contract.errors import UnknownNameError
    from contract.footprint import tensor_bytes
    from contract.presets import get_preset

    p = get_preset(preset)
    try:
        ins, outs = tensor_bytes(kernel, p, variant or "up")
    except UnknownNameError:
        return 1.0  # a kernel without a size table: one unit (the estimate then learns from the others)
    moved = float(sum(ins.values()) + sum(outs.values()))
    if kernel not in GEMM_STAGES:
        return ROW_OVERHEAD + moved
    up, down = (2 * p.I, p.H), (p.H, p.I)  # (n, kd)
    gemms = [up, down] if kernel == "layer" else [up if variant in (None, "up") else down]
    cost = 0.0 if kernel != "layer" else moved - float(ins["W1"] + ins["W2"])  # the layer's other stages run whole
    for n, kd in gemms:
        weights = p.E * n * kd * (1 if kernel == "grouped_gemm_fp8" else 2)
        work = weights + (moved - weights if kernel != "layer" else 0.0) + FLOP_WEIGHT * 2 * p.P_max * n * kd
        cost += work * _gemm_fraction(p, n, sample)
    return ROW_OVERHEAD + float(cost)


def format_seconds(seconds: float) -> str:
    """"42s", "3m05s", "1h02m"."""
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def row_class(kernel: str) -> str:
    """The class whose rate predicts a row: "gemm" (cost mostly FLOPs) or "other" (mostly bytes)."""
    return "gemm" if kernel in GEMM_STAGES else "other"


@dataclass
class Progress:
    """Prints `[i/N] key: text (~T left)` lines; `costs` maps every row key of the sweep to its predicted cost,
    `classes` (optional) every key to its row class (row_class), `concurrency` the rows that run at once."""

    costs: dict[str, float]
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    clock: Callable[[], float] = time.perf_counter
    step: int = 0
    classes: dict[str, str] = field(default_factory=dict)
    concurrency: int = 1
    _done: dict[str, list[float]] = field(default_factory=dict)  # class -> [cost, seconds] of finished rows
    _left: dict[str, float] = field(default_factory=dict)

    def __post_init__(self):
        self._left = dict(self.costs)
        self.t0 = self.clock()

    @property
    def total(self) -> int:
        return len(self.costs)

    def seconds_left(self) -> float | None:
        """Per class, learned seconds per cost unit x the cost of its rows not finished (the rate of all finished
        rows where the class has none yet), over `concurrency`; None before any row ran."""
        cost = sum(c for c, _ in self._done.values())
        seconds = sum(s for _, s in self._done.values())
        if cost <= 0 or seconds <= 0:
            return None
        rates = {name: s / c for name, (c, s) in self._done.items() if c > 0 and s > 0}
        left = sum(rates.get(self.classes.get(key, ""), seconds / cost) * c for key, c in self._left.items())
        return left / max(1, self.concurrency)

    def finished(self, key: str, seconds: float | None) -> None:
        """A row finished after `seconds` of work (None: it did not run, e.g. done in a resumed run or skipped)."""
        cost = self._left.pop(key, 0.0)
        if seconds is not None and seconds > 0:
            done = self._done.setdefault(self.classes.get(key, ""), [0.0, 0.0])
            done[0] += cost
            done[1] += seconds

    def _line(self, step: int, key: str, text: str) -> None:
        left = self.seconds_left()
        eta = f" (~{format_seconds(left)} left)" if left is not None and self._left else ""
        print(f"[{step}/{self.total}] {key}: {text}{eta}", file=self.stream, flush=True)

    def start(self, key: str, text: str) -> None:
        """The line before a row runs (its number is the next one)."""
        self._line(self.step + 1, key, text)

    def end(self, key: str, text: str, seconds: float | None) -> None:
        """The line after a row: counts it, learns the rate from `seconds` (None when it did not run)."""
        self.step += 1
        self.finished(key, seconds)
        self._line(self.step, key, text)

    def note(self, text: str) -> None:
        """An indented extra line under the last row (e.g. a sanitizer finding)."""
        print(f"    {text}", file=self.stream, flush=True)

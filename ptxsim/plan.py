"""LaunchPlan: which part of a launch ptxsim simulates, as one value (launch's `plan`), for callers that work out
their sampling apart from the launch (the harness's sampling policy builds one per launch)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LaunchPlan:
    """How ptxsim runs one launch: every CTA (the default), a systematic sample (`sample_ctas` of waves of
    `wave_ctas`), strata (`sample_ranges`: (first CTA, end CTA, weight)), or a persistent launch's item windows as
    phases (`phases`: each phase's parameters, with `phase_waves`, `phase_grids`, `phase_weights` and `represents`,
    the share of the work they run; `items`, the items they run); `budget` raises the runaway budget for a sampled
    launch. The fields mean what launch's keywords of the same names mean (an empty tuple: the keyword's None)."""

    sample_ctas: int | None = None
    wave_ctas: int | None = None
    sample_ranges: tuple[tuple[int, int, float], ...] = ()
    phases: tuple[tuple, ...] = ()
    phase_waves: tuple[int, ...] = ()
    phase_grids: tuple[tuple[int, int, int], ...] = ()
    phase_weights: tuple[float, ...] = ()
    represents: float = 1.0
    items: int = 0  # items the phases run
    budget: int | None = None

    @property
    def whole(self) -> bool:
        """Every CTA runs."""
        return self.sample_ctas is None and not self.sample_ranges and not self.phases

    def simulated_ctas(self, grid: tuple[int, int, int]) -> int:
        """CTAs of `grid` this plan simulates (a phased plan: the items it runs)."""
        if self.phases:
            return self.items
        if self.sample_ranges:
            return sum(b - a for a, b, _ in self.sample_ranges)
        return self.sample_ctas if self.sample_ctas is not None else grid[0] * grid[1] * grid[2]

    def ptxsim_options(self) -> dict:
        """The plan as launch keywords, every field that is set (launch(plan=p) runs launch(**p.ptxsim_options());
        {} for a whole launch without a wave size). launch checks how they combine."""
        out: dict = {name: getattr(self, name) for name in ("sample_ctas", "wave_ctas", "budget")
                     if getattr(self, name) is not None}
        out.update({name: list(getattr(self, name)) for name in _SEQUENCES if getattr(self, name)})
        if self.phases or self.represents != 1.0:
            out["represents"] = self.represents
        return out


_SEQUENCES = ("sample_ranges", "phases", "phase_waves", "phase_grids", "phase_weights")
PLAN_KEYWORDS = ("sample_ctas", "wave_ctas", "budget", *_SEQUENCES, "represents")  # launch's keywords a plan sets

WHOLE = LaunchPlan()

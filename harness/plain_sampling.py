"""Sampling a plain grid (a user's kernel: no LiveRows, no WorkItems) so that its DRAM traffic keeps L2 reuse.

ptxsim's systematic sample (`sample_ctas`) simulates waves spread over the grid, each with the L2 as if cold, and
scales their counters by 1 / represents: data every wave shares (a GEMM's B panel) is read from DRAM once per
sampled wave and extrapolated to every wave (a tiled SGEMM read 8.5x the full run's DRAM bytes). WarmWaves simulates
the first wave, counted once (where the full run reads the shared data from DRAM), then `waves - 1` waves spread
over the rest, each standing for its share of the remaining CTAs and simulated after the first, so the L2 model
carries what earlier waves loaded (aged by the waves skipped between them, ptxsim.model.l2): ptxsim `sample_ranges`.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.sampling import WHOLE, LaunchPlan

DEFAULT_WAVE_CTAS = 132  # one CTA per SM of an H200 when the launch's own wave is unknown


@dataclass(frozen=True)
class WarmWaves:
    """The sample policy (harness.backends.sim.SimBackend.sample) of plain grids: the first wave plus `waves - 1`
    spread ones; launches of at most `waves` waves run whole. Grids that declare rows or items run whole too."""

    waves: int

    def launch_plan(self, meaning, grid: tuple[int, int, int], row_experts=None, name: str = "launch",
                    wave_ctas: int | None = None) -> LaunchPlan:
        ctas = grid[0] * grid[1] * grid[2]
        width = int(wave_ctas or DEFAULT_WAVE_CTAS)
        full_waves = ctas // width
        if meaning != "plain" or self.waves < 2 or full_waves <= self.waves:
            return WHOLE
        later = self.waves - 1
        rest = ctas - width
        # NOTE: full waves only (the last, partial one is not typical), spread evenly over waves 1..full_waves-1
        picks = sorted({1 + round((i + 0.5) * (full_waves - 1) / later - 0.5) for i in range(later)})
        weight = rest / (len(picks) * width)
        ranges = ((0, width, 1.0), *((w * width, (w + 1) * width, weight) for w in picks))
        return LaunchPlan(sample_ranges=ranges, wave_ctas=width)

    def work_windows(self, items) -> tuple:
        return ()  # a persistent kernel's items: run whole

    def stratified_windows(self, items, experts) -> tuple:
        return ()

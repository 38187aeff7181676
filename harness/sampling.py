"""Which launches a sim row simulates in part (ptxsim's sampled simulation), chosen per launch from its grid.

`--sample auto|off|N`. A grouped GEMM at DeepSeek-V3's shapes is ~20k CTAs of a K=7168 loop: hours whole on two
cores. So a big tensor-core launch (a launch whose name says GEMM, with more than `min_ctas` CTAs) simulates N waves,
the middle wave of each of N equal strata of its grid (ptxsim's systematic wave sampling), and the counters are
extrapolated; every other launch runs whole, so tiny/small rows and the elementwise kernels are checked on every
element. auto: N = AUTO_WAVES; off: every CTA of every launch.

NOTE: every GEMM path launches grid (column tiles, row blocks): a grid row is one routing block (BM rows of one
expert) times every column tile, so a sampled row yields whole output rows. A wave (the sampled unit, and the L2
model's: ptxsim.model.l2) is round(n_blocks / E) grid rows, the routing blocks of about one expert, whatever the
column tile: so the up and down GEMMs of the layer (same row blocks) sample the same routing blocks and their chain
through swiglu stays checkable, and an expert's weights are read once per wave. The device's own resident wave
(blocks per SM x SMs) differs; the DRAM bytes this extrapolates stay within 1.5x of the minimum (tests).

A persistent GEMM (PTX FP8 rungs 4 and 5: one CTA per SM looping over (token tile, N tile) items) has no grid rows; it
passes its item range as a contract.device.WorkItems, and `work_windows` picks the items of the same routing blocks
(widened to whole rung-5 pairs), which the sim backend runs as ptxsim phases, each window on one CTA (cluster) an item
as the device runs consecutive items at once. Not a few whole CTAs: a CTA's items (c, c + grid, ...) share no weight
tile, so a few CTAs extrapolate one weight-tile read per item (tests/ptx_impl/test_gemm_fp8_sampled.py); a window's
items share their expert's weight tiles and their token tiles as the grid's concurrent items do. A persistent kernel
without WorkItems is still refused where it would be sampled (TooSlowToSimulate).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from harness.errors import InputError

# waves (strata) per sampled launch under auto. NOTE: a grouped GEMM's grid ends in row blocks past total_padded whose
# CTAs exit at once (13 % of small's, 42 % of dsv3-decode's): ptxsim takes the middle wave of equal strata, so one
# wave (always live) extrapolates 2.4x the modelled time at dsv3-decode; six strata put the dead tail's share in the
# sample within a sixth (small: -2 % against the full run; 4 waves: -12 %).
AUTO_WAVES = 6
AUTO_MIN_CTAS = 4096  # launches up to this many CTAs run whole (small's GEMMs are 760 CTAs; dsv3-decode's 19,456)


@dataclass(frozen=True)
class SamplePolicy:
    """waves: waves simulated per sampled launch, one from each of that many equal strata of the grid (None: sampling
    off); rows_per_wave: grid rows per wave (SamplePolicy.for_preset: the routing blocks per expert); min_ctas:
    launches up to this size run whole; text: the option as given ("auto", "off", "4")."""

    waves: int | None
    min_ctas: int = AUTO_MIN_CTAS
    text: str = "auto"
    rows_per_wave: int = 1
    routing_blocks: int = 0  # the preset's routing blocks (SamplePolicy.for_preset); 0 = unknown

    @property
    def off(self) -> bool:
        return self.waves is None

    def for_preset(self, preset) -> SamplePolicy:
        """This policy with waves of round(n_blocks / E) grid rows: an expert's routing blocks are consecutive, so a
        wave reads its weights about once, as the device's resident CTAs do (one grid row per wave would read them
        once per block and extrapolate that: 2-3x the minimum bytes at small and dsv3-prefill)."""
        return replace(self, rows_per_wave=max(1, round(preset.n_blocks / preset.E)), routing_blocks=preset.n_blocks)

    def launch_options(self, name: str, grid: tuple[int, int, int]) -> dict:
        """ptxsim launch options ({} = every CTA; else sample_ctas and wave_ctas) of one launch."""
        ncta = grid[0] * grid[1] * grid[2]
        if self.waves is None or "gemm" not in name.lower():
            return {}
        if grid[1] * grid[2] == 1 and ncta < self.routing_blocks \
                and self.routing_blocks > self.min_ctas // 32:
            # NOTE: a persistent GEMM (one CTA per SM, each looping over (row block, column tile) items) has no grid
            # rows to sample, and each CTA's loop spans the whole problem: at DeepSeek-V3's sizes that is hours. One
            # that passes its item range as a WorkItems is sampled by work_windows instead (the sim backend asks
            # that first); this is a persistent kernel that does not
            from harness.errors import TooSlowToSimulate

            raise TooSlowToSimulate(
                f"{name}: a persistent GEMM launch ({ncta} CTAs looping over the tiles of {self.routing_blocks} "
                f"routing blocks) without a WorkItems parameter cannot be sampled (neither by grid rows nor by item "
                f"windows), and simulating it whole at this size takes hours: skipped; run it on a GPU (--backend "
                f"gpu), at a smaller preset (tiny, small), or whole with --sample off")
        if ncta <= self.min_ctas:
            return {}
        rows = self.waves * self.rows_per_wave
        if rows >= grid[1] * grid[2]:
            return {}
        return {"sample_ctas": grid[0] * rows, "wave_ctas": grid[0] * self.rows_per_wave}

    def work_windows(self, name: str, items) -> tuple[tuple[int, int, int], ...]:
        """The item windows a persistent launch with `items` (contract.device.WorkItems) simulates, as (wave, item
        begin, item end), ascending; () = every item (sampling off, not a GEMM, or `items.count` <= min_ctas).

        A window is the items of the routing blocks grid-row sampling would simulate for the same preset (the middle
        wave of each of `waves` equal strata of the blocks, `rows_per_wave` blocks a wave), widened to whole groups
        of items (WorkItems.blocks_per_group) and not overlapping; `wave` is its index among those waves, for the L2
        model's ageing across the gaps. Each window runs on the whole persistent grid, as consecutive items do.
        """
        from ptxsim.launch import plan_waves

        if self.waves is None or "gemm" not in name.lower() or items.count <= self.min_ctas:
            return ()
        rows = self.rows_per_wave
        plan = plan_waves(items.blocks, self.waves * rows, rows)
        if len(plan.waves) == plan.total_waves:
            return ()
        windows: list[tuple[int, int, int]] = []
        for wave in plan.waves:
            begin, end = items.items_of(wave * rows, min(items.blocks, (wave + 1) * rows))
            begin = max(begin, windows[-1][2]) if windows else begin  # a widened window may reach into the last
            if end > begin:
                windows.append((int(wave), begin, end))
        if sum(end - begin for _, begin, end in windows) >= items.count:
            return ()
        return tuple(windows)

    def sampled_fraction(self, grid: tuple[int, int, int], name: str = "gemm", items=None) -> float:
        """The fraction of `grid`'s CTAs a launch named `name` simulates under this policy; for a persistent launch
        with `items` (contract.device.WorkItems), the fraction of its items."""
        from harness.errors import TooSlowToSimulate

        if items is not None:
            windows = self.work_windows(name, items)
            return 1.0 if not windows else sum(end - begin for _, begin, end in windows) / items.count
        try:
            opts = self.launch_options(name, grid)
        except TooSlowToSimulate:
            return 0.0
        return 1.0 if not opts else min(1.0, opts["sample_ctas"] / (grid[0] * grid[1] * grid[2]))


def parse_sample(value: str | int | None) -> SamplePolicy:
    """--sample as a SamplePolicy: "auto" (or None), "off", or a positive number of waves per sampled launch.

    Raises:
        InputError: naming the value and what is expected.
    """
    text = "auto" if value is None else str(value).strip().lower()
    if text == "auto":
        return SamplePolicy(AUTO_WAVES, AUTO_MIN_CTAS, text="auto")
    if text == "off":
        return SamplePolicy(None, text="off")
    try:
        waves = int(text)
    except ValueError:
        waves = 0
    if waves < 1:
        raise InputError(f"--sample {value!r}: expected auto, off, or a positive number of waves (each the routing "
                         f"blocks of about one expert) every big GEMM launch simulates")
    return SamplePolicy(waves, AUTO_MIN_CTAS, text=str(waves))

"""Which launches a sim row simulates in part (ptxsim's sampled simulation), chosen per launch from its grid.

`--sample auto|off|N`. A grouped GEMM at DeepSeek-V3's shapes is ~20k CTAs of a K=7168 loop: hours whole on two
cores. So a big tensor-core launch (a launch whose name says GEMM, with more than `min_ctas` CTAs) simulates a few
waves and its counters are extrapolated; every other launch runs whole, so tiny/small rows and the elementwise kernels
are checked on every element. auto: AUTO_WAVES; off: every CTA of every launch.

NOTE: every GEMM path launches grid (column tiles, row blocks): a grid row is one routing block (BM rows of one
expert) times every column tile, so a sampled row yields whole output rows. A wave (the sampled unit, and the L2
model's: ptxsim.model.l2) is round(n_blocks / E) grid rows, the routing blocks of about one expert, whatever the
column tile: so the up and down GEMMs of the layer (same row blocks) sample the same routing blocks and their chain
through swiglu stays checkable, and an expert's weights are read once per wave. The device's own resident wave
(blocks per SM x SMs) differs; the DRAM bytes this extrapolates stay within 1.5x of the minimum (tests).

Strata. A grouped GEMM's grid ends in routing blocks past total_padded whose CTAs exit at once (13 % of small's, 42 %
of dsv3-decode's, 17 % of dsv3-prefill's). Every path passes total_padded as a contract.device.LiveRows, which the
sim backend reads at launch, so the live rows and that dead tail are sampled as separate strata (ptxsim's
`sample_waves`, each wave weighted by the CTAs of its stratum): `waves` middle waves of equal parts of the live rows,
the wave that straddles the boundary whole (weight 1), and one wave of the tail standing for all of it. Every
stratum's share is then exact, so a few live waves suffice: the live waves of a grouped GEMM do the same work (one
block of one expert each). A launch without a LiveRows falls back to systematic sampling, the middle wave of each of
`unmarked_waves` equal strata of the whole grid, which puts the tail's share in the sample only to within one stratum
(six: -2 % at small; four: -12 %; one, always live, extrapolated 2.4x the modelled time at dsv3-decode).

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

# live waves per sampled launch under auto (plus the boundary wave and one of the dead tail: module docstring)
AUTO_WAVES = 2
# equal strata of the whole grid for a launch whose live rows are unknown (no LiveRows): six put the dead tail's share
# in the sample within a sixth (small: -2 % against the full run; 4 waves: -12 %)
AUTO_UNMARKED_WAVES = 6
AUTO_MIN_CTAS = 4096  # launches up to this many CTAs run whole (small's GEMMs are 760 CTAs; dsv3-decode's 19,456)


@dataclass(frozen=True)
class SamplePolicy:
    """waves: live waves simulated per sampled launch (None: sampling off); unmarked_waves: equal strata of the whole
    grid of a launch without a LiveRows (0: `waves`); rows_per_wave: grid rows per wave (SamplePolicy.for_preset: the
    routing blocks per expert); min_ctas: launches up to this size run whole; text: the option as given ("auto",
    "off", "4")."""

    waves: int | None
    min_ctas: int = AUTO_MIN_CTAS
    text: str = "auto"
    rows_per_wave: int = 1
    routing_blocks: int = 0  # the preset's routing blocks (SamplePolicy.for_preset); 0 = unknown
    unmarked_waves: int = 0

    @property
    def off(self) -> bool:
        return self.waves is None

    def for_preset(self, preset) -> SamplePolicy:
        """This policy with waves of round(n_blocks / E) grid rows: an expert's routing blocks are consecutive, so a
        wave reads its weights about once, as the device's resident CTAs do (one grid row per wave would read them
        once per block and extrapolate that: 2-3x the minimum bytes at small and dsv3-prefill)."""
        return replace(self, rows_per_wave=max(1, round(preset.n_blocks / preset.E)), routing_blocks=preset.n_blocks)

    def launch_options(self, name: str, grid: tuple[int, int, int], live_rows: int | None = None) -> dict:
        """ptxsim launch options of one launch: {} = every CTA; with `live_rows` (the grid rows below total_padded,
        read from the launch's LiveRows) a stratified sample (sample_waves, wave_ctas); else sample_ctas and
        wave_ctas (systematic)."""
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
        if live_rows is not None:
            return self._strata(grid, live_rows)
        rows = (self.unmarked_waves or self.waves) * self.rows_per_wave
        if rows >= grid[1] * grid[2]:
            return {}
        return {"sample_ctas": grid[0] * rows, "wave_ctas": grid[0] * self.rows_per_wave}

    def _strata(self, grid: tuple[int, int, int], live_rows: int) -> dict:
        """The stratified sample of a grid whose rows from `live_rows` on exit at once: `waves` middle waves of equal
        parts of the wholly live waves, the wave straddling the boundary whole, one middle wave of the tail; each
        weighted by the CTAs of its stratum over the CTAs simulated in it. {} when that would be every wave."""
        width, rows, per = grid[0], grid[1] * grid[2], self.rows_per_wave
        total = -(-rows // per)
        live = max(0, min(rows, int(live_rows)))
        full, straddle = live // per, live % per != 0
        picks: dict[int, float] = {}
        if full:
            chosen = sorted({int((i + 0.5) * full / min(self.waves, full)) for i in range(min(self.waves, full))})
            picks.update(dict.fromkeys(chosen, full / len(chosen)))
        if straddle:
            picks[full] = 1.0
        first_dead = full + straddle
        if first_dead < total:
            wave = (first_dead + total - 1) // 2
            picks[wave] = (rows - first_dead * per) / (min(rows, (wave + 1) * per) - wave * per)
        if len(picks) == total:
            return {}
        return {"sample_waves": picks, "wave_ctas": width * per}

    def simulated_ctas(self, options: dict, grid: tuple[int, int, int]) -> int:
        """CTAs a launch with ptxsim `options` (launch_options) simulates."""
        if "sample_waves" in options:
            wave, ncta = options["wave_ctas"], grid[0] * grid[1] * grid[2]
            return sum(min(ncta, (w + 1) * wave) - w * wave for w in options["sample_waves"])
        return options.get("sample_ctas", grid[0] * grid[1] * grid[2])

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
        # NOTE: the items' routing blocks past total_padded are not known here (a WorkItems has no LiveRows), so the
        # windows are systematic: equal strata of every block, as a launch without LiveRows
        plan = plan_waves(items.blocks, (self.unmarked_waves or self.waves) * rows, rows)
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

    def stratified_windows(self, name: str, items, live_blocks: int) -> tuple[tuple[int, int, int, float], ...]:
        """work_windows for a persistent launch whose routing blocks from `live_blocks` on are past total_padded (its
        LiveRows): (wave, item begin, item end, weight), ascending; () = every item.

        Strata of items, as launch_options' of grid rows: the groups wholly inside the wholly live waves, sampled by
        the windows of `waves` middle waves (the blocks grid-row sampling picks, widened to whole groups and clipped
        to the stratum); the groups from there to the last live block, one window of weight 1; the groups wholly past
        it, one middle window. Each window weighs its stratum's items over the items its stratum's windows run.
        """
        if self.waves is None or "gemm" not in name.lower() or items.count <= self.min_ctas:
            return ()
        rows, group, per = self.rows_per_wave, items.blocks_per_group, items.items_per_group
        live = max(0, min(items.blocks, int(live_blocks)))
        full = live // rows

        def floor_cut(block: int) -> int:  # the first item of the group holding `block`
            return min(items.count, block // group * per)

        def ceil_cut(block: int) -> int:  # the first item of the first group starting at or after `block`
            return min(items.count, -(-block // group) * per)

        strata = []  # (first item, end item, chosen waves)
        chosen = sorted({int((i + 0.5) * full / min(self.waves, full)) for i in range(min(self.waves, full))}) \
            if full else []
        strata.append((0, floor_cut(full * rows), chosen))
        strata.append((floor_cut(full * rows), ceil_cut(live), None))  # the boundary: whole
        first_dead = -(-ceil_cut(live) // per) * group  # first block of the first wholly dead group
        strata.append((ceil_cut(live), items.count, [(first_dead + items.blocks - 1) // 2 // rows]))
        windows: list[tuple[int, int, int, float]] = []
        for lo, hi, waves in strata:
            if hi <= lo:
                continue
            picked = []
            for wave in ([lo // per * group // rows] if waves is None else waves):
                begin, end = (lo, hi) if waves is None else items.items_of(wave * rows,
                                                                           min(items.blocks, (wave + 1) * rows))
                begin = max(begin, lo, picked[-1][2] if picked else lo, windows[-1][2] if windows else 0)
                end = min(end, hi)
                if end > begin:
                    wave = max(int(wave), windows[-1][0] + 1 if windows else 0, picked[-1][0] + 1 if picked else 0)
                    picked.append((wave, begin, end))
            if not picked:  # every chosen window clipped away (a stratum of a group or two): its first group
                picked.append((max(lo // per * group // rows, windows[-1][0] + 1 if windows else 0), lo,
                               min(hi, lo + per)))
            ran = sum(end - begin for _, begin, end in picked)
            windows += [(wave, begin, end, (hi - lo) / ran) for wave, begin, end in picked]
        if sum(end - begin for _, begin, end, _ in windows) >= items.count:
            return ()
        return tuple(windows)

    def sampled_fraction(self, grid: tuple[int, int, int], name: str = "gemm", items=None,
                         live_rows: int | None = None) -> float:
        """The fraction of `grid`'s CTAs a launch named `name` (with `live_rows`, launch_options) simulates under this
        policy; for a persistent launch with `items` (contract.device.WorkItems), the fraction of its items."""
        from harness.errors import TooSlowToSimulate

        if items is not None:
            windows = self.work_windows(name, items) if live_rows is None else \
                self.stratified_windows(name, items, live_rows)
            return 1.0 if not windows else sum(w[2] - w[1] for w in windows) / items.count
        try:
            opts = self.launch_options(name, grid, live_rows)
        except TooSlowToSimulate:
            return 0.0
        return 1.0 if not opts else min(1.0, self.simulated_ctas(opts, grid) / (grid[0] * grid[1] * grid[2]))

    def live_blocks_bound(self) -> int | None:
        """The most routing blocks with work a sampled GEMM launch simulates (a bound for estimates made before the
        launch, which do not know total_padded): the live waves, the straddling wave, and the tail's wave (which may
        be live where the tail is short); a launch without LiveRows its equal strata. None when sampling is off."""
        if self.waves is None:
            return None
        return max(self.waves + 2, self.unmarked_waves or self.waves) * self.rows_per_wave


def parse_sample(value: str | int | None) -> SamplePolicy:
    """--sample as a SamplePolicy: "auto" (or None), "off", or a positive number of live waves per sampled launch
    (also the equal strata of a launch whose live rows are unknown).

    Raises:
        InputError: naming the value and what is expected.
    """
    text = "auto" if value is None else str(value).strip().lower()
    if text == "auto":
        return SamplePolicy(AUTO_WAVES, AUTO_MIN_CTAS, text="auto", unmarked_waves=AUTO_UNMARKED_WAVES)
    if text == "off":
        return SamplePolicy(None, text="off")
    try:
        waves = int(text)
    except ValueError:
        waves = 0
    if waves < 1:
        raise InputError(f"--sample {value!r}: expected auto, off, or a positive number of live waves (each the "
                         f"routing blocks of about one expert) every big GEMM launch simulates")
    return SamplePolicy(waves, AUTO_MIN_CTAS, text=str(waves))

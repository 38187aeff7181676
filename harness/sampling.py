"""Which launches a sim row simulates in part (ptxsim's sampled simulation), chosen per launch from its grid.

`--sample auto|off|N`. A grouped GEMM at DeepSeek-V3's shapes is ~20k CTAs of a K=7168 loop: hours whole on two
cores. So a big launch whose grid stands for routing blocks (its parameters declare it: a LiveRows for grid rows of
routing blocks, a WorkItems for a persistent kernel's items; contract.device.grid_meaning), with more than `min_ctas`
CTAs, simulates a few waves and its counters are extrapolated; every other launch (a plain grid) runs whole, so
tiny/small rows and the elementwise kernels are checked on every element. auto: AUTO_WAVES; off: every CTA of every
launch.

NOTE: every GEMM path launches grid (column tiles, row tiles): a grid row is BM rows of one routing block (or a
token tile of one) times every column tile, so a sampled row yields whole output rows. The sampled unit is a run of
one expert's grid rows (below), the same token rows on every path whatever its tiles, so the up and down GEMMs of the
layer sample the same routing blocks and their chain through swiglu stays checkable. Without a LiveRows, a wave is
round(n_blocks / E) grid rows (rows_per_wave: about one expert's). The device's own resident wave (blocks per SM x
SMs) differs; the DRAM bytes this extrapolates stay within 1.5x of the minimum (tests).

Strata. A grouped GEMM's grid rows are runs of one expert's routing blocks (each run reads that expert's weights),
then routing blocks past total_padded whose CTAs exit at once (13 % of small's, 42 % of dsv3-decode's, 17 % of
dsv3-prefill's). Every path passes total_padded as a contract.device.LiveRows carrying its block_expert, which the
sim backend reads at launch, so the live rows and that dead tail are sampled as separate strata (ptxsim's
`sample_ranges`, each range weighted by its stratum's CTAs over the CTAs simulated in it): `waves` whole runs of one
expert (the middles of equal parts of the runs) standing for every live row, and rows_per_wave rows from the middle of
the tail standing for it. Every stratum's share is exact and a sampled run reads its expert's weights once, as the
device's blocks of that expert do together, so two runs suffice: the live runs of a grouped GEMM do the same work per
block. (Waves of rows_per_wave rows cut experts: a 3-block wave at dsv3-prefill spans two experts' weights, which
extrapolated 1.9x the minimum DRAM bytes.) A launch without a LiveRows falls back to systematic sampling, the
middle wave of each of `unmarked_waves` equal strata of the whole grid, which puts the tail's share in the sample
only to within one stratum (six: -2 % at small; four: -12 %; one, always live, extrapolated 2.4x the modelled time
at dsv3-decode).

Long runs. Where every live run is at least LONG_RUN_GROUPS groups long (a GEMM shape's groups, DeepGEMM's table:
4 x 8192 rows are runs of 128 blocks), `waves` whole runs would be half the launch; each chosen run is then simulated
as its first group (cold weights) and the next (warm: the next L2 wave), weighted for every run's head and the other
blocks (_head_and_body). Routed presets' runs (1-21 blocks) never all are.

A persistent GEMM (PTX FP8 rungs 4 and 5: one CTA per SM looping over (token tile, N tile) items) has no grid rows; it
passes its item range as a contract.device.WorkItems, and `stratified_windows` picks the items of the same routing
blocks (rung 4), which the sim backend runs as ptxsim phases, each window on one CTA (cluster) an item as the device
runs consecutive items at once. A rung-5 item is a pair of blocks, so its windows must start and end on a pair: its
live windows are segments of whole runs with pair-aligned ends, chosen together (_aligned_segments) for about `waves`
experts at the mean blocks per expert (within RATIO_TOLERANCE), not the grid rows' runs grown to whole pairs (that
doubled them at dsv3-prefill, 14.6 blocks of 4.8 experts for ~6, and put their blocks per expert 0.65-1.54x the
mean, which the extrapolated weight bytes follow: 0.87x the minimum at small). Not a few whole CTAs: a CTA's items
(c, c + grid, ...) share no weight tile, so a few CTAs extrapolate one weight-tile read per item
(tests/ptx_impl/test_gemm_fp8_sampled.py); a window's items share their expert's weight tiles and their token tiles
as the grid's concurrent items do. A persistent kernel without WorkItems is still refused where it would be sampled
(TooSlowToSimulate).

Launches with neither (CUTLASS's: one launch per expert run, or one grouped persistent launch whose scheduler derives
its tiles from blockIdx and gridDim) mark themselves instead as a family member (contract.device.FamilyShare) or as
groups that can be launched apart (GroupSubsets); harness.family_sampling says which members the sim backend runs
under this policy (above min_ctas: one per problem shape) and what the others are charged as.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from contract.device import GridMeaning
from harness.errors import InputError
from ptxsim.plan import WHOLE, LaunchPlan

# runs of one expert's routing blocks per sampled launch under auto (plus the dead tail's middle: module docstring)
AUTO_WAVES = 2
# equal strata of the whole grid for a launch whose live rows are unknown (no LiveRows): six put the dead tail's share
# in the sample within a sixth (small: -2 % against the full run; 4 waves: -12 %)
AUTO_UNMARKED_WAVES = 6
# launches up to this many CTAs run whole (small's GEMMs are 760 CTAs; dsv3-decode's 19,456); a persistent launch's
# items count as their work (WorkItems.work_tiles: routing block x 128-column tiles), not one each
AUTO_MIN_CTAS = 4096
# aligned windows (align > 1: rung 5's pairs): the fewest experts whose blocks per expert are within this of the mean
# (one weight extrapolates both; module docstring), and the most experts a window of one part holds before it is
# only considered where its part has no smaller one
RATIO_TOLERANCE = 0.1
SEGMENT_EXPERTS = 3
# a launch whose every live run of one expert is at least this many groups (grid rows, or a persistent kernel's
# groups of `align` blocks) long samples each chosen run as its first group and the next (_head_and_body): a GEMM
# shape's groups (DeepGEMM's table: 4 x 8192 rows = runs of 128 blocks) would otherwise simulate `waves` whole experts
LONG_RUN_GROUPS = 4


class ItemWindow(NamedTuple):
    """Items [begin, end) of a persistent launch run as one ptxsim phase; `wave` its index for the L2 model's ageing
    (work_windows: systematic windows, each standing for the launch's share)."""

    wave: int
    begin: int
    end: int


class WeightedWindow(NamedTuple):
    """An ItemWindow of a stratified sample (stratified_windows): `weight` is its stratum's items over the items its
    windows run."""

    wave: int
    begin: int
    end: int
    weight: float


# LaunchPlan, the value this module builds per launch, is ptxsim's (ptxsim/plan.py): the sim backend passes it to
# ptxsim.launch(plan=...) as it is.


@dataclass(frozen=True)
class SamplePolicy:
    """waves: runs of one expert's blocks simulated per sampled launch (None: sampling off); unmarked_waves: equal
    strata of the whole grid of a launch without a LiveRows (0: `waves`); rows_per_wave: grid rows per wave, and the
    tail's rows sampled (SamplePolicy.for_preset: the routing blocks per expert); min_ctas: launches up to this size
    run whole; text: the option as given ("auto", "off", "4")."""

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

    def launch_plan(self, meaning: GridMeaning, grid: tuple[int, int, int], row_experts=None,
                    name: str = "launch", wave_ctas: int | None = None) -> LaunchPlan:
        """The LaunchPlan of one launch whose grid means `meaning` (contract.device.grid_meaning): WHOLE = every CTA
        (a plain grid always); with `row_experts` (each grid row's expert, -1 from the first row past total_padded
        on: read from the launch's LiveRows, harness.backends.sim) a stratified sample (sample_ranges, wave_ctas);
        else sample_ctas and wave_ctas (systematic). `name` is for messages only; `wave_ctas` (the launch's own
        wave on the model device) is for policies of plain grids (harness.plain_sampling), unused here."""
        ncta = grid[0] * grid[1] * grid[2]
        if self.waves is None or meaning != "rows":  # NOTE: "items" are sampled by work_windows, or run whole
            return WHOLE
        if grid[1] * grid[2] == 1 and ncta < self.routing_blocks \
                and self.routing_blocks > self.min_ctas // 32:
            # NOTE: a grid declared as routing-block rows that is one CTA per SM is a persistent GEMM in fact (each
            # CTA looping over (row block, column tile) items): it has no grid rows to sample, and each CTA's loop
            # spans the whole problem: at DeepSeek-V3's sizes that is hours. One that passes its item range as a
            # WorkItems is sampled by work_windows instead (the sim backend asks that first); this one does not
            from harness.errors import TooSlowToSimulate

            raise TooSlowToSimulate(
                f"{name}: a persistent GEMM launch ({ncta} CTAs looping over the tiles of {self.routing_blocks} "
                f"routing blocks) without a WorkItems parameter cannot be sampled (neither by grid rows nor by item "
                f"windows), and simulating it whole at this size takes hours: skipped; run it on a GPU (--backend "
                f"gpu), at a smaller preset (tiny, small), or whole with --sample off")
        if ncta <= self.min_ctas:
            return WHOLE
        if row_experts is not None:
            return self._strata(grid, row_experts)
        rows = (self.unmarked_waves or self.waves) * self.rows_per_wave
        if rows >= grid[1] * grid[2]:
            return WHOLE
        return LaunchPlan(sample_ctas=grid[0] * rows, wave_ctas=grid[0] * self.rows_per_wave)

    def _strata(self, grid: tuple[int, int, int], row_experts) -> LaunchPlan:
        """The stratified sample of a grid whose rows have experts `row_experts` (-1: past total_padded): `waves`
        runs of one expert's rows (the middles of equal parts of the runs), standing for every live row, and
        rows_per_wave rows from the middle of the tail, standing for it; WHOLE when that would be every row."""
        width, rows = grid[0], grid[1] * grid[2]
        picks = tuple((a * width, b * width, x) for a, b, x in self.row_strata(row_experts, rows))
        if sum(b - a for a, b, _ in picks) >= width * rows:
            return WHOLE
        return LaunchPlan(sample_ranges=picks, wave_ctas=width * self.rows_per_wave)

    def row_strata(self, experts, rows: int, align: int = 1) -> list[tuple[int, int, float]]:
        """(first row, end row, weight) of the stratified sample of `rows` rows (grid rows or routing blocks) whose
        experts are `experts` (-1 from the first row past total_padded on): `waves` runs of one expert (_balanced_runs),
        weighted by the live rows over the rows they hold, and the tail's middle rows_per_wave rows, by its rows over
        theirs.
        With `align` > 1 (a persistent kernel's items span `align` blocks), the live picks are instead segments of
        whole runs that start and end on a multiple of `align` (or at the last live row), chosen together for the
        mean blocks per expert (_aligned_segments): a window widened to whole items would otherwise take in one block
        of a neighbouring expert and read all its weights for that block."""
        experts = np.asarray(experts, np.int64).reshape(-1)[:rows]
        live = int(np.argmax(experts < 0)) if (experts < 0).any() else rows
        starts = [0] + [int(i) for i in np.flatnonzero(np.diff(experts[:live])) + 1]
        runs = [(a, b) for a, b in zip(starts, starts[1:] + [live], strict=True)] if live else []
        picks: list[tuple[int, int, float]] = []
        if runs and long_runs(runs, align):
            picks += _head_and_body(runs, min(self.waves or 1, len(runs)), live, align)
        elif runs:
            k = min(self.waves or 1, len(runs))
            chosen = _balanced_runs(runs, k, live) if align == 1 else _aligned_segments(runs, k, live, align)
            held = sum(b - a for a, b in chosen)
            picks += [(a, b, live / held) for a, b in chosen]
        if live < rows:
            first = max(live, (live + rows - self.rows_per_wave) // 2)
            end = min(rows, first + self.rows_per_wave)
            picks.append((first, end, (rows - live) / (end - first)))
        return picks

    def work_windows(self, items) -> tuple[ItemWindow, ...]:
        """The item windows a persistent launch with `items` (contract.device.WorkItems) simulates, as (wave, item
        begin, item end), ascending; () = every item (sampling off, or `items.work_tiles` <= min_ctas: the threshold
        counts work, not items).

        A window is the items of the routing blocks grid-row sampling would simulate for the same preset (the middle
        wave of each of `waves` equal strata of the blocks, `rows_per_wave` blocks a wave), widened to whole groups
        of items (WorkItems.blocks_per_group) and not overlapping; `wave` is its index among those waves, for the L2
        model's ageing across the gaps. Each window runs on the whole persistent grid, as consecutive items do.
        """
        from ptxsim.launch import plan_waves

        if self.waves is None or items.work_tiles <= self.min_ctas:
            return ()
        rows = self.rows_per_wave
        # NOTE: the items' routing blocks past total_padded are not known here (a WorkItems has no LiveRows), so the
        # windows are systematic: equal strata of every block, as a launch without LiveRows
        plan = plan_waves(items.blocks, (self.unmarked_waves or self.waves) * rows, rows)
        if len(plan.waves) == plan.total_waves:
            return ()
        windows: list[ItemWindow] = []
        for wave in plan.waves:
            begin, end = items.items_of(wave * rows, min(items.blocks, (wave + 1) * rows))
            begin = max(begin, windows[-1].end) if windows else begin  # a widened window may reach into the last
            if end > begin:
                windows.append(ItemWindow(int(wave), begin, end))
        if sum(end - begin for _, begin, end in windows) >= items.count:
            return ()
        return tuple(windows)

    def stratified_windows(self, items, block_experts) -> tuple[WeightedWindow, ...]:
        """work_windows for a persistent launch whose routing blocks have experts `block_experts` (-1 from the first
        block past total_padded on: its LiveRows): (wave, item begin, item end, weight), ascending; () = every item.

        The blocks row_strata picks (runs of one expert, the tail's middle blocks), as items widened to whole groups
        (WorkItems.blocks_per_group) and not overlapping; the live items (up to the first wholly dead group) and the
        tail's are the two strata. A live window weighs the live blocks over the live blocks the live windows run
        (its work, not its items: a group past the last live block holds dead blocks), a tail window the items left
        over the items the tail's windows run. `wave` is the window's first block over rows_per_wave, for the L2
        model's ageing.
        """
        if self.waves is None or items.work_tiles <= self.min_ctas:
            return ()
        experts = np.asarray(block_experts, np.int64).reshape(-1)[: items.blocks]
        live = int(np.argmax(experts < 0)) if (experts < 0).any() else items.blocks
        boundary = min(items.count, -(-live // items.blocks_per_group) * items.items_per_group)
        strata: dict[bool, list] = {True: [], False: []}  # live or tail -> [(wave, begin, end)]
        pick_weights: list[float] = []  # each live window's weight from row_strata (used for long runs)
        last = 0
        for first_block, end_block, weight in self.row_strata(experts, items.blocks, items.blocks_per_group):
            begin, end = items.items_of(first_block, end_block)
            is_live = first_block < live
            begin, end = max(begin, last, 0 if is_live else boundary), min(end, boundary if is_live else items.count)
            if end > begin:
                strata[is_live].append((first_block // self.rows_per_wave, begin, end))
                pick_weights += [weight] if is_live else []
                last = end
        if not strata[False] and boundary < items.count:  # a tail inside the chosen window's clipped-off group
            strata[False].append((boundary // items.items_per_group * items.blocks_per_group // self.rows_per_wave,
                                  boundary, min(items.count, boundary + items.items_per_group)))
        # NOTE: weights by work, not items: the live stratum is the `live` blocks, each window standing for them by
        # the live blocks it ran (a window widened to whole groups may hold dead blocks past `live`, which do no
        # work); the tail takes what is left of the items, so the weighted items still add up to the launch's
        per_block = items.items_per_group / items.blocks_per_group

        def live_blocks(begin: int, end: int) -> float:
            return max(0.0, min(end / per_block, float(live)) - begin / per_block)

        held_live = sum(live_blocks(b, e) for _, b, e in strata[True])
        live_weight = live / held_live if held_live > 0 else 1.0
        if not self._long(experts[:live], items.blocks_per_group):
            pick_weights = [live_weight] * len(strata[True])
        # NOTE: long runs' windows are whole live groups (heads and bodies, _head_and_body), so their weights in blocks
        # are their weights in items
        tail_held = sum(end - begin for _, begin, end in strata[False])
        tail_weight = 1.0
        if tail_held:
            stood_for = sum(x * (end - begin) for x, (_, begin, end) in zip(pick_weights, strata[True], strict=True))
            tail_weight = max(1.0, (items.count - stood_for) / tail_held)
        windows: list[WeightedWindow] = []
        for is_live, picked in strata.items():
            for n, (wave, begin, end) in enumerate(picked):
                wave = max(wave, windows[-1].wave + 1 if windows else 0)
                windows.append(WeightedWindow(wave, begin, end, pick_weights[n] if is_live else tail_weight))
        if sum(end - begin for _, begin, end, _ in windows) >= items.count:
            return ()
        return tuple(windows)

    @staticmethod
    def _long(live_experts, align: int) -> bool:
        """long_runs of the runs of one expert in `live_experts` (each live row's or block's expert)."""
        if not len(live_experts):
            return False
        starts = [0] + [int(i) for i in np.flatnonzero(np.diff(live_experts)) + 1]
        return long_runs(list(zip(starts, starts[1:] + [len(live_experts)], strict=True)), align)

    def sampled_fraction(self, grid: tuple[int, int, int], meaning: GridMeaning = "rows", items=None,
                         experts=None) -> float:
        """The fraction of `grid`'s CTAs a launch whose grid means `meaning` (with `experts` per grid row,
        launch_options) simulates under this policy; for a persistent launch with `items` (contract.device.WorkItems;
        `experts` per routing block), the fraction of its items."""
        from harness.errors import TooSlowToSimulate

        if items is not None:
            windows = self.work_windows(items) if experts is None else self.stratified_windows(items, experts)
            return 1.0 if not windows else sum(w[2] - w[1] for w in windows) / items.count
        try:
            plan = self.launch_plan(meaning, grid, experts)
        except TooSlowToSimulate:
            return 0.0
        return 1.0 if plan.whole else min(1.0, plan.simulated_ctas(grid) / (grid[0] * grid[1] * grid[2]))

    def live_blocks_bound(self) -> int | None:
        """A bound, in routing blocks, on the weights a sampled GEMM launch touches, for estimates made before the
        launch (which do not know the routing): `waves` experts' runs with room for a long run, the tail's rows; a
        launch without LiveRows its equal strata. None when sampling is off. NOTE: a run is one expert's weights
        however many blocks it has, which is what the memory estimate's blocks stand for."""
        if self.waves is None:
            return None
        return max(self.waves + 2, self.unmarked_waves or self.waves) * self.rows_per_wave


def long_runs(runs: list[tuple[int, int]], align: int = 1) -> bool:
    """True when every run (first, end) starts on a multiple of `align` and holds at least LONG_RUN_GROUPS groups of
    `align` rows: the runs _head_and_body samples."""
    return all(a % align == 0 and b - a >= LONG_RUN_GROUPS * align for a, b in runs)


def _head_and_body(runs: list[tuple[int, int]], k: int, live: int, align: int) -> list[tuple[int, int, float]]:
    """(first, end, weight) of a sample of long runs (long_runs): of each of k runs (_balanced_runs' choice), its
    first group of `align` rows (the head) and the group after it (the body). The heads stand for every run's head
    (weight len(runs) / k), the bodies for every other live row ((live - len(runs) x align) / (k x align)).

    NOTE: why two groups stand for a run. Every routing block of one expert's run does the same work on the same
    weights (same K, same column tiles: the instruction counts per block are equal); what differs is where the
    weights come from. The head reads them from DRAM, cold, as the device's first wave of the expert does; the body
    runs right after it (the next L2 wave, ptxsim.model.l2), so it finds them in L2 when the head's footprint fits,
    as the device's later waves of that expert do. So the extrapolated DRAM bytes are the expert's weights once plus
    every block's activations and outputs, as for the whole run; a body taken from the middle of the run would be
    aged cold by the gap (the L2 model ages a gap by the mean footprint as if the skipped waves touched other data)
    and read the weights once per body. The whole-run sample (waves whole experts) simulated half the launch at 4 x
    8192 rows, ~2,000 CTAs of a K = 7168 loop."""
    chosen = _balanced_runs(runs, k, live)
    head_weight = len(runs) / k
    body_weight = (live - len(runs) * align) / (k * align)
    picks: list[tuple[int, int, float]] = []
    for a, _ in chosen:
        picks += [(a, a + align, head_weight), (a + align, a + 2 * align, body_weight)]
    return picks


def _balanced_runs(runs: list[tuple[int, int]], k: int, live: int) -> list[tuple[int, int]]:
    """k runs, one near the middle of each of k equal parts of `runs`, whose lengths add up to about k times the mean
    run length. NOTE: one weight extrapolates both what scales with rows (instructions, activations) and what scales
    with experts (weights, read once a run); they agree only if the sampled runs have the mean length. Runs' lengths
    vary (1-6 blocks at dsv3-prefill, balanced): the plain middles picked long runs there and extrapolated 0.58x the
    minimum DRAM bytes. So the lengths are fixed first (as even as the total allows) and each part takes its run of
    that length nearest its middle (else the nearest length, nearer the middle first)."""
    total = max(k, round(k * live / len(runs)))
    wanted = [total // k + (j < total % k) for j in range(k)]
    chosen: set[int] = set()
    for j in range(k):
        middle = int((j + 0.5) * len(runs) / k)

        def distance(i: int, m: int = middle, w: int = wanted[j]) -> tuple[int, int, int]:
            return abs(runs[i][1] - runs[i][0] - w), abs(i - m), i

        chosen.add(min((i for i in range(len(runs)) if i not in chosen), key=distance))
    return [runs[i] for i in sorted(chosen)]


def _aligned_segments(runs: list[tuple[int, int]], k: int, live: int, align: int) -> list[tuple[int, int]]:
    """Up to k (first, end) segments of whole runs, each starting and ending on a multiple of `align` (or at `live`),
    at most one inside each of k equal parts of `runs`, that together hold the fewest experts (at least k, else as
    near k as possible) whose blocks per expert are within RATIO_TOLERANCE of the mean (else the nearest ratio);
    among those, the segments nearest their parts' middles, a part left out counting as farther than any.

    NOTE: as in _balanced_runs, one weight extrapolates rows and experts, so the picks' blocks over experts must be
    the mean run length. Growing each balanced run to aligned ends (the former way) took in a neighbouring run or two
    whole: at dsv3-prefill (runs of 1-21 blocks, about half of them ending on an odd block) two runs became 14.6
    blocks of 4.8 experts on average, 2.4x the mean run length a wave, at 0.65-1.54x the mean blocks per expert over
    ten routings (extrapolated DRAM bytes 1.24x the minimum there, 0.87x at small). Aligned segments come in few
    sizes (a one-expert one is an even-length run starting on an even block), so the parts are chosen together: a
    dynamic programme over the parts keeps, for each (experts, blocks) total, the picks nearest the middles. A part
    may be left out: where every aligned segment holds two runs (runs all of 3 blocks), one 2-expert segment stands
    for `waves` = 2, not two of them."""
    bounds = [a for a, _ in runs] + [live]  # bounds[i]: the first block of run i; bounds[len(runs)] = live
    cuts = [i for i, x in enumerate(bounds) if x % align == 0]  # run indices a segment may start/end at
    # NOTE: a segment ending at an unaligned last live block widens (stratified_windows) to a group whose blocks past
    # it are dead: its items are not live work, and a window of one live block in 8 (dsv3-decode, BM = 16, rung 6)
    # was weighted as 8, putting the up GEMM at 0.13x its live blocks and 5x the DRAM's peak. It is a cut only where
    # no other segment can end (the few-run fallback below)
    if live % align and len(cuts) < 2:
        cuts.append(len(runs))
    states: dict[tuple[int, int], tuple[int, tuple]] = {(0, 0): (0, ())}  # (experts, blocks) -> (distance, picks)
    for j in range(k):
        options = _part_options(bounds, cuts, j * len(runs) // k, (j + 1) * len(runs) // k,
                                int((j + 0.5) * len(runs) / k), align)
        options[(0, 0)] = (2 * len(runs), None)  # the part left out: farther than its farthest segment
        states = _extend(states, options)
    picked = [(e, b, d, p) for (e, b), (d, p) in states.items() if p]
    if not picked:  # no aligned segment inside any part (few runs): the balanced runs grown to aligned ends
        return _whole_items(_balanced_runs(runs, k, live), bounds[:-1], live, align)
    mean = live / len(runs)

    def error(e: int, b: int) -> float:
        return abs(b / (e * mean) - 1)

    within = [q for q in picked if error(q[0], q[1]) <= RATIO_TOLERANCE]
    best = min(within, key=lambda q: (max(0, k - q[0]), q[0], error(q[0], q[1]), q[2], q[1])) if within else \
        min(picked, key=lambda q: (error(q[0], q[1]), max(0, k - q[0]), q[0], q[2], q[1]))
    return [(bounds[first], bounds[end]) for first, end in sorted(best[3])]


def _part_options(bounds: list[int], cuts: list[int], lo: int, hi: int, middle: int, align: int) -> dict:
    """The aligned segments of runs [lo, hi) (`cuts`: the run indices a segment may start and end at; `bounds`: each
    run index's first block) of at most SEGMENT_EXPERTS experts (or the fewest the part allows plus `align`), as
    (experts, blocks) -> (distance, (first run, end run)), the one nearest run `middle` (twice the distance) kept for
    each size. NOTE: not just the fewest: where a segment is a whole group of `align` blocks (rung 6 at dsv3-decode,
    8 blocks of 5-8 experts), the groups of the fewest experts are those of the longest runs, and choosing only among
    them put the sample's blocks per expert 1.33x the mean and its weight bytes at 0.82x the minimum."""
    import bisect

    inside = cuts[bisect.bisect_left(cuts, lo): bisect.bisect_right(cuts, hi)]
    fewest = min((b - a for a, b in zip(inside, inside[1:], strict=False)), default=0)
    options: dict[tuple[int, int], tuple[int, tuple[int, int]]] = {}
    for n, first in enumerate(inside):
        for end in inside[n + 1:]:
            if end - first > max(SEGMENT_EXPERTS, fewest + align):
                break
            size = (end - first, bounds[end] - bounds[first])
            option = (abs(first + end - 1 - 2 * middle), (first, end))
            options[size] = min(options.get(size, option), option)
    return options


def _extend(states: dict, options: dict) -> dict:
    """Every state (experts, blocks) -> (distance, picks) extended by one option (experts, blocks) -> (distance,
    (first run, end run), or None: no segment), the nearest picks kept for each new total."""
    out: dict[tuple[int, int], tuple[int, tuple]] = {}
    for (e0, b0), (d0, picks) in states.items():
        for (e, b), (d, segment) in options.items():
            key, value = (e0 + e, b0 + b), (d0 + d, picks + ((segment,) if segment else ()))
            if key not in out or value < out[key]:
                out[key] = value
    return out


def _whole_items(chosen: list[tuple[int, int]], starts: list[int], live: int, align: int) -> list[tuple[int, int]]:
    """Each (first, end) run grown by whole neighbouring runs (`starts`: every run's first row) until both ends are
    multiples of `align` or the end is the last live row; overlapping results merged."""
    import bisect

    grown: list[tuple[int, int]] = []
    for a, b in chosen:
        while a % align:  # take in the run holding row a - 1
            a = starts[bisect.bisect_right(starts, a - 1) - 1]
        while b % align and b < live:  # take in the run starting at b
            i = bisect.bisect_right(starts, b)
            b = starts[i] if i < len(starts) else live
        if grown and a < grown[-1][1]:
            a = grown.pop()[0]
        grown.append((a, b))
    return grown


def parse_sample(value: str | int | None) -> SamplePolicy:
    """--sample as a SamplePolicy: "auto" (or None), "off", or a positive number of waves (runs of one expert's
    routing blocks) per sampled launch (also the equal strata of a launch whose routing is unknown); "auto" or a
    number may end in "@C": launches of up to C CTAs (or a persistent launch's work in as many tiles: WorkItems
    .work_tiles) run whole (default AUTO_MIN_CTAS; benchmarks/gemm_table.py samples DeepGEMM's masked shapes,
    256-1024 rows, with "auto@0").

    Raises:
        InputError: naming the value and what is expected.
    """
    text = "auto" if value is None else str(value).strip().lower()
    base, at, limit = text.partition("@")
    min_ctas = AUTO_MIN_CTAS
    if at:
        min_ctas = int(limit) if limit.isdigit() else -1
        if min_ctas < 0 or base == "off":
            raise InputError(f"--sample {value!r}: expected auto, off, or a positive number of waves, the first "
                             f"and the number may end in @C, C >= 0 the CTAs up to which a launch runs whole")
    if base == "auto":
        return SamplePolicy(AUTO_WAVES, min_ctas, text=text, unmarked_waves=AUTO_UNMARKED_WAVES)
    if text == "off":
        return SamplePolicy(None, text="off")
    try:
        waves = int(base)
    except ValueError:
        waves = 0
    if waves < 1:
        raise InputError(f"--sample {value!r}: expected auto, off, or a positive number of waves (each the routing "
                         f"blocks of one expert) every big GEMM launch simulates")
    return SamplePolicy(waves, min_ctas, text=f"{waves}{at}{limit}")

"""Which members of a launch family (contract.device.FamilyShare) or which groups of a grouped launch
(contract.device.GroupSubsets) the sim backend simulates, and what each simulated one stands for.

An implementation that makes one launch per expert run (CUTLASS's non-grouped GEMM, cutlass_impl's per-expert
candidates, which the sweep prices) marks each launch as a member of its call's family; one that runs every run as a
group of one persistent launch (CUTLASS's grouped pointer-array GEMMs, bf16 and FP8: the cutlass rows' kernel, whose
device-side scheduler walks every group's tiles from blockIdx and gridDim, so no item range can be handed to it as a
WorkItems) marks the launch with its groups and a way to launch any subset of them. Neither has grid rows to sample:
at dsv3-decode a family is ~250 launches (~8,000 CTAs of a K = 7168 loop), the grouped launch 132 CTAs walking
~5,000-8,500 tiles, hours whole on two cores.

Strata: members (groups) of one problem shape. The mark says their instructions depend on the shape only (a GEMM's
loops), and each launch's L2 model starts cold, so one member of a shape does what every other member of it does on
other data: its counters stand for its stratum exactly up to the addresses (alignment of the rows: the same at every
row of a BM-aligned run). So the backend simulates ONE member per shape:

- a family (one launch each): the stratum's first member in index order (members are launched in index order, so
  every other member comes after it), whose LaunchRecord is the member's own; every other member gets a stand-in
  record carrying that member's stats (the timing model prices it as its own launch: its fill, drain and launch gap,
  not a share of one big launch), host_seconds 0 and no sanitizer findings (nothing ran). Each member is counted
  once: the simulated one by its own record, the others by their stand-ins.
- a grouped launch: ptxsim phases, per stratum its last group alone on a grid of its tiles (P1, weighted by the
  stratum's groups), and, where the launch has more tiles than CTAs, two more groups of the largest stratum on the
  same grid (P2: two tiles a CTA) from which the per-CTA setup S = (2 P1 - P2) / CTAs is fitted and taken back for
  every tile past the launch's CTAs (one tile a CTA in P1, many in the launch); with fewer tiles than CTAs, a phase
  of no groups on one CTA counts the idle CTAs (SimBackend._group_phases).

What this gets wrong, by construction (docs/cutlass.md "Sampled at DeepSeek-V3's sizes" has the measurements): the
scheduler's walk over the groups, which a CTA of the whole launch makes once to the end and a phase's CTAs only to
their group; the whole launch's L2 holds tiles of several groups at once, a phase's of one or two (groups share no
weight tile: each is one expert's); data-dependent work (none in a GEMM) would be extrapolated from one member. A
family's stand-ins are modelled as their simulated member, so a routing whose runs have many shapes simulates one
launch per shape (dsv3-decode balanced: 3).

Every record of a sampled family or grouped launch has `sample_fraction` = the simulated CTAs (tiles) over the
family's (launch's), so the row says it was sampled and its check covers exactly the rows the simulated members
wrote (harness.verify: the skipped members' rows stay poison). Sampled when the policy samples (SamplePolicy, not off)
and the family's CTAs (the grouped launch's tiles) exceed its min_ctas, as a grid-row sampled launch: tiny and small
run every member.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ShapeStratum:
    """The members (group indices) of one problem shape, ascending, and the one simulated for them."""

    shape: tuple[int, ...]
    members: tuple[int, ...]
    simulated: int

    @property
    def weight(self) -> float:
        """How many members the simulated one stands for (itself included)."""
        return float(len(self.members))


def min_work(policy) -> int | None:
    """The work (CTAs, tiles) above which `policy` samples a family or grouped launch; None: it never does (no
    policy, sampling off, or a policy of plain grids, harness.plain_sampling, which runs marked launches whole)."""
    from harness.sampling import SamplePolicy

    if not isinstance(policy, SamplePolicy) or policy.off:
        return None
    return int(policy.min_ctas)


def shape_strata(shapes, work, threshold: int | None, pick: str = "first",
                 tile_rows=()) -> tuple[ShapeStratum, ...]:
    """The strata of members with problem shapes `shapes` and `work` (CTAs or tiles) each, one simulated per
    stratum: its first member (pick="first", a family launched in index order) or its last one ("last": a grouped
    launch, whose CTAs walk the groups in order, as the whole launch's CTAs do to its end); () when every member
    runs: threshold None, the total work at most `threshold`, or one member per shape and no long group
    (`tile_rows`: a grouped launch's groups' rows of tiles, GroupSubsets.tile_rows; long_group)."""
    if threshold is None or sum(int(w) for w in work) <= threshold:
        return ()
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for i, shape in enumerate(shapes):
        by_shape.setdefault(tuple(int(d) for d in shape), []).append(i)
    if all(len(m) == 1 for m in by_shape.values()) and not any(long_group(r) for r in tile_rows):
        return ()
    return tuple(ShapeStratum(shape, tuple(m), m[0] if pick == "first" else m[-1]) for shape, m in by_shape.items())


# The most work (CTAs of a family's simulated launches, tiles of a grouped launch's phases) a sampled family or grouped
# launch may simulate; more is refused (TooSlowToSimulate). dsv3-decode's rows simulate 96-280 (3 shapes); one per
# shape at dsv3-prefill is 17 shapes of 64-1280 rows, ~2,700 tiles of a K = 7168 loop: about an hour a row
MAX_SAMPLED_WORK = 1024


def long_group(tile_rows: int) -> bool:
    """Whether a group of `tile_rows` rows of tiles is sampled by windows of its tile rows (group_windows): at least
    harness.sampling.LONG_RUN_GROUPS of them, as the PTX rows' long runs (_head_and_body)."""
    from harness.sampling import LONG_RUN_GROUPS

    return int(tile_rows) >= LONG_RUN_GROUPS


@dataclass(frozen=True)
class GroupWindows:
    """How one long group is simulated: tile rows [0, 1) (the head: cold, it reads the expert's weights from DRAM)
    standing for every group of its stratum's head, tile rows [1, 2) (the body, in the next L2 wave: it finds the
    weights in L2) for their every other tile row, and for the setup fit (harness.backends.sim._group_phases) tile
    rows [2, 4) on the body's grid (two tiles a CTA, in the wave after the body: warm as well)."""

    head: tuple[int, int, int]
    body: tuple[int, int, int]
    pair: tuple[int, int, int]
    row_tiles: int  # tiles of one tile row (the group's column tiles)
    body_weight_per_group: float  # tile rows the body stands for in each group: tile_rows - 1


def group_windows(group: int, tiles: int, tile_rows: int) -> GroupWindows:
    """The windows of long group `group` (long_group) of `tiles` tiles in `tile_rows` rows of tiles.

    NOTE: why a head and a body, as the PTX rows' long runs (harness.sampling._head_and_body): every tile of a
    group runs the same full-K loop on the same weights; what differs is where the weights come from. The whole
    launch's CTAs read them from DRAM once (ptxsim's L2 model counts a sector once within a wave, and a persistent
    launch is one wave); the head reads them cold, the body right after it finds them in L2, so the extrapolated
    DRAM bytes are the weights once per group plus every tile's activations and outputs, as for the whole launch,
    and the two sides of a PTX-vs-cutlass ratio are sampled alike. One tile row a window: a row is every column
    tile of 128 (or 64) rows, what a PTX grid row or token tile is."""
    row = int(tiles) // int(tile_rows)
    return GroupWindows((group, 0, 1), (group, 1, 2), (group, 2, 4), row, float(tile_rows - 1))


def sampled_work(strata: tuple[ShapeStratum, ...], work, grouped: bool, tile_rows=()) -> int:
    """The work the backend simulates for these strata: one member each (a long group: its head and body windows),
    and for a grouped launch the setup fit's two more groups (two tile rows of a long group) of the largest
    stratum (at most twice the largest member's work)."""
    def ran(s: ShapeStratum) -> int:
        if tile_rows and long_group(tile_rows[s.simulated]):
            return 2 * (int(work[s.simulated]) // int(tile_rows[s.simulated]))
        return int(work[s.simulated])

    def pair(s: ShapeStratum) -> int:  # the setup fit's phase: two tile rows of a long group, else two groups
        return ran(s) if tile_rows and long_group(tile_rows[s.simulated]) else 2 * ran(s)

    total = sum(ran(s) for s in strata)
    return total + max(pair(s) for s in strata) if grouped else total


def refuse_too_much(strata: tuple[ShapeStratum, ...], work, grouped: bool, tag: str, tile_rows=()) -> None:
    """TooSlowToSimulate when one member per shape is still more than MAX_SAMPLED_WORK (many shapes, big ones)."""
    from harness.errors import TooSlowToSimulate

    ran = sampled_work(strata, work, grouped, tile_rows)
    if ran > MAX_SAMPLED_WORK:
        what = "tiles of one grouped launch" if grouped else "CTAs of its launches"
        raise TooSlowToSimulate(
            f"{tag}: sampled one member per problem shape, {len(strata)} shapes would still simulate {ran} {what} "
            f"(at most {MAX_SAMPLED_WORK}): hours at this size: skipped; run it on a GPU (--backend gpu) or at a "
            f"smaller preset (dsv3-decode, small, tiny)")


def simulated_fraction(strata: tuple[ShapeStratum, ...], work) -> float:
    """The simulated members' work over every member's."""
    return sum(int(work[s.simulated]) for s in strata) / sum(int(w) for w in work)

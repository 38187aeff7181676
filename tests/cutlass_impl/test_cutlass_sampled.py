"""The cutlass rows sampled on the sim backend (harness/family_sampling.py): the per-expert launches (FamilyShare; a
per-expert candidate given, as the sweep prices them) simulate one launch per problem shape and charge the others as
stand-ins of it, which must add up to the whole run's counters exactly (no member skipped or counted twice); the
grouped launch (GroupSubsets; bf16 and FP8, the rows' default) runs one group per shape and a two-group phase for
the setups, which must come within stated tolerances of the whole launch's counters and modelled time. Sampling is
forced on these small shapes with a policy whose min_ctas is 1 (auto samples only above 4096 CTAs, so tiny and
small rows run whole)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from contract.device import FamilyShare, GroupSubsets
from contract.errors import InputError
from contract.presets import gemm_shape
from cutlass_impl import grouped_gemm as cg
from harness.family_sampling import shape_strata
from harness.sampling import parse_sample
from tests.cutlass_impl.test_cutlass_grouped_gemm import needs_host

FORCED = replace(parse_sample("auto"), min_ctas=1)
# 24 groups of 16 rows, N = 1024 (8 column tiles each), K = 128: 192 tiles on the 132-CTA persistent grid, so its
# CTAs go from group to group as at dsv3-decode (two k steps a tile: seconds whole)
MANY_TILES = gemm_shape(24, 16, 1024, 128)
PER_EXPERT_FP8 = "gemm_fp8_blockwise_sm90"  # one launch per expert run: what FamilyShare marks
# small's committed choice is the 1x2 cluster: the long-tier test at small gives the 1x1 grouped kernel, the one
# dsv3-decode's rows run (its swept choice: a tie with the 1x2 cluster on the model, the first candidate wins)
GROUPED_1X1 = "gemm_bf16_grouped_sm90"


def test_shape_strata_put_every_member_in_one_stratum_with_its_weight():
    shapes = [(16, 8, 8), (32, 8, 8), (16, 8, 8), (16, 8, 8), (48, 8, 8), (32, 8, 8)]
    strata = shape_strata(shapes, [10] * 6, threshold=5, pick="first")
    members = sorted(m for s in strata for m in s.members)
    assert members == list(range(6))  # each member once
    assert sum(s.weight for s in strata) == 6
    assert [s.simulated for s in strata] == [0, 1, 4]  # the first of each shape: its stand-ins come after it
    assert [s.simulated for s in shape_strata(shapes, [10] * 6, 5, "last")] == [3, 5, 4]
    assert shape_strata(shapes, [10] * 6, threshold=60) == ()  # small enough: every member runs
    assert shape_strata(shapes, [10] * 6, threshold=None) == ()  # sampling off
    assert shape_strata([(1,), (2,)], [10, 10], threshold=5) == ()  # one member a shape: nothing to skip


def _run(kernel, preset, variant, policy, config=None):
    from harness.backends.sim import SimBackend
    from harness.verify import run_and_check

    backend = SimBackend(sample=policy)
    given = {} if config is None else {"config": config}
    result = run_and_check(lambda b, a, p, **kw: cg.run(kernel, b, a, p, **kw, **given), backend, kernel, preset,
                           "imbalanced", 7, variant=variant)
    return result, backend


def _total(records, metric):
    return sum(float(r.stats.metrics[metric]) for r in records)


def _modelled_s(backend):
    from harness.timing.sim import model_launch

    out = [model_launch(r, backend.sources[r.name]) for r in backend.records]
    assert all(m["error"] is None for m in out), [m["error"] for m in out]
    return sum(m["modelled_s"] for m in out)


@needs_host
@pytest.mark.sim
def test_per_expert_launches_sampled_add_up_to_the_whole_run():
    """One simulated launch per shape, every other member its stand-in: the family's counters and modelled time
    are the whole run's (a GEMM's instructions depend on its shape only), its check covers the simulated members."""
    whole, full = _run("grouped_gemm_fp8", "tiny", "down", None, PER_EXPERT_FP8)
    sampled, part = _run("grouped_gemm_fp8", "tiny", "down", FORCED, PER_EXPERT_FP8)
    assert whole.ok and sampled.ok, (whole.message, sampled.message)
    assert [r.name for r in part.records] == [r.name for r in full.records]  # every member has one record
    shapes = {r.stats.waves["charged_as_member"] for r in part.records}
    ran = [r for r in part.records if r.host_seconds > 0]
    assert len(ran) == len(shapes) < len(part.records)  # one simulated per shape, the rest stand-ins
    assert all(r.stats.sanitizer_reports == [] for r in part.records if r.host_seconds == 0)
    for metric in ("smsp__inst_executed.sum", "dram__bytes_read.sum", "ptxsim__inst_executed_tensor.sum"):
        assert _total(part.records, metric) == pytest.approx(_total(full.records, metric), rel=1e-9), metric
    assert _modelled_s(part) == pytest.approx(_modelled_s(full), rel=1e-9)
    fraction = part.records[0].stats.sample_fraction
    assert 0 < fraction < 1 and all(r.stats.sample_fraction == fraction for r in part.records)
    assert sampled.errors["sampled"] and 0 < sampled.errors["coverage"] < 1


@needs_host
@pytest.mark.sim
@pytest.mark.parametrize("kernel", ["grouped_gemm", "grouped_gemm_fp8"])
def test_the_grouped_launch_sampled_with_many_tiles_per_cta_is_within_tolerance(kernel):
    """CUTLASS's grouped launch (bf16, and FP8 blockwise with its per-group scale pointers), 192 tiles on 132 CTAs,
    sampled as its one stratum's last group (24 x weighted) plus the two-group phase that takes back the per-tile
    setups: instructions within 2 %, DRAM bytes within 1 %, modelled time within 3 % of the whole launch (measured
    when added: bf16 +0.6 %, +0.1 %, +1.0 %; FP8 +0.6 %, +0.3 %, +0.6 %); the tensor instructions exactly (a group
    counted twice or left out would be off by 1/24); no setup correction was +23 % (docs/cutlass.md)."""
    whole, full = _run(kernel, MANY_TILES, "up", None)
    sampled, part = _run(kernel, MANY_TILES, "up", FORCED)
    assert whole.ok and sampled.ok, (whole.message, sampled.message)
    assert not whole.errors.get("sampled") and sampled.errors["sampled"] and 0 < sampled.errors["coverage"] < 1
    for metric, rel in {"smsp__inst_executed.sum": 0.02, "dram__bytes_read.sum": 0.01,
                        "ptxsim__inst_executed_tensor.sum": 1e-9}.items():
        assert _total(part.records, metric) == pytest.approx(_total(full.records, metric), rel=rel), metric
    assert _modelled_s(part) == pytest.approx(_modelled_s(full), rel=0.03)
    (record,) = part.records
    assert "cutlass grouped cooperative 128x128" in record.name and "cluster" not in record.name
    assert record.stats.waves["groups"] == 24 and record.stats.waves["groups_simulated"] == 3


# 2 groups of 1024 rows (8 tile rows of 128), N = 2048 (16 column tiles), K = 1024: 256 tiles on the 132-CTA grid,
# every group long (harness.family_sampling.long_group), as the contiguous rows of DeepGEMM's table (64 tile rows);
# about 10 s whole
LONG_GROUPS = gemm_shape(2, 1024, 2048, 1024)


@needs_host
@pytest.mark.sim
def test_long_groups_sampled_by_tile_row_windows_are_within_tolerance(monkeypatch):
    """CUTLASS's grouped FP8 launch with long groups, sampled as the last group's head tile row (cold), body tile
    row (the next L2 wave) and tile rows 2-3 for the setup fit: a quarter of the tiles; the tensor instructions
    exactly (a tile row counted twice or left out would be off by 1/16), DRAM bytes within 1 % (the weights once a
    group: a body read cold would add half of them), modelled time within 2 %, instructions within 6 % (measured
    when added: +0.04 %, -0.2 %, +2.8 %; at K = 256 +5 %, the setup fit's miss shrinking with K).
    With ptxsim's strict async timing off, as `compare` runs (the test suite turns it on; the next test runs it
    strict)."""
    import sys

    launch = sys.modules["ptxsim.launch"]  # the package's `launch` is the function
    monkeypatch.setattr(launch, "CONFIG", replace(launch.CONFIG, strict_async=False))
    whole, full = _run("grouped_gemm_fp8", LONG_GROUPS, "up", None)
    sampled, part = _run("grouped_gemm_fp8", LONG_GROUPS, "up", FORCED)
    assert whole.ok and sampled.ok, (whole.message, sampled.message)
    assert sampled.errors["sampled"] and 0 < sampled.errors["coverage"] < 1
    (record,) = part.records
    assert record.stats.waves["group_windows"] == 1 and record.stats.sample_fraction == pytest.approx(0.25)
    for metric, rel in {"smsp__inst_executed.sum": 0.06, "dram__bytes_read.sum": 0.01,
                        "ptxsim__inst_executed_tensor.sum": 1e-9}.items():
        assert _total(part.records, metric) == pytest.approx(_total(full.records, metric), rel=rel), metric
    assert _modelled_s(part) == pytest.approx(_modelled_s(full), rel=0.02)


@needs_host
@pytest.mark.sim
def test_a_cluster_candidate_is_sampled_on_whole_clusters(monkeypatch):
    """The 1x2-cluster grouped FP8 candidate (grid (clusters, 2, 1)) sampled by tile-row windows of whole clusters
    at 2 x 512 x 1024 x 512 (64 tiles on its 128 CTAs: the idle-CTA phase is a cluster's column): tensor
    instructions exactly, DRAM bytes within 1 %, modelled time within 2 % of the whole launch (measured when added:
    +0.24 %, -0.25 %), every launch one record naming the cluster."""
    import sys

    launch = sys.modules["ptxsim.launch"]
    monkeypatch.setattr(launch, "CONFIG", replace(launch.CONFIG, strict_async=False))
    config = "gemm_fp8_blockwise_grouped_sm90_cluster_1x2"
    shape = gemm_shape(2, 512, 1024, 512)
    whole, full = _run("grouped_gemm_fp8", shape, "up", None, config)
    sampled, part = _run("grouped_gemm_fp8", shape, "up", FORCED, config)
    assert whole.ok and sampled.ok, (whole.message, sampled.message)
    (record,) = part.records
    assert "cluster 1x2" in record.name and record.stats.waves["group_windows"] == 1
    assert record.stats.sample_fraction == pytest.approx(0.25)
    for metric, rel in {"dram__bytes_read.sum": 0.01, "ptxsim__inst_executed_tensor.sum": 1e-9}.items():
        assert _total(part.records, metric) == pytest.approx(_total(full.records, metric), rel=rel), metric
    assert _modelled_s(part) == pytest.approx(_modelled_s(full), rel=0.02)


@needs_host
@pytest.mark.sim
def test_long_groups_sampled_under_strict_async_write_every_window_row(monkeypatch):
    """The same sampled launch under strict async timing: the setup-fit window (two tiles a CTA) writes its CTAs'
    second tiles. It did not while ptxsim's elect.sync elected among the lanes present: strict timing keeps the
    producer's elected lane 0 blocked on the full pipeline inside the first tile's load loop (K = 1024: 8 k blocks
    on 5 stages), lanes 1-31 went round the tile loop and elected lane 1 as a second producer (docs/cutlass.md,
    "elect.sync"; tests/ptxsim/test_elect_sync.py)."""
    import sys

    launch = sys.modules["ptxsim.launch"]
    monkeypatch.setattr(launch, "CONFIG", replace(launch.CONFIG, strict_async=True))
    sampled, _ = _run("grouped_gemm_fp8", LONG_GROUPS, "up", FORCED)
    assert sampled.ok, sampled.message


def test_group_windows_stand_for_every_tile_row():
    from harness.family_sampling import group_windows, long_group, sampled_work

    w = group_windows(3, tiles=64 * 32, tile_rows=64)
    assert (w.head, w.body, w.pair, w.row_tiles) == ((3, 0, 1), (3, 1, 2), (3, 2, 4), 32)
    assert 1 + w.body_weight_per_group == 64  # the head and the body stand for every tile row of the group
    assert long_group(4) and not long_group(3)
    strata = shape_strata([(8192, 4096, 7168)] * 4, [2048] * 4, threshold=0, pick="last", tile_rows=[64] * 4)
    assert [s.simulated for s in strata] == [3]
    assert sampled_work(strata, [2048] * 4, grouped=True, tile_rows=[64] * 4) == 4 * 32  # head, body, two rows
    assert sampled_work(strata, [2048] * 4, grouped=True) == 3 * 2048  # without windows: three whole groups
    # one group per shape is sampled only when it is long
    assert shape_strata([(1024, 8, 8)], [256], threshold=0, tile_rows=[8]) != ()
    assert shape_strata([(256, 8, 8)], [64], threshold=0, tile_rows=[2]) == ()


def test_a_member_launched_before_its_simulated_one_is_refused():
    """Stand-ins copy their shape's simulated member, so that member must have run first (index order)."""
    from harness.backends.sim import SimBackend

    backend = SimBackend(sample=FORCED)
    mark = FamilyShare("f", 1, ((16, 8, 8), (16, 8, 8)), (4, 4))
    with pytest.raises(InputError, match=r"member 1 of family 'f' was launched before member 0"):
        backend.launch_ptx("", "k", (4, 1, 1), (32, 1, 1), [np.uint32(0), mark], tag="f")


def test_marks_are_checked_and_dropped_from_kernel_parameters():
    from harness.backends.base import flatten_work_items

    with pytest.raises(InputError, match="index 2 of 2 shapes"):
        FamilyShare("f", 2, ((1,), (1,)), (1, 1))
    with pytest.raises(InputError, match="one positive tile count per shape"):
        GroupSubsets(((1,),), (0,), lambda idx: None)
    mark = GroupSubsets(((1,),), (1,), lambda idx: None)
    assert flatten_work_items([np.uint32(3), mark, FamilyShare("f", 0, ((1,),), (1,))]) == [np.uint32(3)]


@needs_host
@pytest.mark.sim
@pytest.mark.long
@pytest.mark.parametrize(("kernel", "config"), [("grouped_gemm", GROUPED_1X1),
                                                ("grouped_gemm_fp8", "gemm_fp8_blockwise_grouped_sm90")])
def test_the_grouped_launch_sampled_at_small_is_within_tolerance(kernel, config):
    """small's down GEMM (imbalanced: 32 groups of seven shapes, 256 tiles on 132 CTAs, K = 256): sampled, modelled
    time within 3 % and DRAM bytes within 1 % of the whole launch, instructions within 6 % (measured when added:
    bf16 +0.25 %, +0.04 %, -4.4 %; FP8 +0.40 %, +0.08 %, -3.9 %: at K = 256 a tile is 4 (bf16) or 2 (FP8) k steps,
    so what the fit misses of the per-CTA work, the scheduler's walk over the groups, is a larger part than at dsv3's
    K of 2048-7168). Long tier (about 35 s)."""
    whole, full = _run(kernel, "small", "down", None, config)
    sampled, part = _run(kernel, "small", "down", FORCED, config)
    assert whole.ok and sampled.ok, (whole.message, sampled.message)
    assert sampled.errors["sampled"]
    assert _total(part.records, "dram__bytes_read.sum") == pytest.approx(_total(full.records, "dram__bytes_read.sum"),
                                                                         rel=0.01)
    assert _total(part.records, "smsp__inst_executed.sum") == pytest.approx(
        _total(full.records, "smsp__inst_executed.sum"), rel=0.06)
    assert _modelled_s(part) == pytest.approx(_modelled_s(full), rel=0.03)


def test_one_per_shape_that_is_still_hours_is_refused():
    """dsv3-prefill's runs have 17 row counts (64-1280 rows): one group per shape is ~2,700 tiles of a K = 7168 loop,
    refused (the row is skipped with the reason); dsv3-decode's 3 shapes of 32 tiles pass."""
    from harness.errors import TooSlowToSimulate
    from harness.family_sampling import refuse_too_much

    decode = [(16, 4096, 7168)] * 140 + [(32, 4096, 7168)] * 11 + [(48, 4096, 7168)] * 2
    strata = shape_strata(decode, [32] * len(decode), threshold=4096, pick="last")
    refuse_too_much(strata, [32] * len(decode), True, "decode")
    rows = [64] * 112 + [128] * 28 + [192 + 64 * (i % 15) for i in range(74)]
    tiles = [-(-r // 128) * 32 for r in rows]
    strata = shape_strata([(r, 4096, 7168) for r in rows], tiles, threshold=4096, pick="last")
    with pytest.raises(TooSlowToSimulate, match=r"17 shapes would still simulate \d+ tiles"):
        refuse_too_much(strata, tiles, True, "prefill")


class _Recorder:
    """A backend that keeps what it is handed and runs nothing: which marks each launch of cg.run carries."""

    name = "recorder"

    def __init__(self):
        self.launches, self._next = [], 1 << 20

    def to_device(self, host):
        from types import SimpleNamespace

        host = np.asarray(host)
        self._next += -(-max(host.nbytes, 1) // 256) * 256 + 256  # 256-byte aligned, as a device allocator's
        return SimpleNamespace(host=host, shape=host.shape, dtype=host.dtype, addr=self._next)

    def to_host(self, array):
        return array.host

    def launch_ptx(self, ptx, entry, grid, block, params, shared_bytes=0, tag=""):
        self.launches.append((tuple(grid), params, tag))
        return tag


def _recorded(kernel, config):
    from types import SimpleNamespace

    backend = _Recorder()
    fp8 = kernel == "grouped_gemm_fp8"
    dtype = np.uint8 if fp8 else np.uint16  # only the element size matters here
    host = {"a": np.zeros((64, 256), dtype), "w": np.zeros((4, 256, 256), dtype), "c": np.zeros((64, 256), np.uint16),
            "block_expert": np.array([0, 0, 1, 2], np.int32), "total_padded": np.array([64], np.int32),
            "a_scale": np.ones((64, 2), np.float32), "w_scale": np.ones((4, 2, 2), np.float32)}
    args = {k: backend.to_device(v) for k, v in host.items() if fp8 or "scale" not in k}
    cg.run(kernel, backend, args, SimpleNamespace(BM=16), config=config)
    return backend


@needs_host
@pytest.mark.parametrize("kernel", ["grouped_gemm", "grouped_gemm_fp8"])
def test_which_launch_carries_which_mark(kernel):
    """Runs of 32, 16, 16 rows (experts 0, 1, 2): the 1x1 grouped launch carries GroupSubsets with each group's shape
    and tiles, whose subset keeps every group (the others with no rows) after an empty one, on a 1-D grid of at most
    the subset's tiles, without marks (FP8: the scale steps checked for it too), and whose window (i, first, end)
    is a group of those tile rows of group i; a cluster candidate's mark gives subsets on whole clusters (grid y = 2);
    the per-expert launches a FamilyShare each, in index order."""
    fp8 = kernel == "grouped_gemm_fp8"
    family = "fp8" if fp8 else "bf16"
    one = _recorded(kernel, cg.GROUPED[kernel])
    ((grid, params, _),) = one.launches
    (mark,) = [p for p in params if isinstance(p, GroupSubsets)]
    assert mark.shapes == ((32, 256, 256), (16, 256, 256), (16, 256, 256)) and mark.tiles == (2, 2, 2)
    sub_grid, sub_params = mark.subset((1,))
    assert sub_grid == (2, 1, 1) and not any(isinstance(p, (GroupSubsets, FamilyShare)) for p in sub_params)
    assert mark.subset(())[0] == (1, 1, 1)
    cached = [k[2] for k in one.__dict__["_cutlass_grouped"]]
    assert (cg.Group(0, 0, 0), cg.Group(0, 0, 0), cg.Group(1, 32, 16), cg.Group(2, 48, 0)) in cached
    assert mark.tile_rows == (1, 1, 1)  # 128-row tiles: 32 and 16 rows are one tile row each
    assert mark.subset(((0, 0, 1),))[0] == (2, 1, 1)
    with pytest.raises(InputError, match=r"subset window \(0, 1, 2\) of group 0"):
        mark.subset(((0, 1, 2),))
    cluster = _recorded(kernel, f"gemm_{family}{'_blockwise' if fp8 else ''}_grouped_sm90_cluster_1x2")
    ((grid, params, _),) = cluster.launches
    (cmark,) = [p for p in params if isinstance(p, GroupSubsets)]
    assert grid[1] == 2 and cmark.subset((1,))[0] == (1, 2, 1)  # group 1's two tiles: one cluster
    per_expert = _recorded(kernel, f"gemm_{family}{'_blockwise' if fp8 else ''}_sm90")
    marks = [next(p for p in params if isinstance(p, FamilyShare)) for _, params, _ in per_expert.launches]
    assert [m.index for m in marks] == [0, 1, 2] and marks[0].shapes == mark.shapes

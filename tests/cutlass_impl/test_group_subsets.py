"""cutlass_impl.group_subsets: the one subset builder of both grouped paths (host-planned and device-built groups),
checked with a stand-in for the shim's Params (no g++, no simulator)."""
from types import SimpleNamespace

import pytest

from contract.errors import InputError
from cutlass_impl.build import Config
from cutlass_impl.group_subsets import group_subsets

ONE = Config("bf16_grouped", 128, 128, 64, "cooperative")
PAIR = Config("bf16_grouped", 128, 128, 64, "cooperative", 1, 2)


def _launcher(grid):
    """A launch_groups that records what it was asked for and answers a fixed whole-launch grid."""
    asked = []

    def launch_groups(keep):
        asked.append(dict(keep))
        return SimpleNamespace(grid=grid, struct=("params of", tuple(sorted(keep))))

    return launch_groups, asked


def test_tiles_and_tile_rows_come_from_the_configurations_tile():
    launch, _ = _launcher((132, 1, 1))
    mark = group_subsets([1, 128, 129, 300], 384, 256, ONE, launch, "cutlass t")
    assert mark.shapes == ((1, 384, 256), (128, 384, 256), (129, 384, 256), (300, 384, 256))
    assert mark.tile_rows == (1, 1, 2, 3) and mark.tiles == (3, 3, 6, 9)


def test_a_subset_runs_on_at_most_its_tiles_and_passes_the_kept_groups():
    launch, asked = _launcher((132, 1, 1))
    mark = group_subsets([128, 300, 64], 256, 128, ONE, launch, "cutlass t")
    grid, params = mark.subset((1, 2))
    assert asked == [{1: None, 2: None}] and params == [("params of", (1, 2))]
    assert grid == (3 * 2 + 1 * 2, 1, 1)  # group 1: 3 tile rows x 2 tile columns; group 2: 1 x 2
    grid, _ = mark.subset(((1, 1, 3),))  # tile rows 1 and 2 of group 1: 2 x 2 tiles
    assert asked[-1] == {1: (1, 3)} and grid == (4, 1, 1)
    assert mark.subset(tuple(range(3)))[0] == (2 + 6 + 2, 1, 1)
    small, _ = _launcher((4, 1, 1))
    assert group_subsets([300], 256, 128, ONE, small, "t").subset((0,))[0] == (4, 1, 1)  # never above the launch's


def test_a_cluster_candidates_subset_is_whole_clusters():
    launch, _ = _launcher((66, 2, 1))
    mark = group_subsets([128, 256], 384, 128, PAIR, launch, "cutlass t")
    assert mark.subset((0,))[0] == (2, 2, 1)  # 3 tiles -> 2 clusters of 2 CTAs
    assert mark.subset((1,))[0] == (3, 2, 1)  # 6 tiles -> 3 clusters


def test_bad_windows_and_windows_where_none_are_taken_are_refused():
    launch, _ = _launcher((132, 1, 1))
    mark = group_subsets([300], 256, 128, ONE, launch, "cutlass t")
    for bad in ((0, 2, 2), (0, 0, 4), (0, -1, 1)):
        with pytest.raises(InputError, match=r"cutlass t: subset window .* tile rows within \[0, 3\)"):
            mark.subset((bad,))
    plain = group_subsets([300], 256, 128, ONE, launch, "cutlass d", windows=False)
    assert plain.tile_rows == () and plain.subset((0,))[0] == (6, 1, 1)
    with pytest.raises(InputError, match="cutlass d: subset entry .* group indices only"):
        plain.subset(((0, 0, 1),))

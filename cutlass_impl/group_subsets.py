"""The GroupSubsets mark of a CUTLASS grouped launch (contract.device.GroupSubsets): each group's tiles, and how to
launch a subset of the groups (or of a group's tile rows) on a grid of whole clusters. One builder for both grouped
paths: the host-planned launch (cutlass_impl.grouped_gemm._run_grouped) and the launch whose groups the device
built (cutlass_impl.device_args); each says how to make the Params of the launch where only some groups do work."""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from contract.device import GroupSubsets
from contract.errors import InputError
from cutlass_impl.build import Config
from cutlass_impl.params import HostParams

# which groups do work in a subset launch: group index -> None (all its tile rows) or (first, end) tile rows
Keep = dict[int, tuple[int, int] | None]


def group_subsets(rows: Sequence[int], N: int, Kd: int, config: Config,  # noqa: N803
                  launch_groups: Callable[[Keep], HostParams], where: str, windows: bool = True) -> GroupSubsets:
    """The GroupSubsets of a grouped launch of groups of `rows` rows x N x Kd with `config`'s tiles.

    Args:
        rows: each group's rows (> 0).
        N, Kd: every group's N and K.
        config: the kernel's configuration (its tile_m and tile_n make each group's tiles).
        launch_groups: keep -> the HostParams (grid, struct) of the same kernel's launch in which only the groups
            `keep` names do work (a window (first, end): only those tile rows of the group).
        where: what the errors name ("cutlass grouped_gemm").
        windows: whether subset() takes (i, first, end) entries (the mark then carries each group's tile rows).
    Returns:
        The mark; its subset(indices) gives (grid, [Params]) on a grid of at most the kept tiles, in whole clusters
        (a cluster candidate's grid is (clusters, cluster CTAs, 1): a column of CTAs a cluster, as CUTLASS puts the
        cluster's N CTAs in grid y when it rasterises along M, its grouped scheduler's default); at least one.
    """
    tile_rows = tuple(-(-int(r) // config.tile_m) for r in rows)
    tiles = tuple(m * -(-N // config.tile_n) for m in tile_rows)

    def subset(indices: tuple) -> tuple:
        keep: Keep = {}
        for entry in indices:
            i, window = (int(entry), None) if isinstance(entry, (int, np.integer)) else \
                (int(entry[0]), (int(entry[1]), int(entry[2])))
            if window is not None and not (windows and 0 <= window[0] < window[1] <= tile_rows[i]):
                raise InputError(f"{where}: subset window {entry} of group {i}; expected tile rows within "
                                 f"[0, {tile_rows[i]})" if windows else
                                 f"{where}: subset entry {entry}; this launch takes group indices only")
            keep[i] = window
        sub = launch_groups(keep)
        work = sum(tiles[i] if w is None else (w[1] - w[0]) * (tiles[i] // tile_rows[i]) for i, w in keep.items())
        return (max(1, min(sub.grid[0], -(-work // sub.grid[1]))), sub.grid[1], 1), [sub.struct]

    return GroupSubsets(tuple((int(r), N, Kd) for r in rows), tiles, subset, tile_rows if windows else ())

"""Which row a Dask worker starts next so that the whole process tree stays within a memory budget.

The tree is this process (Dask's scheduler, the workers' nannies and the client), every worker between rows (what it
still holds after its last row gave back what it could: measured, harness.row_memory.release_memory) and each
running row's own rise (its estimate less the process base the worker's figure already holds: contract.footprint).
A row starts only when that sum (or, where more, what the workers hold now as measured: a running row that has
gone past its estimate), its own rise added, fits the budget. Rows come costliest first (longest-first
scheduling keeps both workers busy to the end); when the first in line does not fit, another may start in its place
only if it would also fit beside that first row, so the first row starts as soon as the rows running now finish
instead of waiting behind an endless stream of small rows (which would leave the dearest rows to the end, each alone
on one core). A row that fits nowhere (its rise alone over what the budget leaves) starts once nothing else runs.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TreeMemory:
    """What the process tree holds now, as the scheduler knows it (bytes)."""

    own: int  # this process's resident memory
    workers: Mapping[str, int]  # worker -> resident memory between rows, last measured
    running: Sequence[int]  # the estimated rise of each row running now
    observed: int | None = None  # what the workers hold now, summed, as measured (None: not measured)

    @property
    def used(self) -> int:
        """This process and the workers: by the estimates, or as measured where that is more (a running row past
        its estimate)."""
        estimated = sum(self.workers.values()) + sum(self.running)
        return int(self.own + max(estimated, self.observed or 0))


def pick_row(rises: Sequence[int], tree: TreeMemory, budget: int | None, free_workers: int) -> int | None:
    """The index in `rises` (the estimated rise of each row waiting, first in line first) of the row to start now, or
    None (wait for a running row to finish).

    Args:
        rises: each waiting row's estimated rise over its worker's memory between rows.
        tree: what the tree holds now.
        budget: bytes the tree may hold; None: no budget (the first row in line).
        free_workers: workers with no row now.
    """
    if not rises or free_workers <= 0:
        return None
    if budget is None or not tree.running:
        return 0  # nothing runs: the first in line starts whatever its estimate (alone, it cannot be helped)
    room = budget - tree.used
    if rises[0] <= room:
        return 0
    # NOTE: the first row does not fit beside what runs; another may take the free worker only if the first would
    # still fit beside it once the rows running now are done, so the first is never kept waiting by rows started
    # after it
    room_after = budget - (tree.own + sum(tree.workers.values())) - rises[0]
    return next((i for i, rise in enumerate(rises) if i and rise <= room and rise <= room_after), None)


@dataclass(frozen=True)
class Replay:
    """What a replayed schedule took: its makespan (the durations' unit) and the most the tree held by the estimates."""

    makespan: float
    peak_bytes: int


def replay_schedule(durations: Sequence[float], rises: Sequence[int], workers: int, own: int, held: Sequence[int],
                    budget: int | None) -> Replay:
    """`workers` workers running rows of these durations and rises, queued in this order, under pick_row (worker w
    holding held[w] between rows): the scheduler replayed, to estimate a run's wall time on idle cores from its rows'
    CPU seconds (benchmarks/scale.py), and to test it."""
    import heapq

    queue = list(range(len(durations)))
    clock, peak = 0.0, 0
    running: list[tuple[float, int, int]] = []  # (end time, worker, rise), a heap
    holds = {str(w): int(held[w]) for w in range(workers)}
    while queue or running:
        while queue:
            tree = TreeMemory(own, holds, [rise for _, _, rise in running])
            pick = pick_row([rises[i] for i in queue], tree, budget, workers - len(running))
            if pick is None:
                break
            row = queue.pop(pick)
            worker = next(w for w in range(workers) if w not in {w for _, w, _ in running})
            heapq.heappush(running, (clock + float(durations[row]), worker, int(rises[row])))
            peak = max(peak, TreeMemory(own, holds, [rise for _, _, rise in running]).used)
        clock = heapq.heappop(running)[0]
    return Replay(clock, peak)

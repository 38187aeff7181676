"""harness/row_budget.py: the scheduler's memory budget for the whole process tree, on fake rows."""
import numpy as np
import pytest

from harness.row_budget import TreeMemory, pick_row, replay_schedule

GB = 10**9


def test_a_row_starts_only_where_the_tree_fits_the_budget():
    tree = TreeMemory(own=GB // 2, workers={"a": GB, "b": GB}, running=[GB])  # 3.5 GB held
    assert pick_row([GB // 2], tree, 4 * GB, free_workers=1) == 0  # 3.5 + 0.5 = 4
    assert pick_row([GB // 2 + 1], tree, 4 * GB, free_workers=1) is None
    assert pick_row([GB // 2], tree, 4 * GB, free_workers=0) is None  # no worker free
    assert pick_row([10 * GB], tree, None, free_workers=1) == 0  # no budget: the first in line
    # nothing runs: the first in line starts even over the budget (alone; its own check skips it if it cannot fit)
    assert pick_row([10 * GB], TreeMemory(0, {"a": GB}, []), 4 * GB, free_workers=2) == 0
    assert pick_row([], tree, 4 * GB, free_workers=1) is None


def test_the_first_in_line_is_not_overtaken_by_rows_that_would_keep_it_waiting():
    """A 2.5 GB row waits behind a running 1.5 GB one (budget 4 GB, 0.5 GB held): a 1.25 GB row would fit now but
    not beside the 2.5 GB row once the running one ends, so it does not start; a 1 GB row fits both ways and does."""
    tree = TreeMemory(own=GB // 2, workers={}, running=[3 * GB // 2])
    assert pick_row([5 * GB // 2, 5 * GB // 4], tree, 4 * GB, free_workers=1) is None
    assert pick_row([5 * GB // 2, 5 * GB // 4, GB], tree, 4 * GB, free_workers=1) == 2
    assert pick_row([2 * GB, 5 * GB // 4], tree, 4 * GB, free_workers=1) == 0  # 2 GB fits beside it: first in line


@pytest.mark.parametrize("seed", range(20))
def test_replayed_schedules_never_exceed_the_budget_unless_a_row_runs_alone(seed):
    """Random rows (by construction, whatever the seed): the tree's estimated memory stays within the budget at every
    start, except where one row alone is over it; every row runs; two workers take no longer than one."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30))
    durations = rng.uniform(0.1, 10.0, n)
    rises = rng.integers(0, 3 * GB, n)
    own, held, budget = GB // 4, [GB // 2, GB // 2], 7 * GB // 2
    one = replay_schedule(durations, rises, 1, own, held[:1], budget)
    two = replay_schedule(durations, rises, 2, own, held, budget)
    alone = own + sum(held) + int(rises.max())
    assert two.peak_bytes <= max(budget, alone)
    assert one.makespan == pytest.approx(durations.sum()) and two.makespan <= one.makespan + 1e-9
    assert two.makespan >= durations.sum() / 2 - 1e-9 and two.makespan >= durations.max() - 1e-9


def test_replay_of_rows_that_cannot_pair_is_their_sum_and_of_rows_that_can_half_of_it():
    durations, rises = [4.0, 4.0, 2.0, 2.0], [2 * GB, 2 * GB, GB // 10, GB // 10]
    tight = replay_schedule(durations, rises, 2, 0, [GB, GB], 3 * GB)  # 2 GB held: one 2 GB row at a time
    assert tight.makespan == pytest.approx(4 + 4 + 2)  # the small rows pair up (2.2 GB), the big ones run alone
    assert tight.peak_bytes <= 4 * GB
    roomy = replay_schedule(durations, rises, 2, 0, [GB, GB], 8 * GB)
    assert roomy.makespan == pytest.approx(6.0) and roomy.peak_bytes == 6 * GB


def test_a_running_row_past_its_estimate_counts_as_measured():
    """The workers hold 3 GB as measured where the estimates say 2 GB (a row past its estimate): a 1 GB row that fits
    by the estimates (0.5 + 2 + 1 = 3.5) waits; measured below the estimates, the estimates count."""
    by_estimate = TreeMemory(own=GB // 2, workers={"a": GB // 2, "b": GB // 2}, running=[GB])
    assert pick_row([GB], by_estimate, 7 * GB // 2, free_workers=1) == 0
    measured = TreeMemory(GB // 2, {"a": GB // 2, "b": GB // 2}, [GB], observed=3 * GB)
    assert measured.used == 7 * GB // 2 and pick_row([GB], measured, 7 * GB // 2, free_workers=1) is None
    assert TreeMemory(GB // 2, {"a": GB}, [GB], observed=GB).used == 5 * GB // 2

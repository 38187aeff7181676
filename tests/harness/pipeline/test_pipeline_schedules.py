"""The schedule builders produce the work and orders their references describe; the simulator's times agree with an
independent longest-path computation and with a hand-worked example."""
from collections import Counter

import pytest

from harness.pipeline import BUILDERS, ChunkTimes, dualpipe, dualpipev, one_f_one_b, op_dependencies, simulate, zb1p


def _ops(row):
    return [op for c in row for op in c.ops()]


def _reference_times(schedule, times):
    """Start times as the longest path in the DAG of (device order + dependency) edges, by Kahn's algorithm."""
    node_of_op, nodes = {}, []
    for d, row in enumerate(schedule.devices):
        for i, c in enumerate(row):
            nodes.append((d, i))
            for op in c.ops():
                node_of_op[op] = (d, i)
    preds = {n: set() for n in nodes}
    for d, row in enumerate(schedule.devices):
        for i, c in enumerate(row):
            if i:
                preds[(d, i)].add((d, i - 1))
            for op in c.ops():
                preds[(d, i)].update(node_of_op[dep] for dep in op_dependencies(op, schedule.stages))
    succs = {n: [] for n in nodes}
    for n, ps in preds.items():
        for p in ps:
            succs[p].append(n)
    waiting = {n: len(ps) for n, ps in preds.items()}
    ready = [n for n, k in waiting.items() if k == 0]
    start = {n: 0.0 for n in nodes}
    done = 0
    while ready:
        n = ready.pop()
        done += 1
        end = start[n] + times.duration(schedule.devices[n[0]][n[1]])
        for s in succs[n]:
            start[s] = max(start[s], end)
            waiting[s] -= 1
            if waiting[s] == 0:
                ready.append(s)
    assert done == len(nodes), "reference found a cycle"
    return start


@pytest.mark.parametrize("method", list(BUILDERS))
def test_simulated_starts_equal_longest_paths(method, rng):
    for _ in range(3):
        F, b, W = (rng.integers(1, 33, 3) / 8).tolist()   # any times, in or out of the formulas' exact regions
        times = ChunkTimes(F, b + W, W, float(rng.integers(1, 65) / 8))
        pp = int(rng.choice([2, 4, 6, 8]))
        schedule = BUILDERS[method](pp, int(rng.choice([2 * pp, 2 * pp + 2, 3 * pp])))
        reference = _reference_times(schedule, times)
        timeline = simulate(schedule, times)
        assert {(p.device, p.index): p.start for row in timeline.placed for p in row} == reference


def test_one_f_one_b_by_hand():
    t = ChunkTimes(F=1, B=2, W=0.5, FB=2.5)
    tl = simulate(one_f_one_b(2, 2), t)
    got = [[(p.chunk.kind, p.chunk.microbatch, p.start, p.end) for p in row] for row in tl.placed]
    assert got == [
        [("F", 0, 0, 1), ("F", 1, 1, 2), ("B", 0, 4, 6), ("B", 1, 7, 9)],
        [("F", 0, 1, 2), ("B", 0, 2, 4), ("F", 1, 4, 5), ("B", 1, 5, 7)],
    ]


@pytest.mark.parametrize("builder", [one_f_one_b, zb1p])
def test_single_direction_schedules_do_all_work_once_per_device(builder):
    pp, mb = 4, 9
    s = builder(pp, mb)
    assert len(s.devices) == pp
    for d, row in enumerate(s.devices):
        kinds = Counter(k for k, *_ in _ops(row))
        assert kinds == ({"F": mb, "B": mb, "W": mb} if builder is zb1p else {"F": mb, "B": mb})
        assert {stage for _, _, stage, _ in _ops(row)} == {d}
        # 1F1B's warm-up: device d starts with PP-d-1 forwards before the steady F/B alternation
        first_b = next(i for i, c in enumerate(row) if c.kind == "B")
        assert first_b == pp - d


def test_zb1p_defers_weight_gradients_by_device_index():
    s = zb1p(4, 8)
    for d, row in enumerate(s.devices):
        b_order = [c.microbatch for c in row if c.kind == "B"]
        w_order = [c.microbatch for c in row if c.kind == "W"]
        assert b_order == w_order == list(range(8))
        assert all(c.split for c in row if c.kind == "B")
        assert [c.kind for c in row[-(d + 1):]] == ["W"] * (d + 1)   # d+1 deferred W's close each device
        before_first_w = row[:next(i for i, c in enumerate(row) if c.kind == "W")]
        assert sum(c.kind == "B" for c in before_first_w) == d + 1


def test_dualpipe_layout_and_mirror_symmetry():
    pp, mb = 8, 20   # the README's picture: 8 ranks, 20 micro-batches in two directions
    s = dualpipe(pp, mb)
    for r, row in enumerate(s.devices):
        ops = _ops(row)
        assert {(d, stage) for _, d, stage, _ in ops} == {(0, r), (1, pp - 1 - r)}
        assert Counter(k for k, *_ in ops if k != "W") == {"F": mb, "B": mb}
        mirror = s.devices[pp - 1 - r]
        assert [(c.kind, c.microbatch, 1 - c.direction) for c in row] == [
            (c.kind, c.microbatch, c.direction) for c in mirror]
    # device 0: PP-2 lone forwards of direction 0, then one of each direction (steps 1-2)
    head = [(c.kind, c.direction) for c in s.devices[0][:pp]]
    assert head == [("F", 0)] * (pp - 1) + [("F", 1)]
    fb = [c for c in s.devices[0] if c.kind == "FB"]
    assert fb and all(c.direction != c.backward.direction for c in fb)   # overlap pairs cross directions
    # the middle ranks do not overlap their first pair (the reference's NOTE)
    for r in (pp // 2 - 1, pp // 2):
        kinds = [c.kind for c in s.devices[r]]
        first_fb = kinds.index("FB")
        assert kinds[first_fb - 2:first_fb] == ["F", "B"]


def test_dualpipev_is_a_v_over_half_the_devices():
    pp, mb = 8, 10
    s = dualpipev(pp, mb)
    assert len(s.devices) == pp // 2 and s.stages == pp
    for r, row in enumerate(s.devices):
        ops = _ops(row)
        assert {(d, stage) for _, d, stage, _ in ops} == {(0, r), (0, pp - 1 - r)}
        assert Counter(k for k, *_ in ops if k != "W") == {"F": 2 * mb, "B": 2 * mb}
    assert {stage for _, _, stage, _ in _ops(s.devices[-1])} == {pp // 2 - 1, pp // 2}

"""Broken schedules and timelines are rejected, with messages naming the chunk and the dependency."""
import dataclasses

import pytest

from harness.errors import PtxmoeError
from harness.pipeline import (
    Chunk,
    ChunkTimes,
    DeadlockError,
    DependencyError,
    Placed,
    Schedule,
    ScheduleError,
    Timeline,
    check_timeline,
    dualpipe,
    dualpipev,
    engine,
    one_f_one_b,
    simulate,
    zb1p,
)

T = ChunkTimes(F=1, B=2, W=1, FB=2.5)


def _replace_device(schedule, device, row):
    devices = list(schedule.devices)
    devices[device] = tuple(row)
    return dataclasses.replace(schedule, devices=tuple(devices))


def test_errors_belong_to_the_project_hierarchy():
    assert issubclass(DependencyError, ScheduleError) and issubclass(DeadlockError, ScheduleError)
    assert issubclass(ScheduleError, PtxmoeError)


def test_removed_dependency_gives_a_timeline_the_checker_rejects(monkeypatch):
    """Simulate 1F1B while ignoring "B needs the next stage's B"; the independent check must catch the result."""
    schedule = one_f_one_b(4, 8)
    with monkeypatch.context() as mp:
        mp.setitem(engine.DEPENDENCIES, "B", lambda d, s, m, pp: [("F", d, s, m)])
        broken = simulate(schedule, T, check=False)
    with pytest.raises(DependencyError, match=r"B\(d0 s\d mb\d\).*its dependency B\(d0 s\d mb\d\).*ends at"):
        check_timeline(broken)
    check_timeline(simulate(schedule, T))  # the real simulation passes the same check


def test_removed_forward_dependency_in_dualpipe_is_rejected(monkeypatch):
    with monkeypatch.context() as mp:
        mp.setitem(engine.DEPENDENCIES, "F", lambda d, s, m, pp: [])
        broken = simulate(dualpipe(4, 8), T, check=False)
    with pytest.raises(DependencyError, match=r"its dependency F\(d[01] s\d mb\d\)"):
        check_timeline(broken)


def test_shifting_one_chunk_earlier_is_rejected():
    timeline = simulate(zb1p(4, 8), T)
    rows = [list(r) for r in timeline.placed]
    # device 0's first B (input-grad half) moved to start right after its F's: before device 1's B for mb 0 ends.
    i = next(i for i, p in enumerate(rows[0]) if p.chunk.kind == "B")
    p = rows[0][i]
    earlier = rows[0][i - 1].end
    rows[0][i] = dataclasses.replace(p, start=earlier, end=earlier + (p.end - p.start))
    tampered = dataclasses.replace(timeline, placed=tuple(tuple(r) for r in rows))
    with pytest.raises(DependencyError, match=r"device 0 entry \d+ B\(d0 s0 mb0 split\) starts at .* "
                                              r"its dependency B\(d0 s1 mb0\) \(device 1 entry \d+\) ends at"):
        check_timeline(tampered)


def test_overlap_on_a_device_and_wrong_duration_are_rejected():
    timeline = simulate(one_f_one_b(2, 2), T)
    row = list(timeline.placed[1])
    row[1] = dataclasses.replace(row[1], start=row[1].start - 0.5, end=row[1].end - 0.5)
    with pytest.raises(DependencyError, match="before the device's previous chunk ends"):
        check_timeline(dataclasses.replace(timeline, placed=(timeline.placed[0], tuple(row))))
    row = list(timeline.placed[1])
    row[-1] = dataclasses.replace(row[-1], end=row[-1].end + 1)
    with pytest.raises(ScheduleError, match=r"runs 3.0; expected 2"):
        check_timeline(dataclasses.replace(timeline, placed=(timeline.placed[0], tuple(row))))


def test_hand_built_timeline_without_waiting_is_rejected():
    schedule = one_f_one_b(2, 1)
    rows, t = [], 0.0
    for device, chunks in enumerate(schedule.devices):
        row, t = [], 0.0
        for i, c in enumerate(chunks):  # every device packed from time 0, ignoring dependencies
            row.append(Placed(device, i, c, t, t + T.duration(c)))
            t += T.duration(c)
        rows.append(tuple(row))
    with pytest.raises(DependencyError, match=r"starts at [0-9.]+ but its dependency [FB]\(d0 s\d mb0\)"):
        check_timeline(Timeline(schedule, T, tuple(rows)))


def test_reordered_schedule_deadlocks_with_a_clear_message():
    schedule = one_f_one_b(4, 8)
    row = list(schedule.devices[3])
    row[0], row[1] = row[1], row[0]  # last device: B(mb0) before F(mb0)
    with pytest.raises(DeadlockError, match=r"device 3 entry 0 B\(d0 s3 mb0\) waits for F\(d0 s3 mb0\)"):
        simulate(_replace_device(schedule, 3, row), T)
    # W before its split B on the same device
    schedule = zb1p(4, 8)
    row = list(schedule.devices[0])
    i = next(i for i, c in enumerate(row) if c.kind == "W")
    w = row.pop(i)
    row.insert(0, w)
    with pytest.raises(DeadlockError, match=r"device 0 entry 0 W\(d0 s0 mb\d\) waits for B\(d0 s0 mb\d\)"):
        simulate(_replace_device(schedule, 0, row), T)


def test_fb_pair_depending_on_itself_deadlocks():
    # an FB whose backward half needs its own forward half: both start together, so it can never run
    c = Chunk(0, 0, "FB", 0, backward=Chunk(0, 0, "B", 0))
    with pytest.raises(ScheduleError, match="runs twice|waits for"):
        simulate(Schedule("custom", 1, 1, ((c,),)), T)


@pytest.mark.parametrize("mutate, message", [
    (lambda rows: rows[0].append(rows[0][0]), r"F\(d0 s0 mb0\) runs twice"),
    (lambda rows: rows[3].pop(), r"F\(d0 s3 mb\d\) has no B"),
    (lambda rows: rows[1].append(Chunk(1, 0, "W")), r"B\(d0 s1 mb0\) is not split but also has a W chunk"),
    (lambda rows: rows[2].append(Chunk(7, 0, "F")), "has stage 7; expected < PP=4"),
    (lambda rows: rows[0].append(Chunk(1, 9, "F")), "direction 0 stage 1 runs on devices 0 and 1"),
])
def test_malformed_schedules_are_rejected_before_simulation(mutate, message):
    schedule = one_f_one_b(4, 4)
    rows = [list(r) for r in schedule.devices]
    mutate(rows)
    with pytest.raises(ScheduleError, match=message):
        simulate(dataclasses.replace(schedule, devices=tuple(tuple(r) for r in rows)), T)


def test_split_b_without_w_is_rejected():
    schedule = zb1p(2, 2)
    rows = [[c for c in r if not (c.kind == "W" and c.microbatch == 1)] for r in schedule.devices]
    with pytest.raises(ScheduleError, match=r"B\(d0 s\d mb1\) is split but has no W chunk"):
        simulate(dataclasses.replace(schedule, devices=tuple(tuple(r) for r in rows)), T)


@pytest.mark.parametrize("make, message", [
    (lambda: Chunk(0, 0, "X"), "kind 'X' is unknown"),
    (lambda: Chunk(-1, 0, "F"), "stage -1"),
    (lambda: Chunk(0, 0, "F", direction=2), "direction 2"),
    (lambda: Chunk(0, 0, "FB"), "needs backward="),
    (lambda: Chunk(0, 0, "FB", backward=Chunk(1, 0, "B", split=True)), "needs backward="),
    (lambda: Chunk(0, 0, "F", split=True), "split=True applies to kind 'B' only"),
    (lambda: ChunkTimes(F=1, B=1, W=1, FB=2), "W=1 must be < B=1"),
    (lambda: ChunkTimes(F=0, B=2, W=1, FB=2), "ChunkTimes.F is 0"),
    (lambda: ChunkTimes(F=1, B=2, W=1, FB="2"), "ChunkTimes.FB is '2'"),
    (lambda: dualpipe(4, 9), "microbatches=9 with pp=4; expected an even number >= 8"),
    (lambda: dualpipe(4, 6), "expected an even number >= 8"),
    (lambda: dualpipe(5, 20), "pp=5; expected an even number"),
    (lambda: dualpipev(8, 7), "microbatches=7 with pp=8; expected >= 8"),
    (lambda: zb1p(4, 3), "microbatches=3 with pp=4; expected >= 4"),
    (lambda: one_f_one_b(0, 3), "pp=0"),
    (lambda: one_f_one_b(2.0, 3), "pp=2.0; expected an int"),
])
def test_bad_inputs_name_the_value(make, message):
    with pytest.raises(ScheduleError, match=message):
        make()

"""Place a schedule's chunks in time (as soon as device order and dependencies allow) and check the result.

Dependencies (one table, DEPENDENCIES, used by both the simulator and the checker):
- F(d, s, m) needs F(d, s-1, m)            the activation from the previous stage (s > 0);
- B(d, s, m) needs F(d, s, m), B(d, s+1, m) its own forward and the gradient from the next stage (s < PP-1);
- W(d, s, m) needs B(d, s, m)              the output gradient computed by its split B.
Devices run their lists strictly in order, one chunk at a time; an "FB" chunk starts both its ops together and ends
both after F&B. Communication is free (the report's Table 2 counts compute only).
"""
from __future__ import annotations

import math
from collections import Counter

from harness.pipeline.model import (
    Chunk,
    ChunkTimes,
    DeadlockError,
    DependencyError,
    Placed,
    Schedule,
    ScheduleError,
    Timeline,
    op_label,
)


def _f_deps(direction, stage, microbatch, stages):
    return [("F", direction, stage - 1, microbatch)] if stage > 0 else []


def _b_deps(direction, stage, microbatch, stages):
    deps = [("F", direction, stage, microbatch)]
    if stage < stages - 1:
        deps.append(("B", direction, stage + 1, microbatch))
    return deps


def _w_deps(direction, stage, microbatch, stages):
    return [("B", direction, stage, microbatch)]


DEPENDENCIES = {"F": _f_deps, "B": _b_deps, "W": _w_deps}


def op_dependencies(op, stages: int) -> list[tuple[str, int, int, int]]:
    """The ops that must end before `op` (kind, direction, stage, microbatch) may start."""
    kind, direction, stage, microbatch = op
    return DEPENDENCIES[kind](direction, stage, microbatch, stages)


def validate(schedule: Schedule) -> None:
    """Check a schedule is complete and consistent before simulating it.

    Raises:
        ScheduleError: a stage index out of range, an op run twice, a (direction, stage) spread over two devices,
            a micro-batch missing its F or B, a split B without its W (or a W without a split B).
    """
    pp = schedule.stages
    seen: dict[tuple, tuple[int, int]] = {}
    home: dict[tuple[int, int], int] = {}
    split_b = set()
    for device, row in enumerate(schedule.devices):
        for index, chunk in enumerate(row):
            if not isinstance(chunk, Chunk):
                raise ScheduleError(f"{schedule.method}: device {device} entry {index} is {chunk!r}; expected a Chunk")
            # an FB chunk (the only kind with a backward half) is checked as its F and its B
            parts = [chunk] if chunk.backward is None else [Chunk(chunk.stage, chunk.microbatch, "F", chunk.direction),
                                                            chunk.backward]
            for part in parts:
                op = part.ops()[0]
                if part.stage >= pp:
                    raise ScheduleError(f"{schedule.method}: device {device} entry {index} {chunk.label()} has stage "
                                        f"{part.stage}; expected < PP={pp}")
                if op in seen:
                    raise ScheduleError(f"{schedule.method}: {op_label(op)} runs twice (device {seen[op][0]} entry "
                                        f"{seen[op][1]} and device {device} entry {index}); expected once")
                seen[op] = (device, index)
                key = (part.direction, part.stage)
                if home.setdefault(key, device) != device:
                    raise ScheduleError(f"{schedule.method}: direction {key[0]} stage {key[1]} runs on devices "
                                        f"{home[key]} and {device}; a stage's work must stay on one device")
                if part.kind == "B" and part.split:
                    split_b.add(op[1:])
    for (kind, direction, stage, microbatch) in list(seen):
        if kind == "F" and ("B", direction, stage, microbatch) not in seen:
            raise ScheduleError(f"{schedule.method}: F(d{direction} s{stage} mb{microbatch}) has no B")
        if kind == "B" and ("F", direction, stage, microbatch) not in seen:
            raise ScheduleError(f"{schedule.method}: B(d{direction} s{stage} mb{microbatch}) has no F")
        has_w = ("W", direction, stage, microbatch) in seen
        if kind == "B" and ((direction, stage, microbatch) in split_b) != has_w:
            what = "is split but has no W chunk" if not has_w else "is not split but also has a W chunk"
            raise ScheduleError(f"{schedule.method}: B(d{direction} s{stage} mb{microbatch}) {what}")
        if kind == "W" and ("B", direction, stage, microbatch) not in seen:
            raise ScheduleError(f"{schedule.method}: W(d{direction} s{stage} mb{microbatch}) has no B")
    for op in seen:
        for dep in op_dependencies(op, pp):
            if dep not in seen:
                raise ScheduleError(f"{schedule.method}: {op_label(op)} needs {op_label(dep)}, which no device runs")


def simulate(schedule: Schedule, times: ChunkTimes, check: bool = True) -> Timeline:
    """Start every chunk as early as its device's order and its dependencies allow.

    Each device runs its list in order; a chunk starts at max(end of the device's previous chunk, end of every
    dependency of every op it executes). Devices are advanced round-robin until none can move (this gives the same
    times as an event-driven simulation, since a chunk's start depends only on ends already fixed).

    Args:
        schedule: per-device chunk lists (see harness.pipeline.schedules).
        times: chunk execution times.
        check: re-verify the produced timeline with check_timeline (default True).

    Returns:
        The Timeline.

    Raises:
        ScheduleError: the schedule is incomplete or inconsistent (see validate).
        DeadlockError: no device can start its next chunk; names each stuck chunk and what it waits for.
    """
    validate(schedule)
    pp = schedule.stages
    end_of: dict[tuple, float] = {}
    rows: list[list[Placed]] = [[] for _ in schedule.devices]
    head = [0] * len(schedule.devices)
    free = [0.0] * len(schedule.devices)
    remaining = sum(len(r) for r in schedule.devices)
    while remaining:
        progress = False
        for device, row in enumerate(schedule.devices):
            while head[device] < len(row):
                chunk = row[head[device]]
                deps = [dep for op in chunk.ops() for dep in op_dependencies(op, pp)]
                if any(dep not in end_of for dep in deps):
                    break
                start = max([free[device]] + [end_of[dep] for dep in deps])
                end = start + times.duration(chunk)
                for op in chunk.ops():
                    end_of[op] = end
                rows[device].append(Placed(device, head[device], chunk, start, end))
                free[device] = end
                head[device] += 1
                remaining -= 1
                progress = True
        if not progress:
            stuck = []
            for device, row in enumerate(schedule.devices):
                if head[device] < len(row):
                    chunk = row[head[device]]
                    missing = [op_label(dep) for op in chunk.ops() for dep in op_dependencies(op, pp)
                               if dep not in end_of]
                    stuck.append(f"device {device} entry {head[device]} {chunk.label()} waits for {', '.join(missing)}")
            raise DeadlockError(f"{schedule.method}: deadlock, no device can proceed: " + "; ".join(stuck))
    timeline = Timeline(schedule, times, tuple(tuple(r) for r in rows))
    if check:
        check_timeline(timeline)
    return timeline


def check_timeline(timeline: Timeline) -> None:
    """Verify a timeline independently of how it was produced.

    Checks: every chunk of the schedule is placed exactly once, per device in list order, without overlap, for exactly
    its duration; every dependency of every op ends no later than the chunk executing the op starts.

    Raises:
        DependencyError: naming the chunk, its device and start, and the violated dependency with its end.
        ScheduleError: the timeline does not match its schedule.
    """
    schedule, times = timeline.schedule, timeline.times
    if len(timeline.placed) != len(schedule.devices):
        raise ScheduleError(f"{schedule.method}: timeline has {len(timeline.placed)} device rows; schedule has "
                            f"{len(schedule.devices)}")
    placed_of: dict[tuple, Placed] = {}
    for device, (row, chunks) in enumerate(zip(timeline.placed, schedule.devices, strict=True)):
        if [p.chunk for p in row] != list(chunks):
            raise ScheduleError(f"{schedule.method}: device {device}'s placed chunks differ from its schedule list")
        previous_end = None
        for p in row:
            if p.device != device:
                raise ScheduleError(f"{schedule.method}: {p.chunk.label()} is in device {device}'s row but says "
                                    f"device {p.device}")
            # NOTE: end = start + duration in floating point, so end - start can differ from the duration in the last
            # bits for non-integer times (e.g. measured microseconds); compare with a relative tolerance.
            if not math.isclose(p.end - p.start, times.duration(p.chunk), rel_tol=1e-9, abs_tol=1e-12 * abs(p.end)):
                raise ScheduleError(f"{schedule.method}: device {device} {p.chunk.label()} runs {p.end - p.start}; "
                                    f"expected {times.duration(p.chunk)}")
            if previous_end is not None and p.start < previous_end:
                raise DependencyError(f"{schedule.method}: device {device} entry {p.index} {p.chunk.label()} starts "
                                      f"at {p.start}, before the device's previous chunk ends at {previous_end}")
            previous_end = p.end
            for op in p.chunk.ops():
                placed_of[op] = p
    counts = Counter(op for row in schedule.devices for c in row for op in c.ops())
    duplicated = [op_label(op) for op, n in counts.items() if n > 1]
    if duplicated:
        raise ScheduleError(f"{schedule.method}: ops placed more than once: {', '.join(duplicated[:5])}")
    for op, p in placed_of.items():
        for dep in op_dependencies(op, schedule.stages):
            q = placed_of.get(dep)
            if q is None:
                raise DependencyError(f"{schedule.method}: device {p.device} entry {p.index} {p.chunk.label()} needs "
                                      f"{op_label(dep)}, which is not in the timeline")
            if q.end > p.start:
                raise DependencyError(
                    f"{schedule.method}: device {p.device} entry {p.index} {p.chunk.label()} starts at {p.start} "
                    f"but its dependency {op_label(dep)} (device {q.device} entry {q.index}) ends at {q.end}")

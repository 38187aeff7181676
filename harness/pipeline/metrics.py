"""What a timeline costs: makespan, bubble per device, peak parameter and activation memory (Table 2's columns).

Definitions (chosen so that they reproduce the DeepSeek-V3 report's Table 2; see tests/harness/pipeline):
- busy(d): the sum of the durations of device d's chunks (an FB chunk counts F&B once: that is its useful compute).
- bubble(d) = makespan - busy(d): the time device d spends idle within the step, i.e. its idle time in excess of
  its useful compute. The schedule's bubble is the largest over devices. 1F1B and ZB1P give every device the same
  work, so every device has the same bubble; in DualPipe/DualPipeV the devices nearest the middle overlap the most
  F/B pairs, are the least busy and carry the largest bubble, which is the one the formula gives.
- parameters(d): the number of distinct model stages device d runs, in units of one stage's parameters.
- activations(d): the peak number of (direction, stage, micro-batch) activations held on device d at once; one is
  held from the start of the chunk running its F until the end of the chunk running its B (its W needs only the
  small saved input-gradient, which the report does not count). At equal times a release precedes an acquire.
  The report's Activation column is the first device's peak (also the largest over devices).
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.pipeline.model import Timeline


@dataclass(frozen=True)
class Metrics:
    """Table 2's quantities for one timeline, plus per-device detail."""

    method: str
    makespan: float
    busy: tuple[float, ...]
    bubble_per_device: tuple[float, ...]
    parameters_per_device: tuple[int, ...]
    activations_per_device: tuple[int, ...]

    @property
    def bubble(self) -> float:
        return max(self.bubble_per_device)

    @property
    def parameter_x(self) -> int:
        return max(self.parameters_per_device)

    @property
    def activation_first(self) -> int:
        return self.activations_per_device[0]

    @property
    def activation_max(self) -> int:
        return max(self.activations_per_device)


def _peak_activations(row) -> int:
    acquired, released = {}, {}
    for p in row:
        for kind, direction, stage, microbatch in p.chunk.ops():
            if kind == "F":
                acquired[(direction, stage, microbatch)] = p.start
            elif kind == "B":
                released[(direction, stage, microbatch)] = p.end
    # NOTE: (time, +1/-1) sorts releases (-1) before acquires (+1) at the same instant.
    events = sorted([(t, 1) for t in acquired.values()] + [(t, -1) for t in released.values()])
    level = peak = 0
    for _, delta in events:
        level += delta
        peak = max(peak, level)
    return peak


def measure(timeline: Timeline) -> Metrics:
    """Makespan, bubble per device, parameter and activation peaks of a simulated timeline."""
    makespan = timeline.makespan
    busy = tuple(sum(p.end - p.start for p in row) for row in timeline.placed)
    return Metrics(
        method=timeline.schedule.method,
        makespan=makespan,
        busy=busy,
        bubble_per_device=tuple(makespan - b for b in busy),
        parameters_per_device=tuple(
            len({stage for p in row for (_, _, stage, _) in p.chunk.ops()}) for row in timeline.placed),
        activations_per_device=tuple(_peak_activations(row) for row in timeline.placed),
    )

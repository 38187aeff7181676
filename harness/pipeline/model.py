"""Data of the pipeline-schedule simulator: chunks, chunk times, schedules, timelines, and its errors.

Vocabulary (DeepSeek-V3 report, section 3.2.1, Table 2):
- a *stage* is one slice of the model's layers; PP stages in all, numbered 0..PP-1 in the order a micro-batch's
  forward pass visits them. A *direction* is a stream of micro-batches: DualPipe feeds direction 0 from device 0 and
  direction 1 from device PP-1; both run the same model, so "stage s" means the same parameters in either direction.
- a *chunk* is one unit of device work: "F" (forward of one stage for one micro-batch), "B" (backward), "W" (the
  weight-gradient half of a backward whose B was split, zero-bubble style), or "FB" (a forward of one micro-batch and
  a backward of another, mutually overlapped on one device and taking F&B time).
- an *op* is one (kind, direction, stage, microbatch) step of the training graph; an "FB" chunk executes two ops.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.errors import PtxmoeError

KINDS = ("F", "B", "W", "FB")


class ScheduleError(PtxmoeError):
    """A schedule or its inputs are malformed (bad chunk, missing or duplicated work, unsupported sizes)."""


class DeadlockError(ScheduleError):
    """No device can start its next chunk: every head-of-list chunk waits on work that can never finish first."""


class DependencyError(ScheduleError):
    """A timeline starts a chunk before one of its dependencies has ended (or breaks device order)."""


@dataclass(frozen=True)
class Chunk:
    """One unit of work on a device.

    Args:
        stage: model stage (0..PP-1) of the forward/backward/weight op; for "FB" the forward half's stage.
        microbatch: micro-batch index within its direction; for "FB" the forward half's micro-batch.
        kind: "F", "B", "W" or "FB".
        direction: 0 or 1 (DualPipe's two micro-batch streams); 0 for single-direction schedules.
        backward: for "FB" only, the overlapped backward half (a kind-"B", non-split chunk).
        split: for "B" only, True when its weight gradient is deferred to a separate "W" chunk (zero-bubble split);
            the B then computes only the input gradient and takes B - W.
    """

    stage: int
    microbatch: int
    kind: str
    direction: int = 0
    backward: Chunk | None = None
    split: bool = False

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ScheduleError(f"chunk kind {self.kind!r} is unknown; expected one of {', '.join(KINDS)}")
        if self.direction not in (0, 1):
            raise ScheduleError(f"chunk {self.label()} has direction {self.direction!r}; expected 0 or 1")
        for name in ("stage", "microbatch"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ScheduleError(f"chunk {self.kind} has {name} {value!r}; expected an int >= 0")
        if self.kind == "FB":
            b = self.backward
            if b is None or b.kind != "B" or b.split:
                raise ScheduleError(
                    f"chunk {self.label()} needs backward= a non-split kind-'B' chunk (its overlapped half); got {b!r}")
        elif self.backward is not None:
            raise ScheduleError(f"chunk {self.label()} of kind {self.kind} cannot carry backward={self.backward!r}")
        if self.split and self.kind != "B":
            raise ScheduleError(f"chunk {self.label()}: split=True applies to kind 'B' only")

    def ops(self) -> tuple[tuple[str, int, int, int], ...]:
        """The graph ops this chunk executes, each (kind, direction, stage, microbatch)."""
        if self.backward is not None:  # kind "FB", the only kind with a backward half (__post_init__)
            return (("F", self.direction, self.stage, self.microbatch),) + self.backward.ops()
        return ((self.kind, self.direction, self.stage, self.microbatch),)

    def label(self) -> str:
        """Short human name, e.g. "F(d0 s2 mb5)" or "FB(F d0 s1 mb4 + B d1 s6 mb0)"."""
        if self.kind == "FB" and self.backward is not None:
            b = self.backward
            return (f"FB(F d{self.direction} s{self.stage} mb{self.microbatch} + "
                    f"B d{b.direction} s{b.stage} mb{b.microbatch})")
        suffix = " split" if self.split else ""
        return f"{self.kind}(d{self.direction} s{self.stage} mb{self.microbatch}{suffix})"


def op_label(op: tuple[str, int, int, int]) -> str:
    kind, direction, stage, microbatch = op
    return f"{kind}(d{direction} s{stage} mb{microbatch})"


@dataclass(frozen=True)
class ChunkTimes:
    """Execution times of the chunk kinds, in any one time unit.

    Args:
        F: one forward chunk.
        B: one *full* backward chunk (input and weight gradients); a split B takes B - W.
        W: one "backward for weights" chunk.
        FB: one pair of mutually overlapped forward and backward chunks (the report's F&B).
    """

    F: float
    B: float
    W: float
    FB: float

    def __post_init__(self):
        for name in ("F", "B", "W", "FB"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ScheduleError(f"ChunkTimes.{name} is {value!r}; expected a number > 0")
        if not self.W < self.B:
            raise ScheduleError(
                f"ChunkTimes.W={self.W!r} must be < B={self.B!r} (B is the full backward; W is part of it)")

    def duration(self, chunk: Chunk) -> float:
        """How long `chunk` runs."""
        if chunk.kind == "B":
            return self.B - self.W if chunk.split else self.B
        return {"F": self.F, "W": self.W, "FB": self.FB}[chunk.kind]


@dataclass(frozen=True)
class Schedule:
    """Per-device ordered chunk lists of one method.

    Args:
        method: "1F1B", "ZB1P", "DualPipe" or "DualPipeV".
        stages: PP, the number of model stages.
        microbatches: micro-batches in all (both directions together for DualPipe).
        devices: devices[d] is the ordered tuple of chunks device d runs.
    """

    method: str
    stages: int
    microbatches: int
    devices: tuple[tuple[Chunk, ...], ...]


@dataclass(frozen=True)
class Placed:
    """One chunk placed in time on a device; `index` is its position in the device's list."""

    device: int
    index: int
    chunk: Chunk
    start: float
    end: float


@dataclass(frozen=True)
class Timeline:
    """A simulated schedule: every chunk with its start and end, grouped per device in list order."""

    schedule: Schedule
    times: ChunkTimes
    placed: tuple[tuple[Placed, ...], ...]

    @property
    def makespan(self) -> float:
        return max(p.end for row in self.placed for p in row) - min(p.start for row in self.placed for p in row)

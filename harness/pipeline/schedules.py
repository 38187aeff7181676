"""Schedule builders: per-device ordered chunk lists for 1F1B, ZB1P, DualPipe and DualPipeV.

Each builder returns a Schedule; simulate() places it in time. The DualPipe and DualPipeV lists follow the eight
steps of deepseek-ai/DualPipe's `DualPipe.step` / `DualPipeV.step` (dualpipe/dualpipe.py, dualpipe/dualpipev.py):
1 nF0, 2 nF0F1, 3 nB1W1F1 (zero bubble), 4 nF0B1F1B0 (main, overlapped), 5 nB1F1B0, 6 nB1B0 (second half
zero bubble), 7 nWB0, 8 nW; "phase 0" is the direction in which a device sits nearer the entry of the pipeline.
"""
from __future__ import annotations

from collections import deque

from harness.pipeline.model import Chunk, Schedule, ScheduleError

# Upper bounds: the simulator keeps every chunk of every device in memory (~pp * microbatches * 3 chunks per method;
# 8 x 2000 takes ~9 s for the four methods), so sizes beyond these are refused instead of growing without end.
MAX_PP = 256
MAX_MICROBATCHES = 4096
MAX_PP_TIMES_MICROBATCHES = 16384

# method -> its size rules at `pp` stages (keyword arguments of _check_sizes)
SIZE_RULES = {
    "1F1B": lambda pp: {},
    "ZB1P": lambda pp: {"min_mb": pp},
    "DualPipe": lambda pp: {"min_pp": 2, "even_pp": True, "min_mb": 2 * pp, "even_mb": True},
    "DualPipeV": lambda pp: {"min_pp": 2, "even_pp": True, "min_mb": pp},
}


def check_sizes(method: str, pp: int, microbatches: int) -> None:
    """ScheduleError when `method` cannot run `pp` stages and `microbatches` micro-batches (or they exceed the
    bounds MAX_PP, MAX_MICROBATCHES, MAX_PP_TIMES_MICROBATCHES); the message names the method and the limit."""
    if method not in SIZE_RULES:
        raise ScheduleError(f"unknown pipeline method {method!r}; expected one of {', '.join(SIZE_RULES)}")
    _check_sizes(method, pp, microbatches, **SIZE_RULES[method](pp) if isinstance(pp, int) else {})


def _check_sizes(method: str, pp: int, microbatches: int, *, min_pp: int = 1, even_pp=False, min_mb=1, even_mb=False):
    for name, value in (("pp", pp), ("microbatches", microbatches)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScheduleError(f"{method}: {name}={value!r}; expected an int")
    if pp < min_pp or (even_pp and pp % 2):
        raise ScheduleError(f"{method}: pp={pp}; expected {'an even number ' if even_pp else ''}>= {min_pp}")
    if microbatches < min_mb or (even_mb and microbatches % 2):
        raise ScheduleError(f"{method}: microbatches={microbatches} with pp={pp}; expected "
                            f"{'an even number ' if even_mb else ''}>= {min_mb}")
    if pp > MAX_PP:
        raise ScheduleError(f"{method}: pp={pp}; expected <= {MAX_PP} (the simulator keeps every chunk in memory)")
    if microbatches > MAX_MICROBATCHES:
        raise ScheduleError(f"{method}: microbatches={microbatches}; expected <= {MAX_MICROBATCHES} (the simulator "
                            f"keeps every chunk in memory)")
    if pp * microbatches > MAX_PP_TIMES_MICROBATCHES:
        raise ScheduleError(f"{method}: pp={pp} x microbatches={microbatches} = {pp * microbatches}; expected <= "
                            f"{MAX_PP_TIMES_MICROBATCHES} (the simulator keeps every chunk in memory)")


def one_f_one_b(pp: int, microbatches: int) -> Schedule:
    """Megatron's 1F1B: device s runs PP-s-1 warm-up forwards, then alternates F and full B, then drains B's.

    Args:
        pp: pipeline stages (= devices), >= 1.
        microbatches: micro-batches, >= 1.
    """
    check_sizes("1F1B", pp, microbatches)
    devices = []
    for s in range(pp):
        warmup = min(pp - s - 1, microbatches)
        row = [Chunk(s, m, "F") for m in range(warmup)]
        for m in range(microbatches - warmup):
            row += [Chunk(s, warmup + m, "F"), Chunk(s, m, "B")]
        row += [Chunk(s, m, "B") for m in range(microbatches - warmup, microbatches)]
        devices.append(tuple(row))
    return Schedule("1F1B", pp, microbatches, tuple(devices))


def zb1p(pp: int, microbatches: int) -> Schedule:
    """Zero-bubble ZB-H1 ("ZB1P", Qi et al. 2023): 1F1B's order and memory, each B split into B (input grad) and W.

    Device s runs W(m) right after B(m + s): device 0 computes each weight gradient at once, device PP-1 defers
    PP-1 of them, and every device ends with its s+1 deferred W's. The later a device, the earlier its B's reach the
    devices before it, which is what shortens 1F1B's bubble by 2(PP-1)W.

    Args:
        pp: pipeline stages (= devices), >= 1.
        microbatches: micro-batches, >= pp (so each device's deferral fits).
    """
    check_sizes("ZB1P", pp, microbatches)
    devices = []
    for s in range(pp):
        warmup = pp - s - 1
        row = [Chunk(s, m, "F") for m in range(warmup)]
        pending: deque[int] = deque()

        def backward(m, row=row, pending=pending, stage=s, lag=s):
            row.append(Chunk(stage, m, "B", split=True))
            pending.append(m)
            if len(pending) > lag:
                row.append(Chunk(stage, pending.popleft(), "W"))

        for m in range(microbatches - warmup):
            row.append(Chunk(s, warmup + m, "F"))
            backward(m)
        for m in range(microbatches - warmup, microbatches):
            backward(m)
        row += [Chunk(s, m, "W") for m in pending]
        devices.append(tuple(row))
    return Schedule("ZB1P", pp, microbatches, tuple(devices))


class _Rank:
    """One device's list builder for the DualPipe family: per-phase chunk counters and the W FIFO of zero bubble."""

    def __init__(self, stage_of_phase, direction_of_phase):
        self.stage_of_phase = stage_of_phase
        self.direction_of_phase = direction_of_phase
        self.next_f = [0, 0]
        self.next_b = [0, 0]
        # (direction, stage, microbatch) of split B's whose W is still due, FIFO
        self.weights: deque[tuple[int, int, int]] = deque()
        self.row: list[Chunk] = []

    def _take(self, counters, phase):
        m = counters[phase]
        counters[phase] += 1
        return m

    def f_chunk(self, phase) -> Chunk:
        return Chunk(self.stage_of_phase[phase], self._take(self.next_f, phase), "F", self.direction_of_phase[phase])

    def b_chunk(self, phase, split=False) -> Chunk:
        chunk = Chunk(self.stage_of_phase[phase], self._take(self.next_b, phase), "B", self.direction_of_phase[phase],
                      split=split)
        if split:
            self.weights.append((chunk.direction, chunk.stage, chunk.microbatch))
        return chunk

    def forward(self, phase):
        self.row.append(self.f_chunk(phase))

    def backward(self, phase, zero_bubble=False):
        self.row.append(self.b_chunk(phase, zero_bubble))

    def forward_backward(self, f_phase, b_phase):
        f = self.f_chunk(f_phase)
        self.row.append(Chunk(f.stage, f.microbatch, "FB", f.direction, backward=self.b_chunk(b_phase)))

    def weight(self):
        direction, stage, microbatch = self.weights.popleft()
        self.row.append(Chunk(stage, microbatch, "W", direction))


def _dualpipe_steps(rank: _Rank, half_ranks: int, half_rank: int, chunks_per_phase: int, middle: bool) -> None:
    """The eight steps of DualPipe.step / DualPipeV.step for one device (phases as in the reference)."""
    for _ in range((half_ranks - half_rank - 1) * 2):                # step 1: nF0
        rank.forward(0)
    for _ in range(half_rank + 1):                                   # step 2: nF0F1
        rank.forward(0)
        rank.forward(1)
    for _ in range(half_ranks - half_rank - 1):                      # step 3: nB1W1F1 (zero bubble)
        rank.backward(1, zero_bubble=True)
        rank.weight()
        rank.forward(1)
    for i in range(chunks_per_phase - 2 * half_ranks + half_rank + 1):  # step 4: nF0B1F1B0 (main)
        if i == 0 and middle:
            # NOTE: the reference does not overlap this first pair on the middle device(s), "to further reduce bubble".
            rank.forward(0)
            rank.backward(1)
        else:
            rank.forward_backward(0, 1)
        rank.forward_backward(1, 0)
    for _ in range(half_ranks - half_rank - 1):                      # step 5: nB1F1B0
        rank.backward(1)
        rank.forward_backward(1, 0)
    steps_6 = half_rank + 1                                          # step 6: nB1B0, second half zero bubble
    zero_bubble = False
    for i in range(steps_6):
        if i == steps_6 // 2 and half_rank % 2 == 1:
            zero_bubble = True
        rank.backward(1, zero_bubble)
        if i == steps_6 // 2 and half_rank % 2 == 0:
            zero_bubble = True
        rank.backward(0, zero_bubble)
    for _ in range(half_ranks - half_rank - 1):                      # step 7: nWB0
        rank.weight()
        rank.backward(0, zero_bubble=True)
    for _ in range(half_rank + 1):                                   # step 8: nW
        rank.weight()
    if rank.weights:
        raise ScheduleError(f"DualPipe step builder left {len(rank.weights)} W chunks unscheduled (internal error)")


def dualpipe(pp: int, microbatches: int) -> Schedule:
    """DualPipe (DeepSeek-V3): PP devices, micro-batches fed from both ends, device r holds stages r and PP-1-r.

    Direction 0 enters at device 0 (its stage s runs on device s), direction 1 at device PP-1 (its stage s runs on
    device PP-1-s); each direction carries microbatches/2 micro-batches, numbered 0..microbatches/2-1.

    Args:
        pp: pipeline stages (= devices), even and >= 2.
        microbatches: micro-batches of both directions together; even and >= 2*pp (the reference's requirement).
    """
    check_sizes("DualPipe", pp, microbatches)
    half = pp // 2
    devices = []
    for r in range(pp):
        second_half = r >= half
        # phase 0 is the direction in which this device is stage min(r, PP-1-r): direction 0 for the first half.
        directions = (1, 0) if second_half else (0, 1)
        stages = tuple(r if d == 0 else pp - 1 - r for d in directions)
        rank = _Rank(stages, directions)
        _dualpipe_steps(rank, half, min(r, pp - 1 - r), microbatches // 2, middle=r in (half - 1, half))
        devices.append(tuple(rank.row))
    return Schedule("DualPipe", pp, microbatches, tuple(devices))


def dualpipev(pp: int, microbatches: int) -> Schedule:
    """DualPipeV ("cut-in-half" DualPipe): PP stages laid out in a V over PP/2 devices, one micro-batch direction.

    Device r holds stage r (phase 0, on the way down) and stage PP-1-r (phase 1, on the way back); the last device
    holds the two middle stages. Every stage sees every micro-batch.

    Args:
        pp: pipeline stages, even and >= 2 (devices = pp/2, as in the DualPipe README's comparison at equal PP).
        microbatches: micro-batches, >= pp (the reference's num_chunks >= 2 * num_ranks; odd counts are allowed).
    """
    check_sizes("DualPipeV", pp, microbatches)
    devices = pp // 2
    rows = []
    for r in range(devices):
        rank = _Rank((r, pp - 1 - r), (0, 0))
        _dualpipe_steps(rank, devices, r, microbatches, middle=r == devices - 1)
        rows.append(tuple(rank.row))
    return Schedule("DualPipeV", pp, microbatches, tuple(rows))


# method -> builder(pp, microbatches); pp always counts model stages (DualPipeV runs them on pp/2 devices).
BUILDERS = {
    "1F1B": one_f_one_b,
    "ZB1P": zb1p,
    "DualPipe": dualpipe,
    "DualPipeV": dualpipev,
}

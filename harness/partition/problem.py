"""The communication problem of the partition experiment: shapes, seeded inputs, NumPy references and checks.

One MoE layer's all-to-all, on one GPU (the receive buffer stands in for the peers' memory):

    dispatch:  R = T*K copies; copy r = t*K + k sends token t's row:  src_row[r] = t,
               dst_slot[r] = a random permutation of 0..S-1 cut to R entries (S = R + spare slots that no copy
               names, so a kernel that writes outside dst_slot is caught);   recv[dst_slot[r]] = x[src_row[r]]
    combine:   slot[t, k] = a random injective map into 0..S-1, w[t, k] >= 0 (softmax-like, sum 1 per token);
               out[t] = bf16_rn(sum_k w[t, k] * recv[slot[t, k]])

Checks: dispatch bitwise on every recv row (named rows equal the source row, every other row still the poison
bytes); combine normwise relative error <= 1e-2 against float64 (kernels.md's combine tolerance) and no unwritten
(poisoned, NaN) element.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contract.checks import CheckResult, exact, normwise_rel_error, unwritten
from contract.generators import BF16, random_bf16
from harness.errors import InputError

POISON = 0xFF
COMBINE_TOLERANCE = 1e-2


@dataclass(frozen=True)
class CommShapes:
    """Sizes of one dispatch + combine: T tokens of H bf16, K copies each, S = T*K + spare receive slots."""

    T: int
    H: int
    K: int
    spare: int = 0

    def __post_init__(self):
        for name in ("T", "H", "K"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise InputError(f"CommShapes.{name} = {value!r}; expected an integer >= 1")
        if self.H % 8:
            raise InputError(f"CommShapes.H = {self.H}; expected a multiple of 8 (16-byte chunks of bf16)")
        if isinstance(self.spare, bool) or not isinstance(self.spare, (int, np.integer)) or self.spare < 0:
            raise InputError(f"CommShapes.spare = {self.spare!r}; expected an integer >= 0")

    @property
    def R(self) -> int:
        """Row copies the dispatch moves (T*K)."""
        return self.T * self.K

    @property
    def S(self) -> int:
        """Receive slots."""
        return self.R + self.spare

    @property
    def row_bytes(self) -> int:
        return 2 * self.H

    def dispatch_bytes(self) -> int:
        """Fewest bytes the dispatch moves: R rows read and written, plus both index arrays."""
        return 2 * self.R * self.row_bytes + 8 * self.R

    def combine_bytes(self) -> int:
        """Fewest bytes the combine moves: R rows gathered, T rows written, w and slot read."""
        return self.R * self.row_bytes + self.T * self.row_bytes + 8 * self.R

    def combine_flops(self) -> int:
        return 2 * self.R * self.H


def shapes_of(preset, spare: int = 0) -> CommShapes:
    """CommShapes of a harness preset (T, H, K)."""
    return CommShapes(int(preset.T), int(preset.H), int(preset.K), spare)


def dispatch_inputs(shapes: CommShapes, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """x bf16[T,H], src_row i32[R] (= r // K), dst_slot i32[R] (distinct slots of S, random order)."""
    return {
        "x": random_bf16(rng, (shapes.T, shapes.H)),
        "src_row": (np.arange(shapes.R, dtype=np.int64) // shapes.K).astype(np.int32),
        "dst_slot": rng.permutation(shapes.S)[: shapes.R].astype(np.int32),
    }


def combine_inputs(shapes: CommShapes, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """recv bf16[S,H], w f32[T,K] (positive, rows sum to 1), slot i32[T,K] (distinct slots of S)."""
    logits = rng.standard_normal((shapes.T, shapes.K))
    w = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return {
        "recv": random_bf16(rng, (shapes.S, shapes.H)),
        "w": w.astype(np.float32),
        "slot": rng.permutation(shapes.S)[: shapes.R].reshape(shapes.T, shapes.K).astype(np.int32),
    }


def poisoned(shape, dtype=BF16) -> np.ndarray:
    """What an output buffer holds before a kernel runs (every byte POISON)."""
    out = np.empty(shape, dtype)
    out.view(np.uint8).fill(POISON)
    return out


def dispatch_reference(inputs: dict, shapes: CommShapes) -> np.ndarray:
    """recv after the dispatch, starting from a poisoned buffer (bit-exact)."""
    recv = poisoned((shapes.S, shapes.H))
    recv[inputs["dst_slot"]] = inputs["x"][inputs["src_row"]]
    return recv


def combine_reference(inputs: dict) -> np.ndarray:
    """out = sum_k w[t,k] * recv[slot[t,k]] in float64 (not rounded)."""
    recv = inputs["recv"].astype(np.float64)
    return np.einsum("tk,tkh->th", inputs["w"].astype(np.float64), recv[inputs["slot"]])


def check_dispatch(recv: np.ndarray, inputs: dict, shapes: CommShapes) -> CheckResult:
    """Bitwise: every named slot holds its source row, every other slot is untouched (still poison)."""
    ok, msg = exact("recv", recv, dispatch_reference(inputs, shapes))
    return CheckResult(ok, "comm_dispatch", msg or "recv bitwise equal (named rows copied, others untouched)",
                       {"bitwise": ok})


def check_combine(out: np.ndarray, inputs: dict) -> CheckResult:
    """No unwritten element, normwise relative error <= COMBINE_TOLERANCE against float64."""
    failures = []
    ok_written, msg = unwritten("out", out)
    if not ok_written:
        failures.append(msg)
    err = normwise_rel_error(out, combine_reference(inputs))
    if not err <= COMBINE_TOLERANCE:
        failures.append(f"out: normwise relative error {err:.3e} > {COMBINE_TOLERANCE:g}")
    return CheckResult(not failures, "comm_combine", "; ".join(failures) or f"normwise relative error {err:.2e}",
                       {"normwise_rel": err})


def run_comm(impl, backend, op: str, shapes: CommShapes, rng: np.random.Generator, ctas: int, **launch) -> tuple:
    """Fresh inputs, poisoned output, one launch of `impl` (cuda_impl.comm or ptx_impl.comm), check.

    Returns:
        (CheckResult, LaunchRecord).
    Raises:
        InputError: an unknown op.
    """
    if op not in ("dispatch", "combine"):
        raise InputError(f"comm op {op!r}; expected 'dispatch' or 'combine'")
    inputs = dispatch_inputs(shapes, rng) if op == "dispatch" else combine_inputs(shapes, rng)
    args = {name: backend.to_device(np.ascontiguousarray(arr)) for name, arr in inputs.items()}
    out_name, out_shape = ("recv", (shapes.S, shapes.H)) if op == "dispatch" else ("out", (shapes.T, shapes.H))
    args[out_name] = backend.empty(out_shape, BF16, fill_byte=POISON)
    try:
        record = getattr(impl, op)(backend, args, ctas, **launch)
        backend.synchronize()
        out = backend.to_host(args[out_name])
    finally:
        for arr in args.values():
            backend.free(arr)
    result = check_dispatch(out, inputs, shapes) if op == "dispatch" else check_combine(out, inputs)
    return result, record

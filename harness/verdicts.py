"""A cell's verdicts: which pairs of its rows are compared (cell_pairs), and one pair's speedup, interval and call
(_verdict), modelled on sim, measured on gpu."""
from __future__ import annotations

from typing import Any

from harness.implementations import Pair, pairs_of
from harness.run_records import MeasuredTiming, ModelledTiming, Row
from harness.sweep_plan import Item


def timed_verdict(base: Row, impl: Row, basis: str) -> dict | str:
    """The one verdict rule: {speedup, ci_lo, ci_hi, verdict, basis} of `impl` over `base` (speedup = base time /
    impl time), from their modelled times (the model's validated error as the band) or their measured samples
    (bootstrap 95 %); or why there is none (a str). Both rows have run ok."""
    from harness.timing import stats

    a, b = base.timing, impl.timing
    if basis == "modelled":
        if not isinstance(a, ModelledTiming) or not isinstance(b, ModelledTiming) or not a.time_us or not b.time_us:
            errors = [t.error for t in (a, b) if isinstance(t, ModelledTiming) and t.error]
            return "no modelled time: " + (errors[0] if errors else "?")
        bands = [t.model_error.relative for t in (a, b) if t.model_error is not None]
        return stats.compare_modelled(a.time_us, b.time_us, max(bands) if bands else None).as_dict()
    if not isinstance(a, MeasuredTiming) or not isinstance(b, MeasuredTiming):
        return "no measured time"
    return stats.compare(a.device_time_us, b.device_time_us, basis="measured").as_dict()


def _verdict(item: Item, pair: Pair, rows: dict[str, Row], basis: str) -> dict:
    """One pair's verdict of one cell: speedup = baseline time / impl time, its interval and the call, or a reason.

    `rows` maps row slots (implementations, lower rungs "ptx.r1") to rows; a pair whose side is a rung of a laddered
    kernel gets `rung` / `baseline_rung` records ({number, name, of, top}).
    """
    from harness.implementations import HEADLINE_PAIR

    out: dict[str, Any] = {
        "key": item.pair_key(pair), "cell": item.verdict_key, "kernel": item.kernel, "variant": item.variant,
        "preset": item.preset, "skew": item.skew, "pair": pair.name, "impl": pair.impl, "baseline": pair.baseline,
        "headline": pair == HEADLINE_PAIR, "basis": basis, "speedup": None, "ci_lo": None, "ci_hi": None,
        "verdict": None, "reason": None}
    for field_name, slot in (("rung", pair.impl), ("baseline_rung", pair.baseline)):
        if (rung := item.rung(slot)) is not None:
            out[field_name] = rung
    base, impl = rows.get(pair.baseline), rows.get(pair.impl)
    if not base or not impl:
        out["reason"] = "a path has no row"
        return out
    bad = [(slot, r) for slot, r in ((pair.baseline, base), (pair.impl, impl)) if r.status != "ok"]
    if bad:
        out["reason"] = "no verdict: " + "; ".join(f"{slot} {r.status}" + (f" ({r.reason})" if r.reason else "")
                                                   for slot, r in bad)
        return out
    judged = timed_verdict(base, impl, basis)
    if isinstance(judged, str):
        out["reason"] = judged
    else:
        out.update(judged)
    return out


def cell_pairs(item: Item, rows) -> tuple[Pair, ...]:
    """The pairs of one cell whose two row slots are in `rows`: the PAIRS among the implementations, then each
    ladder's rung pairs (every rung against the rung below it, against cpp, against numba)."""
    return pairs_of(rows) + tuple(p for ladder in item.ladders for p in ladder.pairs(rows))

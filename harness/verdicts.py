"""A cell's verdicts: which pairs of its rows are compared (cell_pairs), and one pair's speedup, interval and call
(_verdict), modelled on sim, measured on gpu."""
from __future__ import annotations

from typing import Any

from harness.implementations import Pair, pairs_of
from harness.sweep_plan import Item


def _verdict(item: Item, pair: Pair, rows: dict[str, dict], basis: str) -> dict:
    """One pair's verdict of one cell: speedup = baseline time / impl time, its interval and the call, or a reason.

    `rows` maps row slots (implementations, lower rungs "ptx.r1") to rows; a pair whose side is a rung of a laddered
    kernel gets `rung` / `baseline_rung` records ({number, name, of, top}).
    """
    from harness.implementations import HEADLINE_PAIR
    from harness.timing import stats

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
    bad = [(slot, r) for slot, r in ((pair.baseline, base), (pair.impl, impl)) if r.get("status") != "ok"]
    if bad:
        out["reason"] = "no verdict: " + "; ".join(f"{slot} {r.get('status')}" + (f" ({r['reason']})" if
                                                                                   r.get("reason") else "")
                                                   for slot, r in bad)
        return out
    if basis == "modelled":
        a, b = base["timing"].get("modelled_us"), impl["timing"].get("modelled_us")
        if not a or not b:
            out["reason"] = "no modelled time: " + (base["timing"].get("error") or impl["timing"].get("error") or "?")
            return out
        v = stats.compare_modelled(a, b, stats.modelled_band(base["timing"], impl["timing"]))
    else:
        v = stats.compare(base["timing"]["device_time_us"], impl["timing"]["device_time_us"], basis="measured")
    out.update(v.as_dict())
    return out


def cell_pairs(item: Item, rows) -> tuple[Pair, ...]:
    """The pairs of one cell whose two row slots are in `rows`: the PAIRS among the implementations, then each
    ladder's rung pairs (every rung against the rung below it, against cpp, against numba)."""
    return pairs_of(rows) + tuple(p for ladder in item.ladders for p in ladder.pairs(rows))

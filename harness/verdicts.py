"""A cell's verdicts: which pairs of its rows are compared (cell_pairs), and one pair's speedup, interval and call
(_verdict), modelled on sim, measured on gpu."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from harness.implementations import CPP_SIDE, Pair, pairs_of
from harness.run_records import MeasuredTiming, ModelledTiming, Row
from harness.sweep_plan import Item

# Relative difference under which two modelled times are the same number (they come from one deterministic model).
SAME_TIME_REL = 1e-9


def _digests(row: Row) -> tuple[str, ...]:
    """The sorted "<module digest>:<entry>" of a row's launched kernels (() when its static facts are not recorded,
    or any launch lacks either: then nothing says the code is the same)."""
    kernels = row.static.kernels if row.static is not None else {}
    codes = [f"{k.digest}:{k.entry}" if k.digest and k.entry else "" for k in kernels.values()]
    return tuple(sorted(codes)) if codes and all(codes) else ()


def not_modelled(base: Row, impl: Row) -> str | None:
    """Why two modelled rows cannot be told apart by the model, or None when they can.

    The rule is conservative: the same modelled kernel time (to SAME_TIME_REL) AND the same simulator counters
    (every ncu-named total equal: instructions by class, bytes at every level, conflicts, barriers...). Then the
    model saw the same work, and any real difference between the paths lies in what it does not represent
    (instruction scheduling and latency hiding below its bounds, register allocation, SASS it does not see)."""
    a, b = base.timing, impl.timing
    if not isinstance(a, ModelledTiming) or not isinstance(b, ModelledTiming) or not a.time_us or not b.time_us:
        return None
    if abs(a.time_us - b.time_us) > SAME_TIME_REL * max(a.time_us, b.time_us):
        return None
    counters = [r.sim_counters.total if r.sim_counters is not None else None for r in (base, impl)]
    if not counters[0] or counters[0] != counters[1]:
        return None
    return ("the same modelled time and the same simulator counters: the two paths differ only in what the model "
            "does not represent")


def interval_fits(device_profile: str | None, model_version: str):
    """(fits, basis) of a run's modelled verdicts (ptxsim.model.profile_intervals.run_fits): with a device profile
    file that carries at least 2 measured pairs, the fits of those pairs (the model's ratios on that GPU against the
    measured ones: about 20 s the first time, then cached in this process); otherwise the committed fits of
    `model_version` (interval_table.json) and "published paired rows". A run without a profile loads nothing.

    Raises:
        ProfileError: the profile file cannot be read or is malformed (naming the file and the field)."""
    from pathlib import Path

    from ptxsim.model.profile_intervals import run_fits

    if not device_profile:
        return run_fits(None, model_version)
    from harness.static import analyse_ptx
    from ptxsim.model.profile import load_profile

    return run_fits(load_profile(device_profile), model_version, static_facts=analyse_ptx,
                    name=Path(device_profile).name)


def timed_verdict(base: Row, impl: Row, basis: str, device_profile: str | None = None, fits=None) -> dict | str:
    """The one verdict rule: {speedup, ci_lo, ci_hi, verdict, basis, confidence, interval, ...} of `impl` over `base`
    (speedup = base time / impl time) with its 95% interval: from their modelled times the model's prediction
    interval (ptxsim.model.interval_table) with the fits of interval_fits(device_profile, the rows' model version)
    and `interval_basis` saying which rows they were fitted on (`fits`: given fits instead, e.g. in tests); from their
    measured samples the bootstrap; or why there is none (a str). Both rows have run ok.

    Modelled pairs the model cannot tell apart (not_modelled) are NOT_MODELLED, or SAME with the interval [1, 1]
    when both launched the very same PTX (every kernel's digest equal): the same code is the same time."""
    from harness.timing import stats

    a, b = base.timing, impl.timing
    if basis == "modelled":
        if not isinstance(a, ModelledTiming) or not isinstance(b, ModelledTiming) or not a.time_us or not b.time_us:
            errors = [t.error for t in (a, b) if isinstance(t, ModelledTiming) and t.error]
            return "no modelled time: " + (errors[0] if errors else "?")
        limiters = (a.limiter or stats.UNKNOWN_LIMITER, b.limiter or stats.UNKNOWN_LIMITER)
        version = a.model_version or b.model_version or "v1"
        if a.model_version and b.model_version and a.model_version != b.model_version:
            return f"modelled with two model versions ({a.model_version} and {b.model_version}): no ratio"
        if fits is None:
            fits, fits_basis = interval_fits(device_profile, version)
        else:
            fits_basis = "fits given by the caller"
        judged = stats.compare_modelled(a.time_us, b.time_us, limiters=limiters, model_version=version, fits=fits)
        why = not_modelled(base, impl)
        if why is not None:
            same_code = bool(_digests(base)) and _digests(base) == _digests(impl)
            judged = replace(judged, speedup=1.0, ci_lo=1.0 if same_code else judged.ci_lo,
                             ci_hi=1.0 if same_code else judged.ci_hi, verdict="SAME" if same_code else "NOT_MODELLED",
                             reason="the same PTX on both sides" if same_code else why)
        return {**judged.as_dict(), "interval_basis": fits_basis}
    if not isinstance(a, MeasuredTiming) or not isinstance(b, MeasuredTiming):
        return "no measured time"
    return stats.compare(a.device_time_us, b.device_time_us, basis="measured").as_dict()


def best_cpp(rows: dict[str, Row]) -> str | None:
    """The slot of the fastest C++-side row that ran ok among `rows` (slot -> Row; CPP_SIDE order breaks ties)."""
    timed = [(rows[slot].time_us, i, slot) for i, slot in enumerate(CPP_SIDE)
             if slot in rows and rows[slot].status == "ok" and rows[slot].time_us]
    return min(timed)[2] if timed else None


def _verdict(item: Item, pair: Pair, rows: dict[str, Row], basis: str, device_profile: str | None = None) -> dict:
    """One pair's verdict of one cell: speedup = baseline time / impl time, its interval and the call, or a reason
    (`device_profile`: the run's --device-profile, whose measured pairs the modelled intervals use; timed_verdict).

    `rows` maps row slots (implementations, lower rungs "ptx.r1") to rows; a pair whose side is a rung of a laddered
    kernel gets `rung` / `baseline_rung` records ({number, name, of, top}).
    """
    from harness.implementations import PTX_SIDE

    # the headline of a cell: PTX (its top rung) against the fastest C++-side row that ran ok there
    headline = pair.impl == PTX_SIDE and pair.baseline == best_cpp(rows)
    out: dict[str, Any] = {
        "key": item.pair_key(pair), "cell": item.verdict_key, "kernel": item.kernel, "variant": item.variant,
        "preset": item.preset, "skew": item.skew, "pair": pair.name, "impl": pair.impl, "baseline": pair.baseline,
        "headline": headline, "basis": basis, "speedup": None, "ci_lo": None, "ci_hi": None,
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
    judged = timed_verdict(base, impl, basis, device_profile)
    if isinstance(judged, str):
        out["reason"] = judged
    else:
        out.update(judged)
    return out


def cell_pairs(item: Item, rows) -> tuple[Pair, ...]:
    """The pairs of one cell whose two row slots are in `rows`: the PAIRS among the implementations, then each
    ladder's rung pairs (every rung against the rung below it, against cpp, against numba)."""
    return pairs_of(rows) + tuple(p for ladder in item.ladders for p in ladder.pairs(rows))

"""What a row reports about itself: its run.json `sampling` and `launches` records, and its one-line progress status."""
from __future__ import annotations

from harness.run_records import MeasuredTiming, ModelledTiming, Row, Sampling


def sampling_summary(records, check_errors: dict, policy) -> dict:
    """run.json's row["sampling"]: the policy, whether any launch ran a subset of its CTAs, the smallest simulated
    fraction of any launch, and the share of the output the check covered (1.0 for a full run)."""
    from harness.verify import was_sampled

    fractions = [float(getattr(getattr(r, "stats", None), "sample_fraction", 1.0)) for r in records]
    sampled = was_sampled(records)
    coverage = check_errors.get("coverage") if isinstance(check_errors, dict) else None
    out = {"policy": None if policy is None else policy.text, "sampled": sampled,
           "simulated_fraction": min(fractions) if fractions else 1.0,
           "coverage": float(coverage) if coverage is not None else (None if sampled else 1.0)}
    stages = check_errors.get("stages") if isinstance(check_errors, dict) else None
    if isinstance(stages, dict) and stages:  # a layer checked stage by stage (harness.verify.check_layer_stages)
        checked = {name: s for name, s in stages.items() if s.get("checked")}
        out["stages"] = {"checked": sorted(checked), "not_covered": sorted(set(stages) - set(checked)),
                         "least_checked_coverage": min((float(s["coverage"]) for s in checked.values()),
                                                       default=0.0)}
    return out


def _launch_summary(records) -> list[dict]:
    return [{"name": r.name, "impl": r.impl, "grid": list(r.grid), "block": list(r.block),
             "shared_bytes": r.shared_bytes, "host_seconds": r.host_seconds} for r in records]


def _sampling_text(sampling: Sampling | None) -> str:
    """", sampled: 0.33% of CTAs, check covers 0.33% of the output" for a sampled row, "" for a full one."""
    if sampling is None or not sampling.sampled:
        return ""
    coverage = sampling.coverage
    stages = sampling.stages
    if stages is not None:  # a layer: its outputs' coverage is the least covered stage's (0: no whole token)
        names = len(stages.checked) + len(stages.not_covered)
        missing = f"; not covered: {', '.join(stages.not_covered)}" if stages.not_covered else ""
        return (f", sampled: {sampling.simulated_fraction:.2%} of CTAs, checked stage by stage: "
                f"{len(stages.checked)} of {names} stages, the sampled ones on >= "
                f"{stages.least_checked_coverage:.2%} of their output{missing}")
    return (f", sampled: {sampling.simulated_fraction:.2%} of CTAs"
            + (f", check covers {coverage:.2%} of the output" if coverage is not None else ""))


def _row_status(row: Row) -> str:
    """The progress line's word on a finished row: its status, why when not ok, and its time."""
    why = row.why or ""
    if row.status == "missing":
        return f"MISSING ({why})"
    if row.status == "error":
        return f"ERROR ({why[:200]})"
    if row.status == "skipped":
        return f"SKIPPED ({why[:300]})"
    text = "ok" if row.status == "ok" else f"FAILED ({why[:200]})"
    timing = row.timing
    if isinstance(timing, ModelledTiming):
        t = timing.modelled_us
        # three significant digits: the model's error is several per cent (run.json keeps the full numbers)
        text += f", modelled {t:.3g} us" if t else f", no modelled time ({timing.error})"
        if t and timing.interval_us and timing.launch_us is not None:
            lo, hi = timing.interval_us
            text += f" (95% [{lo:.3g}, {hi:.3g}]) + launch {timing.launch_us:.2g} us"
        text += f", sim wall {timing.sim_wall_s or 0:.1f}s"
        text += _sampling_text(row.sampling)
    elif isinstance(timing, MeasuredTiming):
        text += f", median {timing.device.median_us:.2f} us (n={timing.device.n})"
    return text

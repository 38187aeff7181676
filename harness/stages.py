"""A row's launches by kernels.md stage: the stage of each launch name, and per-stage time from a timing dict."""
from __future__ import annotations

STAGES = ("gate", "align", "permute", "act_quant", "grouped_gemm", "grouped_gemm_fp8", "swiglu", "combine")
GEMM_STAGES = ("grouped_gemm", "grouped_gemm_fp8")  # numbered .up/.down when a row launches two


def stage_names(launch_names: list[str]) -> list[str]:
    """The kernels.md stage of each launch, in launch order: the stage name found in the launch name (longest
    match, so "grouped_gemm_fp8[...]" is grouped_gemm_fp8; another "gemm" counts as grouped_gemm), the launches of
    each GEMM stage numbered "<stage>.up" then "<stage>.down" (the layer's order) when there are two; unmatched names
    are kept as they are."""
    found = []
    for name in launch_names:
        low = name.lower()
        hits = [s for s in STAGES if s in low] or (["grouped_gemm"] if "gemm" in low else [])
        found.append(max(hits, key=len) if hits else name)
    for stage in GEMM_STAGES:
        gemms = [i for i, s in enumerate(found) if s == stage]
        if len(gemms) == 2:
            found[gemms[0]], found[gemms[1]] = f"{stage}.up", f"{stage}.down"
    return found


def stage_times(timing: dict) -> dict[str, float]:
    """Per-stage µs (sum of per-launch times grouped by stage_names) from a sim or gpu timing dict."""
    if timing.get("basis") == "modelled":
        pairs = [(launch["name"], launch["modelled_s"] * 1e6) for launch in timing.get("launches", [])
                 if launch.get("modelled_s") is not None]
    else:
        pairs = [(name, us) for name, us in timing.get("launch_us", [])]
    out: dict[str, float] = {}
    for stage, (_, us) in zip(stage_names([n for n, _ in pairs]), pairs, strict=True):
        out[stage] = out.get(stage, 0.0) + us
    return out

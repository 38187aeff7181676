"""Static facts of the PTX a kernel path launched (no GPU needed): ptxas resources, PTX and SASS histograms.

For every distinct PTX text a backend launched (Numba's compile_ptx output or the hand-written module), ptxas
assembles it for sm_90 (-v report: registers, spills, shared and constant memory), the PTX instruction histogram is
counted from the text, and nvdisasm's SASS histogram from the cubin. Results are cached per PTX text.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import asdict
from typing import Any

_CACHE: dict[str, dict] = {}

# an instruction line: optional guard, then opcode with modifiers; skips directives, labels, braces and comments
_INSTR_RE = re.compile(r"^\s*(?:@!?%?\w+\s+)?([a-z][a-z0-9_]*(?:\.[a-z0-9_:]+)*)\b")


def ptx_histogram(ptx: str, with_modifiers: bool = False) -> dict[str, int]:
    """Count PTX instructions by opcode (`ld`, `mma`, ...), or by full opcode with modifiers when asked."""
    counts: dict[str, int] = {}
    for raw in ptx.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line or line.startswith((".", "{", "}", "(", ")")) or line.endswith(":"):
            continue
        m = _INSTR_RE.match(line)
        if not m:
            continue
        op = m.group(1) if with_modifiers else m.group(1).split(".", 1)[0]
        counts[op] = counts.get(op, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def ptx_digest(ptx: str) -> str:
    return hashlib.sha256(ptx.encode()).hexdigest()[:16]


def analyse_ptx(ptx: str, label: str = "module") -> dict:
    """{digest, ptx_lines, ptx_histogram, ptx_histogram_full, resources: {entry: ResourceUsage dict},
    sass_histogram, sass_loops: {entry: [[LDGs, instructions] of each innermost SASS loop]}, sass_loop_issue: {entry:
    [{stall, classes} of each innermost SASS loop]}, errors} for one PTX
    text. Never raises: toolchain failures are recorded under `errors`."""
    digest = ptx_digest(ptx)
    if digest in _CACHE:
        return _CACHE[digest]
    from harness import toolchain

    facts: dict[str, Any] = {
        "digest": digest, "label": label, "ptx_lines": ptx.count("\n") + 1, "ptx_histogram": ptx_histogram(ptx),
        "ptx_histogram_full": ptx_histogram(ptx, with_modifiers=True), "resources": {}, "sass_histogram": {},
        "sass_loops": {}, "sass_loop_issue": {}, "errors": []}
    try:
        safe = re.sub(r"[^\w.-]", "_", label)[:60]
        # NOTE: sm_90a-only instructions (wgmma, setmaxnreg) do not assemble for sm_90; follow the module's target
        arch = "sm_90a" if re.search(r"^\s*\.target\s+sm_90a\b", ptx, re.M) else "sm_90"
        cubin, usage = toolchain.assemble(ptx, arch=arch, name=f"{safe}.ptx")
        facts["resources"] = {entry: {**asdict(u), "spills": u.spills} for entry, u in usage.items()}
        try:
            from ptxsim.model.sass import sass_loop_issue, sass_loops

            listing = toolchain.sass_listing(cubin, control_words=True)
            facts["sass_histogram"] = dict(sorted(toolchain.sass_histogram(cubin, listing).items(),
                                                  key=lambda kv: (-kv[1], kv[0])))
            facts["sass_loops"] = sass_loops(listing)   # model v2: how much ptxas unrolled each loop
            facts["sass_loop_issue"] = sass_loop_issue(listing)   # model v2: the stall counts of each loop
        except Exception as exc:  # noqa: BLE001 - recorded for the run, not fatal
            facts["errors"].append(f"nvdisasm: {exc}")
    except Exception as exc:  # noqa: BLE001 - recorded for the run, not fatal
        facts["errors"].append(f"ptxas: {exc}")
    _CACHE[digest] = facts
    return facts


def resources_of(ptx: str, entry: str):
    """The toolchain.ResourceUsage of one entry (for occupancy), or None when ptxas failed."""
    from harness.toolchain import ResourceUsage

    facts = analyse_ptx(ptx)
    usage = facts["resources"].get(entry)
    if usage is None:
        return None
    return ResourceUsage(**{k: v for k, v in usage.items() if k != "spills"})


def static_facts(sources: dict[str, tuple[str, str]]) -> dict:
    """Static facts for the kernels a row launched.

    Args:
        sources: {launch name: (ptx text, entry)} as recorded by the backend.
    Returns:
        {"kernels": {launch name: {entry, digest, resources (of that entry), ptx_histogram, sass_histogram, ...}},
         "totals": {registers_max, spills_bytes, shared_bytes_max, ptx_instructions, sass_instructions}}
    """
    kernels = {}
    for name, (ptx, entry) in sources.items():
        facts = analyse_ptx(ptx, name)
        kernels[name] = {"entry": entry, "digest": facts["digest"], "ptx_lines": facts["ptx_lines"],
                         "resources": facts["resources"].get(entry), "ptx_histogram": facts["ptx_histogram"],
                         "ptx_histogram_full": facts["ptx_histogram_full"], "sass_histogram": facts["sass_histogram"],
                         "errors": facts["errors"]}
    res = [k["resources"] for k in kernels.values() if k["resources"]]
    totals = {
        "kernels": len(kernels),
        "registers_max": max((r["registers"] for r in res), default=None),
        "spills_bytes": sum(r["spills"] for r in res),
        "shared_bytes_max": max((r["shared_bytes"] for r in res), default=None),
        "ptx_instructions": sum(sum(k["ptx_histogram"].values()) for k in kernels.values()),
        "sass_instructions": sum(sum(k["sass_histogram"].values()) for k in kernels.values()),
    }
    return {"kernels": kernels, "totals": totals}

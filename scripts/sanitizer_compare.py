#!/usr/bin/env python3
"""compute-sanitizer's findings on the GPU beside ptxsim's sanitizers' on the same rows (docs/gpu-check.md).

    scripts/sanitizer_compare.py SANITIZE_DIR SIM_RUN_DIR

SANITIZE_DIR holds gpu_check.sh's <tool>.log files (memcheck, racecheck, synccheck); SIM_RUN_DIR is a run folder of
`ptxmoe compare --backend sim --sanitize memcheck,racecheck,synccheck` on the same kernels. For each tool it prints
the findings per kernel on each side and "both clean", or what differs. Kernel names are compared by their base name
(compute-sanitizer prints demangled C++ names with arguments, ptxsim the PTX entry).
"""
from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

TOOLS = ("memcheck", "racecheck", "synccheck")
_MARK = "========= "
_NOT_FINDINGS = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "Program hit", "Saved host backtrace",
                 "Target application returned", "LEAK SUMMARY", "Note:")
_AT = re.compile(r"^\s+at (?:0x[0-9a-f]+ in )?(.+?)(?:\+0x[0-9a-f]+)?(?: in .*)?$")
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error")
_IN_HEADLINE = re.compile(r"access at (?:0x[0-9a-f]+ in )?(.+?)\+0x[0-9a-f]+")  # racecheck names the kernel inline


def base_name(kernel: str) -> str:
    """A kernel's name without namespaces, template or ABI tags and arguments: `gate_ptx`, `_numba_iota`."""
    name = re.sub(r"\(.*$", "", kernel.strip())
    name = re.sub(r"\[abi:[^\]]*\]", "", name)
    name = re.sub(r"<.*>$", "", name)
    return name.rsplit("::", 1)[-1]


def parse_log(text: str) -> tuple[Counter, int | None]:
    """({kernel base name: findings}, the ERROR SUMMARY count or None) of one compute-sanitizer log."""
    found: Counter = Counter()
    pending = False
    summary = None
    for line in text.splitlines():
        if not line.startswith(_MARK):
            continue
        body = line[len(_MARK):]
        if (m := _SUMMARY.search(body)):
            summary = int(m.group(1))
            continue
        if body and not body[0].isspace():
            pending = not body.startswith(_NOT_FINDINGS)
            inline = _IN_HEADLINE.search(body) if pending else None
            if inline:
                found[base_name(inline.group(1))] += 1
                pending = False
            continue
        at = _AT.match(body)
        if pending and at:
            found[base_name(at.group(1))] += 1
            pending = False
    return found, summary


def sim_findings(run_dir: Path) -> dict[str, Counter]:
    """{tool: {kernel base name: findings}} of a sim run's rows (row.sanitizer.findings)."""
    doc = json.loads((run_dir / "run.json").read_text())
    out: dict[str, Counter] = {tool: Counter() for tool in TOOLS}
    for row in doc.get("rows", []):
        for finding in (row.get("sanitizer") or {}).get("findings", []):
            out.setdefault(finding["tool"], Counter())[base_name(finding["kernel"])] += int(finding.get("count", 1))
    return out


def compare(sanitize_dir: Path, run_dir: Path) -> list[str]:
    sim = sim_findings(run_dir)
    lines = []
    for tool in TOOLS:
        log = sanitize_dir / f"{tool}.log"
        if not log.is_file():
            lines.append(f"{tool}: no GPU log ({log} missing)")
            continue
        gpu, summary = parse_log(log.read_text(errors="replace"))
        ours = sim.get(tool, Counter())
        if not gpu and not ours and summary in (0, None):
            lines.append(f"{tool}: both clean")
            continue
        lines.append(f"{tool}: differ" if dict(gpu) != dict(ours) else f"{tool}: same findings on both")
        for kernel in sorted(set(gpu) | set(ours)):
            lines.append(f"  {kernel}: compute-sanitizer {gpu.get(kernel, 0)}, ptxsim {ours.get(kernel, 0)}")
        if summary is not None and summary != sum(gpu.values()):
            lines.append(f"  (compute-sanitizer's ERROR SUMMARY says {summary}; {sum(gpu.values())} attributed)")
    return lines


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    print("\n".join(compare(Path(argv[0]), Path(argv[1]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())

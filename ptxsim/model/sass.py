"""Charge SASS, not PTX: per-kernel factors that turn the simulator's dynamic PTX class counts into SASS counts.

ptxas rewrites PTX a lot: NVVM's 64-bit index arithmetic (cvt.u64.u32, shl.b64, add.s64) folds into IMAD.WIDE/LEA
or moves to the uniform datapath, movs vanish, a compare-and-branch becomes one ISETP + BRA, and loops get unrolled.
The method, per PTX module (ptxas/nvdisasm report SASS per module):

  reference classes R   classes ptxas maps one PTX instruction to one SASS instruction (FFMA, LDG, STS, HMMA, MUFU,
                        ...). unroll = sum_R SASS / sum_R PTX, static counts: how much ptxas duplicated the code
                        (unrolling), so that the adjusted classes below are compared like for like.
  adjusted classes      int, other, control, convert: factor_c = SASS_c / (unroll x PTX_c) (1 when PTX_c = 0).
  uniform ops (U*)      uniform-datapath SASS (UIADD3, UMOV, ULDC, ...) take a dispatch slot but no vector ALU time:
                        uniform_per_int = SASS_uniform / (unroll x PTX_int) dispatch-only instructions per dynamic PTX
                        int instruction.

The timing model multiplies each adjusted class's dynamic count by its factor and adds the uniform instructions to
dispatch. NOTE: static ratios stand for dynamic ones (a kernel whose hot loop has a different mix than its prologue
is charged the module's average), and a module with several entries shares one set of factors.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

REFERENCE = ("fp32", "fp16", "fp64", "sfu", "tensor", "ld_global", "st_global", "ld_shared", "st_shared", "atom",
             "cp_async", "warp")
ADJUSTED = ("int", "other", "control", "convert")

# SASS opcode (the part before the first '.') -> class; U-prefixed uniform ops are recognised separately.
SASS_CLASS: dict[str, str | None] = {
    **dict.fromkeys(("FFMA", "FADD", "FMUL", "FMNMX", "FSETP", "FSEL", "FCHK", "FSWZADD"), "fp32"),
    **dict.fromkeys(("HFMA2", "HADD2", "HMUL2", "HMNMX2", "HSETP2"), "fp16"),
    **dict.fromkeys(("DFMA", "DADD", "DMUL", "DSETP", "DMNMX"), "fp64"),
    "MUFU": "sfu",
    **dict.fromkeys(("HMMA", "IMMA", "HGMMA", "QGMMA", "IGMMA", "BMMA"), "tensor"),
    **dict.fromkeys(("F2F", "F2I", "I2F", "F2FP", "I2I", "I2FP", "FRND"), "convert"),
    "LDG": "ld_global", "STG": "st_global", "LDS": "ld_shared", "STS": "st_shared", "LDSM": "ld_shared",
    "LDL": "ld_local", "STL": "st_local", "LDC": "ld_const", "LDGSTS": "cp_async", "LDGDEPBAR": "cp_async",
    **dict.fromkeys(("ATOMG", "ATOM", "RED", "ATOMS"), "atom"),
    **dict.fromkeys(("SHFL", "VOTE", "MATCH", "REDUX"), "warp"),
    **dict.fromkeys(("BAR", "DEPBAR", "MEMBAR"), "barrier"),
    **dict.fromkeys(("BRA", "EXIT", "RET", "CALL", "BSSY", "BSYNC", "WARPSYNC", "BREAK", "JMP", "BRX", "YIELD"),
                    "control"),
    **dict.fromkeys(("IMAD", "IADD3", "LEA", "SHF", "LOP3", "ISETP", "IABS", "IMNMX", "SEL", "MOV", "PRMT", "FLO",
                     "POPC", "BREV", "SGXT", "S2R", "CS2R", "IMUL", "IADD", "SHL", "SHR", "P2R", "R2P", "PLOP3",
                     "VIADD", "VIMNMX", "IDP", "BMSK", "S2UR", "R2UR"), "int"),
    "NOP": None,   # padding after EXIT
}


def sass_class(opcode: str) -> str | None:
    """The class of one SASS opcode with modifiers ("LDG.E.128" -> "ld_global"); "uniform" for U* ops; None for
    opcodes that cost nothing (NOP) or are unknown."""
    if opcode.startswith("HFMA2.MMA"):   # ptxas's idiom for moving constants into registers (a MOV)
        return "int"
    head = opcode.split(".", 1)[0]
    if head in SASS_CLASS:
        return SASS_CLASS[head]
    if head.startswith("U") and head[1:] in SASS_CLASS:   # UIADD3, UMOV, ULDC, USHF, ULEA, UISETP, ...
        return "uniform"
    return None


def class_counts(sass_histogram: Mapping[str, int]) -> dict[str, int]:
    """SASS opcode histogram -> counts per class (plus "uniform")."""
    out: dict[str, int] = {}
    for opcode, n in sass_histogram.items():
        klass = sass_class(opcode)
        if klass:
            out[klass] = out.get(klass, 0) + int(n)
    return out


def sass_factors(ptx_counts: Mapping[str, int], sass_histogram: Mapping[str, int]) -> dict[str, float]:
    """{class: factor for ADJUSTED classes, "uniform_per_int": ..., "unroll": ..., "load_unroll": ...} (see the
    module docstring; load_unroll = SASS / PTX global loads, static counts, when the module has any);
    {} when the module has no reference-class instruction (nothing to compare like for like)."""
    sass = class_counts(sass_histogram)
    ref_ptx = sum(ptx_counts.get(c, 0) for c in REFERENCE)
    ref_sass = sum(sass.get(c, 0) for c in REFERENCE)
    if not ref_ptx or not ref_sass:
        return {}
    unroll = ref_sass / ref_ptx
    out = {c: sass.get(c, 0) / (unroll * ptx_counts[c]) for c in ADJUSTED if ptx_counts.get(c, 0)}
    out["uniform_per_int"] = sass.get("uniform", 0) / (unroll * ptx_counts["int"]) if ptx_counts.get("int") else 0.0
    out["unroll"] = unroll
    if ptx_counts.get("ld_global") and sass.get("ld_global"):
        # how many SASS global loads ptxas made of each PTX one (unrolled loops and their remainders): model v2
        # issues a self-looping block's loads in chunks of this many (cycle_trace.py)
        out["load_unroll"] = sass["ld_global"] / ptx_counts["ld_global"]
    return out


# -- loops: how much ptxas unrolled each loop (model v2) ----------------------------------------------------------
_FUNC = re.compile(r"^\.text\.([A-Za-z_$][\w$]*):\s*$")
_LABEL = re.compile(r"^(\.L\w+):\s*$")
_INSTR = re.compile(r"^\s*/\*([0-9a-f]+)\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)([^;]*);")
_TARGET = re.compile(r"`\((\.L\w+)\)")


def sass_loops(listing: str) -> dict[str, list[list[int]]]:
    """nvdisasm -c text -> {function: [[global loads, instructions] of each innermost loop, in address order]}.
    A loop is a backward branch (BRA to a label at or before it) and the instructions from its label to it;
    innermost: no other loop lies inside it. Loads are LDG* (LDGSTS is an async copy, not counted)."""
    out: dict[str, list[list[int]]] = {}
    func, labels, instrs = None, {}, []
    pending: list[str] = []

    def close() -> None:
        if func is None:
            return
        loops = []
        for addr, _op, rest in instrs:
            m = _TARGET.search(rest)
            if m and _op.startswith("BRA") and m.group(1) in labels and labels[m.group(1)] <= addr:
                loops.append((labels[m.group(1)], addr))
        inner = [(a, b) for a, b in loops if not any((c, d) != (a, b) and a <= c and d <= b for c, d in loops)]
        out[func] = [[sum(1 for addr, op, _ in instrs if a <= addr <= b and op.startswith("LDG")
                          and not op.startswith("LDGSTS") and not op.startswith("LDGDEPBAR")),
                      sum(1 for addr, _, _ in instrs if a <= addr <= b)] for a, b in sorted(inner)]

    for line in listing.splitlines():
        m = _FUNC.match(line.strip())
        if m:
            close()
            func, labels, instrs, pending = m.group(1), {}, [], []
            continue
        m = _LABEL.match(line.strip())
        if m:
            pending.append(m.group(1))
            continue
        m = _INSTR.match(line)
        if m and func is not None:
            addr = int(m.group(1), 16)
            for name in pending:
                labels[name] = addr
            pending = []
            instrs.append((addr, m.group(2), m.group(3)))
    close()
    return out


def ptx_loops(instrs) -> list[tuple[int, int]]:
    """(header pc, global loads) of the PTX program's innermost loops that hold a global load, in program order."""
    loops = []
    for ins in instrs:
        if ins.control and ins.op == "bra" and 0 <= ins.target <= ins.pc:
            loops.append((ins.target, ins.pc))
    inner = [(a, b) for a, b in loops if not any((c, d) != (a, b) and a <= c and d <= b for c, d in loops)]
    out = []
    for a, b in sorted(inner):
        loads = sum(1 for pc in range(a, b + 1) if instrs[pc].klass == "ld_global")
        if loads:
            out.append((a, loads))
    return out


def loop_unrolls(instrs, loops_of_entry) -> dict[int, float]:
    """{PTX loop header pc: SASS global loads per PTX one in the matching SASS loop} (how many iterations ptxas put
    in one pass of the loop it emits). The innermost PTX loops with global loads are matched in order with the
    innermost SASS loops with LDGs (ptxas keeps the order of loops); {} when their numbers differ (the mapping is
    then not known: a loop fully unrolled, split or fused) or without a listing."""
    sass = [loop for loop in (loops_of_entry or ()) if loop[0] > 0]
    ptx = ptx_loops(instrs)
    if not sass or len(sass) != len(ptx):
        return {}
    return {pc: max(1.0, s[0] / loads) for (pc, loads), s in zip(ptx, sass, strict=True)}


# -- loops: the issue schedule ptxas encoded in each loop (model v2) ------------------------------------------------
# Since Volta every SASS instruction carries control bits beside its opcode; the scheduler obeys them. Jia, Maggioni,
# Staiger, Scarpazza, "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking" (arXiv 1804.06826),
# section 2.1 "Control information": in the high 64-bit word of each 128-bit instruction, bits 41-44 (of that word)
# are the STALL count, the clocks the scheduler waits before issuing the warp's next instruction (ptxas sets it to
# cover fixed-latency dependences and pipe throughput), then the yield bit, the write and read scoreboard indices,
# the wait mask and the reuse flags (the same layout on Turing, Ampere and Hopper, as nvdisasm -hex shows).
_CONTROL_WORD = re.compile(r"^\s*/\*\s*0x([0-9a-f]{16})\s*\*/\s*$")
_STALL_SHIFT, _STALL_MASK = 41, 0xF


def sass_loop_issue(listing: str) -> dict[str, list[dict]]:
    """nvdisasm -hex -c text -> {function: [{"stall": sum of the stall counts, "classes": {class: instructions}} of
    each innermost loop, in address order]}: a loop is a backward BRA and the instructions from its target label to
    it (as sass_loops). A listing without the -hex control words gives no loops ({function: []})."""
    out: dict[str, list[dict]] = {}
    func, labels, instrs, pending = None, {}, [], []
    last: list | None = None     # the instruction whose high word (its control bits) the next hex line holds

    def close() -> None:
        if func is None:
            return
        loops = []
        for addr, op, rest, _stall in instrs:
            m = _TARGET.search(rest)
            if m and op.startswith("BRA") and m.group(1) in labels and labels[m.group(1)] <= addr:
                loops.append((labels[m.group(1)], addr))
        inner = [(a, b) for a, b in loops if not any((c, d) != (a, b) and a <= c and d <= b for c, d in loops)]
        found = []
        for a, b in sorted(inner):
            if a == b:
                continue         # `BRA` to itself: the trap ptxas puts after EXIT, never reached
            body = [ins for ins in instrs if a <= ins[0] <= b]
            if any(ins[3] is None for ins in body):
                found = []       # no control words: the schedule is not known
                break
            classes: dict[str, int] = {}
            for _addr, op, _rest, _stall in body:
                klass = sass_class(op)
                if klass:
                    classes[klass] = classes.get(klass, 0) + 1
            found.append({"stall": sum(ins[3] for ins in body), "classes": classes})
        out[func] = found

    for line in listing.splitlines():
        m = _FUNC.match(line.strip())
        if m:
            close()
            func, labels, instrs, pending, last = m.group(1), {}, [], [], None
            continue
        m = _LABEL.match(line.strip())
        if m:
            pending.append(m.group(1))
            continue
        m = _INSTR.match(line)
        if m and func is not None:
            addr = int(m.group(1), 16)
            for name in pending:
                labels[name] = addr
            pending = []
            last = [addr, m.group(2), m.group(3), None]
            instrs.append(last)
            continue
        m = _CONTROL_WORD.match(line)
        if m and last is not None and last[3] is None:
            last[3] = (int(m.group(1), 16) >> _STALL_SHIFT) & _STALL_MASK
            last = None
    close()
    return out


def _innermost_ptx_loops(instrs) -> list[tuple[int, int]]:
    """(header pc, back-edge pc) of every innermost PTX loop, in program order."""
    loops = [(ins.target, ins.pc) for ins in instrs if ins.control and ins.op == "bra" and 0 <= ins.target <= ins.pc]
    return sorted((a, b) for a, b in loops if not any((c, d) != (a, b) and a <= c and d <= b for c, d in loops))


def loop_issue(instrs, issue_of_entry) -> dict[int, tuple[float, float]]:
    """{PTX pc: (issue gap, unroll)} for the instructions of each innermost PTX loop matched to ptxas's loop: the
    SASS loop's stall counts (sass_loop_issue) spread evenly over the PTX iterations it holds, i.e. the clocks the
    warp waits after issuing each PTX instruction of the body, at least 1 (one issue per clock). `unroll`: PTX
    iterations per SASS pass, the smallest SASS / PTX count over the REFERENCE classes both hold (ptxas maps those
    one to one; a class the SASS alone has, e.g. the FMUL.RZ ptxas puts before each MUFU.SIN, does not count), at
    least 1. Loops are matched in order, and only when the PTX and the SASS have as many innermost loops and each
    pair holds the same REFERENCE classes but for classes the SASS alone adds ({} otherwise: the mapping is not
    known; e.g. ptxas moves mbarrier retry loops out of line, after EXIT, so the order can differ)."""
    sass = list(issue_of_entry or ())
    ptx = _innermost_ptx_loops(instrs)
    if not sass or len(sass) != len(ptx):
        return {}
    out: dict[int, tuple[float, float]] = {}
    for (a, b), loop in zip(ptx, sass, strict=True):
        body = range(a, b + 1)
        ptx_classes: dict[str, int] = {}
        for pc in body:
            ptx_classes[instrs[pc].klass] = ptx_classes.get(instrs[pc].klass, 0) + 1
        ptx_ref = {c for c in REFERENCE if ptx_classes.get(c)}
        sass_ref = {c for c in REFERENCE if loop["classes"].get(c)}
        if not ptx_ref <= sass_ref or (sass_ref and not ptx_ref):
            return {}            # not the same loop: a class ptxas maps one to one is missing on one side
        ratios = [loop["classes"][c] / ptx_classes[c] for c in ptx_ref]
        unroll = max(1.0, float(round(min(ratios)))) if ratios else 1.0
        gap = max(1.0, float(loop["stall"]) / (unroll * len(body)))
        for pc in body:
            out[pc] = (gap, unroll)
    return out

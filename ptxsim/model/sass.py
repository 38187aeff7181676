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

"""Helpers shared by the handler families: decode-time validation and type dispatch."""
from __future__ import annotations

import numpy as np

from ptxsim.errors import DecodeError, UnsupportedInstruction
from ptxsim.ops.opspec import Spec

FLOAT_KINDS = ("f",)


def is_floatish(t) -> bool:
    return t.kind == "f" or t.name in ("f16x2", "bf16x2", "bf16")


def dispatch_by_type(name: str, int_spec: Spec, fp_spec: Spec) -> Spec:
    """One table entry for an opcode that both the integer and the float family implement."""
    if int_spec.klass in ("fp32", "fp64", "fp16"):
        int_spec, fp_spec = fp_spec, int_spec

    def prepare(ins, dec, ctx):
        if not ins.types:
            raise UnsupportedInstruction(ins.op, ins.modlist, ins.line, "missing type modifier")
        chosen = fp_spec if is_floatish(ins.types[-1]) else int_spec
        bad = [m for m in ins.modlist if m not in chosen.mods]
        if bad:
            raise UnsupportedInstruction(ins.op, ins.modlist + tuple("." + t.name for t in ins.types), ins.line,
                                         f"modifier(s) {' '.join(bad)} not valid for {ins.op}.{ins.types[-1].name}")
        ins.handler, ins.klass = chosen.handler, chosen.klass
        if chosen.prepare is not None:
            chosen.prepare(ins, dec, ctx)

    return Spec(int_spec.handler, int_spec.klass, int_spec.mods | fp_spec.mods, prepare, False, False)


def need(ins, nops: int | tuple, ntypes: int | tuple = 1):
    """Validate operand and type counts at decode time."""
    nops = (nops,) if isinstance(nops, int) else nops
    ntypes = (ntypes,) if isinstance(ntypes, int) else ntypes
    if len(ins.ops) not in nops:
        raise DecodeError(f"{ins.op} takes {' or '.join(map(str, nops))} operands, got {len(ins.ops)}")
    if len(ins.types) not in ntypes:
        raise UnsupportedInstruction(ins.op, ins.modlist + tuple("." + t.name for t in ins.types), ins.line,
                                     f"expected {' or '.join(map(str, ntypes))} type modifier(s), "
                                     f"got {len(ins.types)}")


def kinds(ins, allowed: str, which: int = 0):
    t = ins.types[which]
    if t.kind not in allowed and t.name not in allowed.split(","):
        raise UnsupportedInstruction(ins.op, ins.modlist + tuple("." + x.name for x in ins.types), ins.line,
                                     f"type .{t.name} not supported here")
    return t


def unsupported(ins, why: str):
    return UnsupportedInstruction(ins.op, ins.modlist + tuple("." + t.name for t in ins.types), ins.line, why)


def as_array(v, n: int):
    """A lane vector from a value that may be a numpy scalar (immediate operand)."""
    if np.ndim(v) == 0:
        return np.full(n, v)
    return v

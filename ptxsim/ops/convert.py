"""cvt: integer <-> integer / float, float <-> float with every rounding, .sat, .ftz, and the packed
bf16x2 / f16x2 / e4m3x2 / e5m2x2 forms (the first source goes to the HIGH half)."""
from __future__ import annotations

import numpy as np

from ptxsim import numerics as nm
from ptxsim import rounding as rnd
from ptxsim.ops.common import need, unsupported
from ptxsim.ops.opspec import spec
from ptxsim.ptxtypes import TYPES

_FRND = (".rn", ".rz", ".rm", ".rp", ".rna")
_DIRECTED = (".rn", ".rz", ".rm", ".rp")
_IRND = {".rni": np.rint, ".rzi": np.trunc, ".rmi": np.floor, ".rpi": np.ceil}
_HALF = ("f16", "bf16")
_FP8 = {"e4m3x2": "e4m3", "e5m2x2": "e5m2"}


def _is_f(t):
    return t.kind == "f" or t.name == "bf16"


def _to_f32ish(v, t):
    """Source value as f64 (exact) for float-like source types."""
    if t.name == "bf16":
        return nm.bf16_bits_to_f32(np.asarray(v).view(np.uint16)).astype(np.float64)
    return np.asarray(v).astype(np.float64)


def _int_range(t):
    if t.signed:
        return -(2 ** (t.bits - 1)), 2 ** (t.bits - 1) - 1
    return 0, 2 ** t.bits - 1


def _float_to_int(x, dt, mode):
    """Round (mode .rni/.rzi/.rmi/.rpi) and saturate to dt's range; NaN -> 0."""
    x = np.asarray(x, np.float64)
    r = _IRND.get(mode, np.trunc)(x)
    lo, hi = _int_range(dt)
    nan = np.isnan(r)
    r = np.where(nan, 0, r)
    if dt.bits == 64:
        out = np.empty(r.shape, dt.dtype)
        big = r >= float(hi)
        small = r <= float(lo)
        mid = ~(big | small)
        out[mid] = r[mid].astype(dt.dtype)
        out[big] = hi
        out[small] = lo
        return out
    return np.clip(r, lo, hi).astype(np.int64).astype(dt.dtype)


def _int_to_float(v, st_, dt, mode):
    """Integer -> float rounded once (u64/s64 do not fit f64, so the rounding is done in integer arithmetic)."""
    return rnd.to_format(rnd.round_int(v, st_.signed, dt.name, mode if mode in _DIRECTED else ".rn"), dt.name)


_WIDENS = {("f16", "f32"), ("bf16", "f32"), ("f32", "f32"), ("f16", "f64"), ("bf16", "f64"), ("f32", "f64"),
           ("f64", "f64"), ("f16", "f16"), ("bf16", "bf16")}  # (source, destination) pairs that are always exact


def _float_to_float(x64, s, d, mode, ftz):
    """Exact source value x64 (f64 array) to float type d, rounded once (overflow, NaN and subnormals per IEEE)."""
    if (s.name, d.name) in _WIDENS:
        return rnd.to_format(x64, d.name)
    return rnd.to_format(rnd.round_float(x64, d.name, mode if mode in _DIRECTED else ".rn"), d.name)


def cvt(st, ins, lanes):
    d, s = ins.types[0], ins.types[1]
    n = st.count(lanes)
    if ins.aux.packed:
        return _cvt_packed(st, ins, lanes, d, s, n)
    v = np.broadcast_to(np.asarray(st.read(ins.ops[1], lanes, s)), (n,))
    mode = ins.aux.mode
    ftz = ".ftz" in ins.mods
    sat = ".sat" in ins.mods
    if _is_f(s):
        x = _to_f32ish(v, s)
        if ftz and s.name == "f32":
            x = nm.ftz32(x.astype(np.float32)).astype(np.float64)
        if _is_f(d):
            if mode in _IRND:
                x = _IRND[mode](x)
                r = x.astype(d.dtype) if d.name != "bf16" else nm.f32_to_bf16_bits(x.astype(np.float32))
            else:
                r = _float_to_float(x, s, d, mode, ftz)
            if sat:
                f = np.asarray(r if d.name != "bf16" else nm.bf16_bits_to_f32(r))
                f = nm.sat01(f)
                r = f.astype(d.dtype) if d.name != "bf16" else nm.f32_to_bf16_bits(f.astype(np.float32))
            if ftz and d.name == "f32":
                r = nm.ftz32(r)
            if (".relu" in ins.mods or ".satfinite" in ins.mods) and d.name in ("f16", "bf16"):
                f = np.asarray(r if d.name != "bf16" else nm.bf16_bits_to_f32(r), np.float32)
                if ".relu" in ins.mods:
                    f = np.where(f < 0, np.float32(0), f)
                if ".satfinite" in ins.mods:
                    top = np.float32(65504.0 if d.name == "f16" else 3.3895314e38)
                    f = np.where(np.isinf(f), np.copysign(top, f), f).astype(np.float32)
                r = f.astype(np.float16) if d.name == "f16" else nm.f32_to_bf16_bits(f)
            st.write(ins.ops[0], lanes, np.asarray(r).astype(d.dtype) if d.name != "bf16" else np.asarray(r), d)
            return
        st.write(ins.ops[0], lanes, _float_to_int(x, d, mode), d)
        return
    if _is_f(d):
        r = _int_to_float(v, s, d, mode)
        if sat:
            r = nm.sat01(np.asarray(r))
        st.write(ins.ops[0], lanes, np.asarray(r).astype(d.dtype) if d.name != "bf16" else np.asarray(r), d)
        return
    # integer -> integer: sign/zero extend or truncate, optional saturation
    if sat:
        lo, hi = _int_range(d)
        if s.bits == 64 and not s.signed:
            r = np.minimum(v, np.uint64(hi)).astype(d.dtype) if not d.signed or d.bits < 64 else \
                np.minimum(v, np.uint64(hi)).astype(d.dtype)
        else:
            r = np.clip(v.astype(np.int64), lo, min(hi, 2**63 - 1)).astype(d.dtype)
            if d.bits == 64 and not d.signed and s.signed:
                r = np.where(v < 0, 0, v).astype(d.dtype)
        st.write(ins.ops[0], lanes, r, d)
        return
    if d.bits == s.bits:
        r = v.view(d.dtype)
    elif s.signed:
        r = v.astype(np.int64).astype(d.uint).view(d.dtype)
    else:
        r = v.astype(np.uint64).astype(d.uint).view(d.dtype)
    st.write(ins.ops[0], lanes, r, d)


def _cvt_packed(st, ins, lanes, d, s, n):
    relu = ".relu" in ins.mods
    satf = ".satfinite" in ins.mods
    f32 = TYPES["f32"]
    if d.name in _FP8:  # e4m3x2 / e5m2x2 from two f32 (a -> high byte) or from f16x2
        kind = _FP8[d.name]
        if s.name == "f32":
            a = np.broadcast_to(np.asarray(st.read(ins.ops[1], lanes, f32)), (n,))
            b = np.broadcast_to(np.asarray(st.read(ins.ops[2], lanes, f32)), (n,))
        else:  # f16x2 / bf16x2 source: upper half -> high byte
            u = np.broadcast_to(np.asarray(st.read(ins.ops[1], lanes, TYPES["b32"])), (n,))
            hk = "bf16" if s.name == "bf16x2" else "f16"
            a = nm.half_bits_to_f32(u >> np.uint32(16), hk)
            b = nm.half_bits_to_f32(u & np.uint32(0xFFFF), hk)
        hi, lo = nm.to_fp8_bits(a, kind, relu), nm.to_fp8_bits(b, kind, relu)
        r = (hi.astype(np.uint16) << np.uint16(8)) | lo.astype(np.uint16)
        st.write(ins.ops[0], lanes, r.astype(np.uint16), TYPES["b16"])
        return
    if s.name in _FP8:  # f16x2 / bf16x2 from e4m3x2 / e5m2x2 (exact)
        u = np.broadcast_to(np.asarray(st.read(ins.ops[1], lanes, TYPES["b16"])), (n,)).astype(np.uint32)
        kind = _FP8[s.name]
        hi = nm.fp8_bits_to_f32(u >> np.uint32(8), kind)
        lo = nm.fp8_bits_to_f32(u & np.uint32(0xFF), kind)
        hk = "bf16" if d.name == "bf16x2" else "f16"
        if relu:
            hi, lo = np.maximum(hi, 0), np.maximum(lo, 0)
        r = (nm.to_half_bits(hi, hk).astype(np.uint32) << np.uint32(16)) | nm.to_half_bits(lo, hk).astype(np.uint32)
        st.write(ins.ops[0], lanes, r.astype(np.uint32), TYPES["b32"])
        return
    if d.name in ("bf16x2", "f16x2") and s.name == "f32":
        a = np.broadcast_to(np.asarray(st.read(ins.ops[1], lanes, f32)), (n,))
        b = np.broadcast_to(np.asarray(st.read(ins.ops[2], lanes, f32)), (n,))
        hk = d.name[:-2]
        hi = _half_from_f32(a, hk, ins.aux.mode, relu, satf)
        lo = _half_from_f32(b, hk, ins.aux.mode, relu, satf)
        st.write(ins.ops[0], lanes, ((hi.astype(np.uint32) << np.uint32(16)) | lo.astype(np.uint32)), TYPES["b32"])
        return
    raise unsupported(ins, f"packed conversion .{d.name}.{s.name} not supported")


def _half_from_f32(x, kind, mode, relu, satf):
    if mode == ".rz":
        if kind == "bf16":
            x = np.where(np.isnan(x), x, np.maximum(x, 0)) if relu else x
            return nm.f32_to_bf16_bits(x, ".rz")
        r = _float_to_float(np.asarray(x, np.float64), TYPES["f32"], TYPES["f16"], ".rz", False)
        return np.asarray(r, np.float16).view(np.uint16)
    return nm.to_half_bits(x, kind, relu=relu, satfinite=satf)


def _prep(ins, dec, ctx):
    need(ins, (2, 3), 2)
    d, s = ins.types
    if "tf32" in (d.name, s.name) or d.kind == "packed" and d.name in ("s4", "u4"):
        raise unsupported(ins, f"conversions with .{d.name if d.kind == 'packed' else s.name} are not supported")
    packed = d.name in _FP8 or s.name in _FP8 or d.name in ("bf16x2", "f16x2")
    ins.aux.packed = packed
    if packed and d.name in ("bf16x2", "f16x2") and s.name == "f32" and len(ins.ops) != 3:
        raise unsupported(ins, "needs two f32 sources (d, a, b)")
    if d.name in _FP8 and s.name == "f32" and (".satfinite" not in ins.mods or len(ins.ops) != 3):
        raise unsupported(ins, "f32 -> fp8x2 needs .rn.satfinite and two sources")
    modes = [m for m in ins.modlist if m in _FRND or m in _IRND]
    if len(modes) > 1:
        raise unsupported(ins, f"conflicting rounding modifiers {modes}")
    ins.aux.mode = modes[0] if modes else ""
    if not packed and len(ins.ops) != 2:
        raise unsupported(ins, "takes d, a")
    if packed:
        ins.aux.mode = ins.aux.mode or ".rn"
        ins.klass = "convert"
        return
    if _is_f(s) and not _is_f(d) and ins.aux.mode not in _IRND:
        if ins.aux.mode:
            raise unsupported(ins, "float -> int needs an integer rounding .rni .rzi .rmi .rpi")
        ins.aux.mode = ".rzi"
    if _is_f(d) and ins.aux.mode in ("", ".rna"):
        ins.aux.mode = ".rn"
    ins.klass = "convert"


def _prep_tf32(ins, dec, ctx):
    raise unsupported(ins, "tf32 conversions are not supported")


OPS = {
    "cvt": spec(cvt, "convert", _FRND + tuple(_IRND) + (".ftz", ".sat", ".satfinite", ".relu"), _prep),
}

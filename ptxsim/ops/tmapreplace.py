"""tensormap.replace (a field of a tensor map in shared or global memory) and tensormap.cp_fenceproxy (a map copied
from shared to global memory with a tensormap-proxy release): how grouped GEMMs (CUTLASS's pointer-array kernels)
point their TMA copies at the next group's tensors on the device.

The maps are ptxsim's own 128-byte layout (ptxsim/tensormap.py): a replace must find one there (encode_tiled's, or
a copy of one); it writes the field with a plain store (so the sanitizers see it), and the copy that next uses the
map checks every field as cuTensorMapEncodeTiled would. Field values follow the PTX ISA (8.5+): global_address,
global_dim, box_dim and element_stride as they are, global_stride in bytes (ISA 8.3 / 8.4 took it shifted right by
4: refused), rank as rank - 1; elemtype, interleave_layout, swizzle_mode and fill_mode only where their value has
the meaning of the driver's enumeration (elemtype 0 .. 7, swizzle 0 .. 3, interleave 0, fill 0 / 1); swizzle_atomicity
not at all. The ordering the PTX ISA asks of a changed map (a tensormap-proxy release after the writes, an acquire
by the thread whose copy uses it) is asynccheck's tensormap rule (ptxsim/asyncrules.py).
"""
from __future__ import annotations

import struct

import numpy as np

from ptxsim import access, tensormap
from ptxsim.errors import DecodeError, PtxSimError
from ptxsim.memory import GLOBAL_BASE, SHARED_WINDOW
from ptxsim.ops.common import unsupported
from ptxsim.ops.opspec import spec
from ptxsim.program import ADDR, IMM
from ptxsim.ptxtypes import TYPES

TMAP_ALIGN = 64  # bytes: CUtensorMap's alignment (cuda.h alignas(64))
_SPACES = {".global": "global", ".shared::cta": "shared"}
_FIELD2 = ("box_dim", "global_dim", "global_stride", "element_stride")  # take an ordinal
# field -> (PTX value type, bias added before the store, (low, high) accepted values or None: checked at use)
_VALUES = {"global_address": ("b64", 0, None), "rank": ("b32", 1, (0, 4)), "global_dim": ("b32", 0, None),
           "global_stride": ("b64", 0, None), "box_dim": ("b32", 0, None), "element_stride": ("b32", 0, None),
           "elemtype": ("b32", 0, (0, 7)), "interleave_layout": ("b32", 0, (0, 0)), "swizzle_mode": ("b32", 0, (0, 3)),
           "fill_mode": ("b32", 0, (0, 1))}
_MEANING = {"rank": "0 .. 4 (rank - 1)", "elemtype": "0 .. 7 (UINT8 .. FLOAT32, as CUtensorMapDataType; ptxsim does "
            "not take the PTX ISA's other element types)", "interleave_layout": "0 (none; interleaved layouts are not "
            "simulated)", "swizzle_mode": "0 .. 3 (none, 32B, 64B, 128B)", "fill_mode": "0 (zeros) or 1 (NaN)"}
_DTYPES = {"<Q": np.uint64, "<H": np.uint16, "<B": np.uint8}


def _where(st, ins, lane: int) -> str:
    cta, tid = st.where(lane)
    return f"{ins.op} at PTX line {ins.line} (`{ins.text}`) in kernel {st.prog.name}, CTA {cta} thread {tid}"


def _map_addresses(st, ins, op, la: np.ndarray, space: str) -> np.ndarray:
    """The tensor map's address per lane in `space` ("global" or "shared"; "" generic is resolved to one of them),
    64-byte aligned."""
    addr = st.address(op, la)
    bad = addr % np.uint64(TMAP_ALIGN) != 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise access.fault(st, ins, space or "generic", int(addr[i]), tensormap.SIZE, int(la[i]),
                           "misaligned tensor map", aligned_to=TMAP_ALIGN)
    return addr


def _space_of(st, ins, addr: np.ndarray) -> str:
    if ins.aux.space:
        return ins.aux.space
    shared = (addr >= np.uint64(SHARED_WINDOW)) & (addr < np.uint64(SHARED_WINDOW + st.shared_size))
    glob = addr >= np.uint64(GLOBAL_BASE)
    if shared.all():
        return "shared"
    if glob.all():
        return "global"
    raise unsupported(ins, "a generic tensor-map address must point into shared or global memory, the same space "
                           "for every thread")


def _check_maps(st, ins, space: str, addr: np.ndarray, la: np.ndarray) -> None:
    magic = access.load(st, ins, space, addr, la, np.uint32)
    bad = np.asarray(magic) != tensormap.MAGIC
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise PtxSimError(f"{_where(st, ins, int(la[i]))}: the 128 bytes at {space} address {int(addr[i]):#x} are not "
                          f"a tensor map (magic {int(magic[i]):#x}, expected {tensormap.MAGIC:#x}): ptxsim's maps are "
                          "its own layout, made by ptxsim.tensormap.encode_tiled (or copied from one), so a map "
                          "cannot be built field by field from other bytes")


def replace(st, ins, lanes):
    a = ins.aux
    la = st.lane_array(lanes)
    addr = _map_addresses(st, ins, ins.ops[0], la, a.space)
    space = _space_of(st, ins, addr)
    if not a.space and space == "shared":
        addr = addr - np.uint64(SHARED_WINDOW)
    _check_maps(st, ins, space, addr, la)
    v = np.broadcast_to(np.asarray(st.read(ins.ops[-1], lanes, a.vtype)), (len(la),)).astype(np.uint64)
    if a.limits is not None:
        lo, hi = a.limits
        bad = (v < np.uint64(lo)) | (v > np.uint64(hi))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise unsupported(ins, f"new value {int(v[i])} of .{a.field} (thread {st.where(int(la[i]))[1]}): "
                                   f"ptxsim takes {_MEANING[a.field]}")
    v = (v + np.uint64(a.bias)).astype(a.dtype)
    access.store(st, ins, space, addr + np.uint64(a.offset), la, v, a.dtype)
    if st.rules is not None:
        st.rules.tensormap_written(st, ins, la, space, addr)


def cp_fenceproxy(st, ins, lanes):
    """Copy the 128 bytes [src] (shared::cta) to [dst] (global), then release them to the tensormap proxy. Every
    thread of the warp names the same map (.sync.aligned); each copies, as the same bytes land either way."""
    la = st.lane_array(lanes)
    dst = _map_addresses(st, ins, ins.ops[0], la, "global")
    src = _map_addresses(st, ins, ins.ops[1], la, "shared")
    _check_maps(st, ins, "shared", src, la)
    for k in range(0, tensormap.SIZE, 16):
        step = np.uint64(k)
        v = access.load(st, ins, "shared", src + step, la, np.uint64, 2)
        access.store(st, ins, "global", dst + step, la, v.reshape(len(la), 2), np.uint64, 2)
    if st.rules is not None:
        st.rules.tensormap_released(st, ins, la, dst, copied=True)


def _prep(ins, dec, ctx):
    mods = ins.mods
    spaces = [_SPACES[m] for m in ins.modlist if m in _SPACES]
    if ".cp_fenceproxy" in mods:
        need = {".global", ".shared::cta", ".tensormap::generic", ".release", ".sync", ".aligned"}
        if not need <= mods or not mods & {".cta", ".cluster", ".gpu", ".sys"} or ".replace" in mods:
            raise unsupported(ins, "expected tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release"
                                   ".{cta,cluster,gpu,sys}.sync.aligned [dst], [src], 128")
        if (len(ins.ops) != 3 or ins.ops[0].kind != ADDR or ins.ops[1].kind != ADDR or ins.ops[2].kind != IMM
                or int(ins.ops[2].value) != tensormap.SIZE):
            raise DecodeError("tensormap.cp_fenceproxy takes [dst], [src], 128")
        ins.handler, ins.klass, ins.space = cp_fenceproxy, "other", "global"
        return
    if ".replace" not in mods:
        raise unsupported(ins, "tensormap.replace or tensormap.cp_fenceproxy")
    if ".tile" not in mods:
        raise unsupported(ins, "tensormap.replace needs .tile (the only mode)")
    if ".swizzle_atomicity" in mods:
        raise unsupported(ins, ".swizzle_atomicity is not simulated (ptxsim's swizzle has no atomicity setting)")
    fields = [m[1:] for m in ins.modlist if m[1:] in _VALUES]
    if len(fields) != 1 or ".b1024" not in mods or len(spaces) > 1:
        raise unsupported(ins, "expected tensormap.replace.tile.<field>{.global,.shared::cta}.b1024.<b32|b64>")
    field = fields[0]
    vtype, bias, limits = _VALUES[field]
    if len(ins.types) != 1 or ins.types[0].name != vtype:
        raise unsupported(ins, f".{field} takes a .{vtype} value")
    nops = 3 if field in _FIELD2 else 2
    if len(ins.ops) != nops or ins.ops[0].kind != ADDR:
        raise DecodeError(f"tensormap.replace.{field} takes [addr], {'ord, ' if nops == 3 else ''}new_val")
    off, fmt, count = tensormap.FIELDS[field]
    ordinal = 0
    if nops == 3:
        if ins.ops[1].kind != IMM or not 0 <= int(ins.ops[1].value) < count:
            raise unsupported(ins, f"the ordinal of .{field} must be an integer constant 0 .. {count - 1}")
        ordinal = int(ins.ops[1].value)
    version = tuple(int(x) for x in (dec.mod.version or "0.0").split("."))
    if field == "global_stride" and version < (8, 5):
        raise unsupported(ins, f"a .version {dec.mod.version} module's global_stride counts 16-byte units (PTX ISA "
                               "8.3 / 8.4, CUTLASS shifts the stride right by 4 for them); ptxsim takes bytes, as "
                               "from ISA 8.5")
    ins.aux.update(field=field, vtype=TYPES[vtype], bias=bias, limits=limits, dtype=np.dtype(_DTYPES[fmt]),
                   offset=off + ordinal * struct.calcsize(fmt), space=spaces[0] if spaces else "")
    ins.space = spaces[0] if spaces else ""
    ins.klass = "other"


_MODS = (".replace", ".tile", ".b1024", ".global", ".shared::cta", ".cp_fenceproxy", ".tensormap::generic",
         ".release", ".cta", ".cluster", ".gpu", ".sys", ".sync", ".aligned", ".swizzle_atomicity")
_MODS += tuple("." + f for f in _VALUES)
OPS = {"tensormap": spec(replace, "other", _MODS, _prep)}

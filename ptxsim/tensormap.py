"""Tensor maps (the CUtensorMap of cp.async.bulk.tensor): a host helper with the parameters and checks of the driver's
cuTensorMapEncodeTiled, the 128-byte encoding ptxsim reads back on the device, and the tile gather with
out-of-bounds fill and shared-memory swizzle.

The real CUtensorMap is opaque; ptxsim's 128 bytes are its own layout (below), so a map is made with encode_tiled
and passed to a kernel like the real one (a 64-byte-aligned .param .b8 [128] or a pointer to global memory).
"""
from __future__ import annotations

import functools
import struct
from dataclasses import dataclass

import numpy as np

from ptxsim.errors import PtxSimError

# CUtensorMapDataType (cuda.h) -> element bytes
DTYPE_BYTES = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2, 10: 4, 11: 4, 12: 4}
DTYPE_NAMES = {0: "UINT8", 1: "UINT16", 2: "UINT32", 3: "INT32", 4: "UINT64", 5: "INT64", 6: "FLOAT16", 7: "FLOAT32",
               8: "FLOAT64", 9: "BFLOAT16", 10: "FLOAT32_FTZ", 11: "TFLOAT32", 12: "TFLOAT32_FTZ"}
FLOAT_DTYPES = (6, 7, 8, 9, 10, 11, 12)
# the NaN bit pattern of an out-of-bounds element with CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
NAN_BITS = {2: 0x7FFF, 4: 0x7FFFFFFF, 8: 0x7FFFFFFFFFFFFFFF}
SWIZZLE_BYTES = {0: 0, 1: 32, 2: 64, 3: 128}  # CUtensorMapSwizzle: NONE, 32B, 64B, 128B
# swizzle span -> the byte boundary its pattern repeats on (8 x 128-byte rows for 128B, 4 for 64B, 2 for 32B): a
# swizzled TMA box must start there (CUDA Programming Guide, TMA swizzle modes), and a wgmma descriptor with base
# offset 0 must start in the pattern's first 128-byte row; an unswizzled box needs 128 bytes
SWIZZLE_REPEAT = {0: 128, 32: 256, 64: 512, 128: 1024}
INTERLEAVE_NONE, OOB_FILL_NONE, OOB_FILL_NAN = 0, 0, 1
MAGIC = 0x50545854  # "TXTP"
_HEAD = struct.Struct("<IBBBBBB6x Q 5Q 4Q 5H 5B")  # magic, dtype, rank, interleave, swizzle, l2, oob; address;
# dims; strides of dims 1..4 in bytes; box; element strides (111 bytes, zero-padded to 128; the 8-byte fields 8-byte
# aligned, so tensormap.replace writes each with one aligned store)
SIZE = 128


class TensorMapError(PtxSimError, ValueError):
    """A tensor-map parameter cuTensorMapEncodeTiled would reject (CUDA_ERROR_INVALID_VALUE)."""


@dataclass(frozen=True)
class TensorMap:
    """A decoded tiled tensor map; dims and strides innermost first, strides in bytes (stride[0] = element)."""

    dtype: int
    rank: int
    address: int
    dims: tuple
    strides: tuple  # bytes, len rank - 1 (dims 1..rank-1)
    box: tuple
    elem_strides: tuple
    interleave: int
    swizzle: int
    l2_promotion: int
    oob_fill: int

    @property
    def esize(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def swizzle_bytes(self) -> int:
        return SWIZZLE_BYTES[self.swizzle]

    @property
    def counts(self) -> tuple:
        """Elements the box holds per dimension (ceil(box / element stride))."""
        return tuple(-(-b // e) for b, e in zip(self.box, self.elem_strides, strict=True))

    @property
    def box_bytes(self) -> int:
        return int(np.prod(self.counts)) * self.esize


def _bad(what, value, expected):
    raise TensorMapError(f"cuTensorMapEncodeTiled: {what} = {value!r}; expected {expected}")


def encode_tiled(dtype: int, rank: int, global_address: int, global_dim, global_strides, box_dim, element_strides,
                 interleave: int = 0, swizzle: int = 0, l2_promotion: int = 0, oob_fill: int = 0) -> bytes:
    """The 128-byte tensor map of cuTensorMapEncodeTiled(tensorMap, dtype, rank, globalAddress, globalDim,
    globalStrides, boxDim, elementStrides, interleave, swizzle, l2Promotion, oobFill).

    Args:
        dtype: CUtensorMapDataType (0 UINT8 .. 12 TFLOAT32_FTZ; FP8 tensors use UINT8).
        rank: 1 .. 5.
        global_address: device address of element (0, .., 0); 16-byte aligned.
        global_dim: rank sizes in elements, innermost first, each 1 .. 2^32.
        global_strides: rank - 1 strides in bytes of dims 1 .., multiples of 16 below 2^40 (0 encodes, as with the
            driver, but a copy takes it only for a dimension of size 1).
        box_dim: rank box sizes, 1 .. 256; box_dim[0] * element bytes a multiple of 16.
        element_strides: rank traversal strides, 1 .. 8.
        interleave: only CU_TENSOR_MAP_INTERLEAVE_NONE (0).
        swizzle: 0 none, 1 32B, 2 64B, 3 128B; the inner box row must fit the swizzle span.
        l2_promotion: 0 .. 3 (a cache hint, kept but unused).
        oob_fill: 0 zeros, 1 NaN (float types only).

    Returns:
        128 bytes to pass as the kernel's CUtensorMap parameter or to copy to device memory.

    Raises:
        TensorMapError: naming the parameter, its value and what was expected.
    """
    dims, strides = tuple(int(d) for d in global_dim), tuple(int(s) for s in global_strides)
    box, es = tuple(int(b) for b in box_dim), tuple(int(e) for e in element_strides)
    check_fields(dtype, rank, global_address, dims, strides, box, es, interleave, swizzle, l2_promotion, oob_fill)

    def pad(t: tuple, v: int) -> tuple:
        return t + (v,) * (5 - len(t))

    raw = _HEAD.pack(MAGIC, dtype, rank, interleave, swizzle, l2_promotion, oob_fill, global_address,
                     *pad(dims, 0), *pad(strides, 0)[:4], *pad(box, 0), *pad(es, 0))
    return raw + bytes(SIZE - len(raw))


def check_fields(dtype: int, rank: int, global_address: int, dims: tuple, strides: tuple, box: tuple, es: tuple,
                 interleave: int, swizzle: int, l2_promotion: int, oob_fill: int, at_use: bool = False) -> None:
    """cuTensorMapEncodeTiled's parameter checks (TensorMapError naming the first bad one); also run (at_use) on
    every distinct map a copy uses, such as one tensormap.replace changed (ptxsim/ops/tmapreplace.py)."""
    if dtype not in DTYPE_BYTES:
        _bad("tensorDataType", dtype, f"one of {sorted(DTYPE_BYTES)}")
    if not 1 <= rank <= 5:
        _bad("tensorRank", rank, "1 .. 5")
    for name, seq, n in (("globalDim", dims, rank), ("globalStrides", strides, rank - 1), ("boxDim", box, rank),
                         ("elementStrides", es, rank)):
        if len(seq) != n:
            _bad(f"len({name})", len(seq), f"{n} for rank {rank}")
    if global_address % 16:
        _bad("globalAddress", hex(global_address), "a multiple of 16")
    esize = DTYPE_BYTES[dtype]
    for i, d in enumerate(dims):
        if not 1 <= d <= 1 << 32:
            _bad(f"globalDim[{i}]", d, "1 .. 2^32")
    for i, s in enumerate(strides):
        # NOTE: the driver asks a multiple of 16 below 2^40, so 0 encodes: CUTLASS's grouped GEMMs encode placeholder
        # maps with stride 0 that the kernel replaces before use (tensormap.replace), and its batched GEMMs encode
        # the batch mode so when L = 1. A copy through a map (at_use) takes 0 only for a dimension of size 1, where
        # no address uses it: rows that alias are almost surely a bug.
        if s % 16 or not (0 < s < 1 << 40 or (s == 0 and (not at_use or dims[i + 1] == 1))):
            _bad(f"globalStrides[{i}]", s, "a positive multiple of 16 below 2^40 (0 only for a dimension of size 1"
                 + (" when a copy uses the map)" if at_use else ")"))
    for i, b in enumerate(box):
        if not 1 <= b <= 256:
            _bad(f"boxDim[{i}]", b, "1 .. 256")
    if box[0] * esize % 16:
        _bad("boxDim[0] * element size", box[0] * esize, "a multiple of 16 bytes")
    for i, e in enumerate(es):
        if not 1 <= e <= 8:
            _bad(f"elementStrides[{i}]", e, "1 .. 8")
    if interleave != INTERLEAVE_NONE:
        _bad("interleave", interleave, "CU_TENSOR_MAP_INTERLEAVE_NONE (0); interleaved layouts are not simulated")
    if swizzle not in SWIZZLE_BYTES:
        _bad("swizzle", swizzle, "0 (none), 1 (32B), 2 (64B) or 3 (128B)")
    if swizzle and box[0] * esize > SWIZZLE_BYTES[swizzle]:
        _bad("boxDim[0] * element size", box[0] * esize, f"at most the swizzle span {SWIZZLE_BYTES[swizzle]} bytes")
    if not 0 <= l2_promotion <= 3:
        _bad("l2Promotion", l2_promotion, "0 .. 3")
    if oob_fill not in (OOB_FILL_NONE, OOB_FILL_NAN):
        _bad("oobFill", oob_fill, "0 (zeros) or 1 (NaN)")
    if oob_fill == OOB_FILL_NAN and dtype not in FLOAT_DTYPES:
        _bad("oobFill", oob_fill, f"0 for the integer type {DTYPE_NAMES[dtype]} (NaN fill needs a float type)")


def decode(raw: bytes, where: str = "") -> TensorMap:
    """The TensorMap of 128 bytes made by encode_tiled, perhaps changed on the device by tensormap.replace: its
    fields are checked as cuTensorMapEncodeTiled checks them (PtxSimError / TensorMapError naming `where`)."""
    raw = bytes(raw)[:_HEAD.size]
    if len(raw) < _HEAD.size or struct.unpack_from("<I", raw)[0] != MAGIC:
        raise PtxSimError(f"{where}: the 128 bytes are not a tensor map made by ptxsim.tensormap.encode_tiled "
                          f"(magic {struct.unpack_from('<I', raw.ljust(4, bytes(1)))[0]:#x}, expected {MAGIC:#x})")
    try:
        return _decode(raw)
    except TensorMapError as e:
        raise TensorMapError(f"{where}: the tensor map (as encoded, or as tensormap.replace left it) cannot be used "
                             f"by a copy: {e.args[0].split(': ', 1)[1]}") from None


@functools.lru_cache(maxsize=4096)
def _decode(raw: bytes) -> TensorMap:
    """Decoded and checked once per distinct map (a copy decodes its map on every issue)."""
    f = _HEAD.unpack_from(raw)
    dtype, rank, inter, swz, l2, oob, addr = f[1:8]
    dims, strides, box, es = f[8:13], f[13:17], f[17:22], f[22:27]
    if not 1 <= rank <= 5:
        _bad("tensorRank", rank, "1 .. 5")
    tm = TensorMap(dtype, rank, addr, dims[:rank], strides[:rank - 1], box[:rank], es[:rank], inter, swz, l2, oob)
    check_fields(dtype, rank, addr, tm.dims, tm.strides, tm.box, tm.elem_strides, inter, swz, l2, oob, at_use=True)
    return tm


# the fields tensormap.replace writes: PTX name -> (byte offset of ordinal 0 in the 128 bytes, struct format of one
# value, ordinals); offsets follow _HEAD
FIELDS = {"global_address": (16, "<Q", 1), "global_dim": (24, "<Q", 5), "global_stride": (64, "<Q", 4),
          "box_dim": (96, "<H", 5), "element_stride": (106, "<B", 5), "rank": (5, "<B", 1),
          "elemtype": (4, "<B", 1), "interleave_layout": (6, "<B", 1), "swizzle_mode": (7, "<B", 1),
          "fill_mode": (9, "<B", 1)}


def swizzle_offsets(offsets: np.ndarray, swizzle_bytes: int) -> np.ndarray:
    """Shared-memory byte offsets after the TMA / wgmma swizzle of span 32, 64 or 128 bytes: the 16-byte chunk index
    (bits 4..) is XORed with the 128-byte row index (bits 7..) modulo span / 16 (CUTLASS Swizzle<1|2|3, 4, 3>)."""
    if not swizzle_bytes:
        return offsets
    mask = np.asarray(swizzle_bytes // 16 - 1, offsets.dtype)
    return offsets ^ (((offsets >> np.asarray(7, offsets.dtype)) & mask) << np.asarray(4, offsets.dtype))


def box_elements(tm: TensorMap, coords) -> tuple:
    """(global byte addresses, in-bounds mask) of the box at coords, each [count(d_rank-1), ..., count(d_0)]."""
    grids = np.meshgrid(*[c + np.arange(n) * e for c, n, e in zip(coords, tm.counts, tm.elem_strides, strict=True)],
                        indexing="ij")  # dims innermost first
    inb = np.ones(grids[0].shape, np.bool_)
    addr = np.full(grids[0].shape, tm.address, np.int64)
    byte_strides = (tm.esize,) + tuple(tm.strides)
    for g, d, s in zip(grids, tm.dims, byte_strides, strict=True):
        inb &= (g >= 0) & (g < d)
        addr += np.where(inb, g, 0) * s
    # meshgrid(ij) is [d0, d1, ...]: transpose so the innermost dim is last (row-major box in shared memory)
    return addr.transpose(), inb.transpose()

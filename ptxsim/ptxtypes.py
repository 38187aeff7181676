"""PTX fundamental types: one table from type name to (bits, kind, numpy dtype)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PtxType:
    name: str  # "f32"
    bits: int
    kind: str  # "u" "s" "b" "f" "pred" "packed"
    dtype: np.dtype  # numpy dtype of one value (packed types use their container uint)

    @property
    def signed(self) -> bool:
        return self.kind == "s"

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def uint(self) -> np.dtype:
        return UINT[self.bits]


UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32), 64: np.dtype(np.uint64),
        1: np.dtype(np.bool_), 128: np.dtype(np.uint64)}
SINT = {8: np.dtype(np.int8), 16: np.dtype(np.int16), 32: np.dtype(np.int32), 64: np.dtype(np.int64)}


def _t(name, bits, kind, dtype):
    return name, PtxType(name, bits, kind, np.dtype(dtype))


TYPES = dict([
    _t("pred", 1, "pred", np.bool_),
    _t("b8", 8, "b", np.uint8), _t("b16", 16, "b", np.uint16), _t("b32", 32, "b", np.uint32),
    _t("b64", 64, "b", np.uint64), _t("b128", 128, "b", np.uint64),
    _t("u8", 8, "u", np.uint8), _t("u16", 16, "u", np.uint16), _t("u32", 32, "u", np.uint32),
    _t("u64", 64, "u", np.uint64),
    _t("s8", 8, "s", np.int8), _t("s16", 16, "s", np.int16), _t("s32", 32, "s", np.int32),
    _t("s64", 64, "s", np.int64),
    _t("f16", 16, "f", np.float16), _t("f32", 32, "f", np.float32), _t("f64", 64, "f", np.float64),
    _t("bf16", 16, "packed", np.uint16), _t("tf32", 32, "packed", np.uint32),
    _t("f16x2", 32, "packed", np.uint32), _t("bf16x2", 32, "packed", np.uint32),
    _t("e4m3", 8, "packed", np.uint8), _t("e5m2", 8, "packed", np.uint8),
    _t("e4m3x2", 16, "packed", np.uint16), _t("e5m2x2", 16, "packed", np.uint16),
    _t("e4m3x4", 32, "packed", np.uint32), _t("e5m2x4", 32, "packed", np.uint32),
    _t("s4", 4, "packed", np.uint8), _t("u4", 4, "packed", np.uint8),
])


def type_bits(name: str) -> int:
    return TYPES[name.lstrip(".")].bits


def ptx_type(name: str) -> PtxType:
    return TYPES[name.lstrip(".")]


def is_type(mod: str) -> bool:
    return mod.lstrip(".") in TYPES

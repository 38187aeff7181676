"""Tensor maps for `cp.async.bulk.tensor`: from the NumPy-order request a kernel module makes
(`backend.tensor_map(array, box, swizzle, shape, oob_fill)`) to the innermost-first parameters of the driver's
cuTensorMapEncodeTiled, which the gpu backend passes to the driver and the sim backend to ptxsim's host helper
(ptxsim.tensormap.encode_tiled, which checks the driver's rules). One place for the translation, so both backends
describe the same map.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from contract.device import DeviceArray, TensorMapArg
from harness.errors import InputError

# CUtensorMapDataType by NumPy dtype. FP8 (e4m3/e5m2) and other 1-byte types travel as UINT8: TMA copies bytes.
DATA_TYPES = {("u", 1): 0, ("i", 1): 0, ("V", 1): 0, ("u", 2): 1, ("u", 4): 2, ("i", 4): 3, ("u", 8): 4, ("i", 8): 5,
              ("f", 2): 6, ("f", 4): 7, ("f", 8): 8}
BFLOAT16 = 9
SWIZZLE_CODES = {0: 0, 32: 1, 64: 2, 128: 3}  # CUtensorMapSwizzle NONE, 32B, 64B, 128B
OOB_FILL_CODES = {"zero": 0, "nan": 1}  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE, _NAN_REQUEST_ZERO_FMA
L2_PROMOTION_128B = 2  # CU_TENSOR_MAP_L2_PROMOTION_L2_128B, what CUTLASS and DeepGEMM use


@dataclass(frozen=True)
class TiledParams:
    """cuTensorMapEncodeTiled's parameters, innermost dimension first (strides in bytes, of dims 1..rank-1)."""

    data_type: int
    rank: int
    address: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    swizzle: int
    l2_promotion: int
    oob_fill: int


def data_type_code(dtype) -> int:
    """The CUtensorMapDataType of a NumPy dtype (bf16 by name: ml_dtypes' bfloat16 has kind 'V')."""
    dt = np.dtype(dtype)
    if dt.name == "bfloat16":
        return BFLOAT16
    code = DATA_TYPES.get((dt.kind, dt.itemsize))
    if code is None:
        raise InputError(f"tensor_map: dtype {dt}: no CUtensorMapDataType for it; expected a 1-, 2-, 4- or 8-byte "
                         f"integer, float16/bfloat16/float32/float64, or a 1-byte type such as e4m3")
    return code


def tiled_params(array: DeviceArray, box: Sequence[int], swizzle: int = 128, shape: Sequence[int] | None = None,
                 oob_fill: str = "zero") -> TiledParams:
    """Check a NumPy-order tensor-map request and turn it into the driver's innermost-first parameters.

    Raises:
        InputError: naming the bad argument (not a DeviceArray, a shape of another size, a box of another rank or
            outside 1..256, an unknown swizzle or fill), before any driver call.
    """
    if not isinstance(array, DeviceArray):
        raise InputError(f"tensor_map: array is a {type(array).__name__}; expected a DeviceArray")
    view = tuple(int(d) for d in (array.shape if shape is None else shape))
    box_t = tuple(int(b) for b in box)
    where = f"tensor_map over {tuple(array.shape)} {np.dtype(array.dtype)}"
    if not 1 <= len(view) <= 5 or any(d < 1 for d in view):
        raise InputError(f"{where}: shape {view}; expected 1 to 5 positive sizes")
    if int(np.prod(view, dtype=np.int64)) != array.size:
        raise InputError(f"{where}: shape {view} holds {int(np.prod(view, dtype=np.int64))} elements; the array "
                         f"holds {array.size} (a re-view must keep the size)")
    if len(box_t) != len(view) or any(not 1 <= b <= 256 for b in box_t):
        raise InputError(f"{where}: box {box_t}; expected {len(view)} sizes (one per dimension of {view}), "
                         f"each 1..256")
    if swizzle not in SWIZZLE_CODES:
        raise InputError(f"{where}: swizzle={swizzle!r}; expected one of {sorted(SWIZZLE_CODES)} (bytes)")
    if oob_fill not in OOB_FILL_CODES:
        raise InputError(f"{where}: oob_fill={oob_fill!r}; expected one of {sorted(OOB_FILL_CODES)}")
    esize = np.dtype(array.dtype).itemsize
    dims = tuple(reversed(view))
    strides, step = [], esize
    for d in dims[:-1]:
        step *= d
        strides.append(step)
    return TiledParams(data_type_code(array.dtype), len(view), int(array.addr), dims, tuple(strides),
                       tuple(reversed(box_t)), (1,) * len(view), SWIZZLE_CODES[swizzle], L2_PROMOTION_128B,
                       OOB_FILL_CODES[oob_fill])


def request(array: DeviceArray, box, swizzle, shape, oob_fill, raw: bytes = b"", handle=None) -> TensorMapArg:
    """The TensorMapArg a backend returns (the request in NumPy order plus what the backend made of it)."""
    return TensorMapArg(array, tuple(int(d) for d in (array.shape if shape is None else shape)),
                        tuple(int(b) for b in box), int(swizzle), str(oob_fill), raw=raw, handle=handle)

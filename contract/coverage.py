"""What part of an output a (possibly sampled) run wrote: outputs start as poison bytes, so an element whose bytes are
not all poison was written. A sampled simulation (ptxsim `sample_ctas`) runs a subset of CTAs; its check covers
exactly the elements those CTAs wrote and says how much of the output that was."""
from __future__ import annotations

import numpy as np

POISON_BYTE = 0xFF  # bf16 0xFFFF and f32 0xFFFFFFFF are NaN, int32 is -1, e4m3 0xFF is NaN


def written(arr: np.ndarray) -> np.ndarray:
    """Per element of `arr`: True where some byte differs from the poison byte."""
    arr = np.ascontiguousarray(arr)
    raw = arr.view(np.uint8).reshape(*arr.shape, arr.dtype.itemsize)
    return (raw != POISON_BYTE).any(axis=-1)


def tile_columns(mask: np.ndarray) -> tuple[np.ndarray, str]:
    """Columns written in a row block of a tiled output (every CTA writes whole tiles: all rows of the block on the
    same columns). Returns (written columns, "") or (columns, a message naming the first row that differs)."""
    cols = mask.any(axis=0)
    differs = np.flatnonzero((mask != cols[None, :]).any(axis=1))
    if differs.size:
        r = int(differs[0])
        missing = np.flatnonzero(cols & ~mask[r])
        where = f"column {int(missing[0])}" if missing.size else "the columns written in other rows"
        return cols, f"row {r} of the block lacks {where} written in other rows of the same block (a partial tile)"
    return cols, ""


def fraction(covered: int, total: int) -> float:
    return float(covered) / float(total) if total else 1.0

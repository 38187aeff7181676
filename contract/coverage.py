"""What part of an output a (possibly sampled) run wrote: outputs start as poison bytes, so an element whose bytes are
not all poison was written. A sampled simulation (ptxsim `sample_ctas`) runs a subset of CTAs; its check covers
exactly the elements those CTAs wrote and says how much of the output that was."""
from __future__ import annotations

import numpy as np

POISON_BYTE = 0xFF  # bf16 0xFFFF and f32 0xFFFFFFFF are NaN, int32 is -1, e4m3 0xFF is NaN


def written(arr: np.ndarray) -> np.ndarray:
    """Per element of `arr`: True where some byte differs from the poison byte.

    NOTE: an element written with exactly the poison bytes (bf16/f32/e4m3 NaN 0xFF.., int32 -1) reads as unwritten, so
    a sampled check skips it; no kernel output except align's block_expert (always checked whole) holds such values.
    """
    arr = np.ascontiguousarray(arr)
    size = arr.dtype.itemsize
    if size in _WORDS:  # one compare per element against the all-poison word (a byte compare and any() is ~8x slower)
        word = _WORDS[size]
        return arr.view(word) != word(int.from_bytes(bytes([POISON_BYTE]) * size, "little"))
    raw = arr.view(np.uint8).reshape(*arr.shape, size)
    return (raw != POISON_BYTE).any(axis=-1)


_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def tile_holes(mask: np.ndarray) -> str:
    """"" when the written elements of a row block look like whole tiles, else a message naming a hole.

    CTAs write whole tiles, but the tile height is the implementation's, so rows are grouped into runs of identical
    column sets: a run whose columns are a strict subset of the (identical) runs on both sides of it is a hole in a
    tile. (A hole in a tile's first or last row looks like a different tile and is not caught here; the unsampled
    check at small presets catches every hole.)"""
    rows = np.flatnonzero((mask[1:] != mask[:-1]).any(axis=1)) + 1
    starts = np.concatenate(([0], rows))
    runs = [mask[s] for s in starts]
    for k in range(1, len(runs) - 1):
        before, here, after = runs[k - 1], runs[k], runs[k + 1]
        if np.array_equal(before, after) and np.all(here <= before) and not np.array_equal(here, before):
            col = int(np.flatnonzero(before & ~here)[0])
            return (f"row {int(starts[k])} of the block lacks column {col}, written in the rows around it "
                    "(a partial tile)")
    return ""


def fraction(covered: int, total: int) -> float:
    return float(covered) / float(total) if total else 1.0

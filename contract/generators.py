"""Seeded input generators (kernels.md: routing skews, near-tie avoidance for gate, never all-zero data)."""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from contract.errors import InputError
from contract.presets import Preset, check_skew

BF16 = np.dtype(ml_dtypes.bfloat16)
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)

# kernels.md: K-th vs (K+1)-th candidate and TG-th vs (TG+1)-th group score at least 1e-3 apart.
SELECTION_GAP = 1e-3
# NOTE: beyond kernels.md, neighbours inside the top-K are kept 1e-5 apart too: ids are written in descending sb order,
# and two fp32 sigmoids (ex2.approx vs expf) may differ by a few ulps, which must not swap the output order.
ORDER_GAP = 1e-5
_MAX_RESAMPLES = 200


def random_bf16(rng: np.random.Generator, shape, std: float = 1.0) -> np.ndarray:
    """Normal bf16 values (chunked, so GPU-sized weights do not need a float64 copy)."""
    out = np.empty(shape, dtype=BF16)
    flat = out.reshape(-1)
    chunk = 1 << 24
    for start in range(0, flat.size, chunk):
        stop = min(start + chunk, flat.size)
        flat[start:stop] = (rng.standard_normal(stop - start, dtype=np.float32) * np.float32(std)).astype(BF16)
    return out


# NOTE: a keyed tensor's element i is drawn in the Philox stream of block i // STREAM_BLOCK (key = seed and a hash of
# the tensor's name, counter = the block index), so any element can be produced without drawing the ones before it.
# Philox's bits are stable across NumPy versions; Generator.standard_normal's use of them is not promised to be, so the
# values are those of the pinned NumPy (constraints.txt): host and device fills in one process always agree.
STREAM_BLOCK = 1 << 15
_MASK64 = (1 << 64) - 1
# Recently drawn blocks, in the tensor's dtype, by (tensor, block): a sampled dsv3 GEMM row draws its experts'
# weights twice, once as the simulator fills the pages its CTAs touch and again for the check's reference (a fifth of
# the row's time at dsv3-decode), and the layer's stages draw the same rows again. A block is 32 KiB (e4m3) or 64 KiB
# (bf16); the budget holds two of dsv3's up-projection experts in bf16.
BLOCK_CACHE_BYTES = 256 << 20
_block_cache: dict[tuple, np.ndarray] = {}
_block_cache_bytes = 0


def _cached_block(tensor_id: tuple, block: int, make) -> np.ndarray:
    """Block `block` of the tensor `tensor_id`, from the cache or `make()` (then kept, the oldest evicted)."""
    global _block_cache_bytes
    key = (tensor_id, block)
    hit = _block_cache.pop(key, None)
    if hit is None:
        hit = make()
        hit.flags.writeable = False  # shared by every caller: nobody may change it in place
        _block_cache_bytes += hit.nbytes
        while _block_cache_bytes > BLOCK_CACHE_BYTES and _block_cache:
            _block_cache_bytes -= _block_cache.pop(next(iter(_block_cache))).nbytes
    _block_cache[key] = hit  # most recently used last
    return hit


def clear_block_cache() -> int:
    """Drop every cached block (a finished row's: the next row draws other tensors or seeds); the bytes dropped."""
    global _block_cache_bytes
    dropped = _block_cache_bytes
    _block_cache.clear()
    _block_cache_bytes = 0
    return dropped


def tensor_key(seed: int, name: str) -> np.ndarray:
    """The Philox key of a tensor: the seed and a stable 64-bit hash of its name."""
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return np.array([int(seed) & _MASK64, int.from_bytes(digest, "little")], np.uint64)


@dataclass(frozen=True)
class KeyedNormal:
    """A bf16 tensor of N(0, std^2) values defined element by element by (seed, name, flat index).

    Never materialised unless asked: `elements`/`rows`/`fill_bytes` produce any part of it, and the same element has
    the same value however the tensor is cut (pages of simulated memory, chunks of a GPU fill, reference rows).
    Indexing (`t[i]`, `t[a:b]`) and `np.asarray(t)` materialise just that part / the whole tensor.
    """

    name: str
    shape: tuple[int, ...]
    seed: int
    std: float = 1.0

    dtype = BF16
    itemsize = BF16.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def _block(self, key: np.ndarray, block: int) -> np.ndarray:
        counter = np.array([0, 0, block, 0], np.uint64)
        gen = np.random.Generator(np.random.Philox(counter=counter, key=key))
        return gen.standard_normal(STREAM_BLOCK, dtype=np.float32)

    def _cast(self, values: np.ndarray) -> np.ndarray:
        """fp32 N(0, std^2) draws -> the tensor's element type."""
        return values.astype(BF16)

    def elements(self, start: int, stop: int) -> np.ndarray:
        """Flat elements [start, stop) in the tensor's dtype."""
        if not 0 <= start <= stop <= self.size:
            raise InputError(f"tensor {self.name}: elements [{start}, {stop}) outside [0, {self.size})")
        if start == stop:
            return np.empty(0, self.dtype)
        key = tensor_key(self.seed, self.name)
        first, last = start // STREAM_BLOCK, (stop - 1) // STREAM_BLOCK
        tensor_id = (type(self).__name__, self.name, self.seed, self.std)
        blocks = [_cached_block(tensor_id, b, lambda b=b: self._cast(self._block(key, b) * np.float32(self.std)))
                  for b in range(first, last + 1)]
        lo = start - first * STREAM_BLOCK
        # NOTE: the cast is elementwise, so casting whole blocks and cutting equals cutting and casting
        return np.concatenate(blocks)[lo: lo + stop - start]

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) along the first axis."""
        row = self.size // self.shape[0] if self.shape[0] else 0
        return self.elements(start * row, stop * row).reshape((stop - start, *self.shape[1:]))

    def fill_bytes(self, start: int, stop: int) -> np.ndarray:
        """Bytes [start, stop) of the tensor's C-order image (ends must fall on element boundaries)."""
        if start % self.itemsize or stop % self.itemsize:
            raise InputError(f"tensor {self.name}: byte range [{start}, {stop}) does not fall on "
                             f"{self.itemsize}-byte element boundaries")
        return self.elements(start // self.itemsize, stop // self.itemsize).view(np.uint8)

    def materialise(self) -> np.ndarray:
        return self.elements(0, self.size).reshape(self.shape)

    def __array__(self, dtype=None, copy=None):
        arr = self.materialise()
        return arr if dtype is None else arr.astype(dtype)

    def __getitem__(self, index):
        """t[i] or t[a:b] (first axis, step 1) without materialising the rest; anything else via the whole array."""
        if isinstance(index, (int, np.integer)):
            i = int(index) + (self.shape[0] if index < 0 else 0)
            if not 0 <= i < self.shape[0]:
                raise InputError(f"tensor {self.name}: row {index} outside [0, {self.shape[0]})")
            return self.rows(i, i + 1)[0]
        if isinstance(index, slice) and index.step in (None, 1):
            lo, hi, _ = index.indices(self.shape[0])
            return self.rows(lo, max(lo, hi))
        return self.materialise()[index]


def keyed_bf16(seed: int, name: str, shape, std: float = 1.0, lazy: bool = False):
    """A KeyedNormal tensor, or (lazy=False) its values as an ndarray."""
    tensor = KeyedNormal(name, tuple(int(d) for d in shape), int(seed), float(std))
    return tensor if lazy else tensor.materialise()


E4M3_MAX = 448.0
# NOTE: the typical |code| of a block quantised as DeepSeek-V3 does (amax -> 448): a Gaussian block of 128 x 128 has
# amax ~ 4 sigma, so its codes have sigma ~ 448 / 4; 1 in ~16000 draws lies past 4 sigma and saturates at 448.
E4M3_CODE_STD = 112.0


@dataclass(frozen=True)
class KeyedE4M3(KeyedNormal):
    """An e4m3 tensor of codes round(N(0, std^2)) (RNE to e4m3, saturated at +-448), keyed like KeyedNormal: the
    quantised payload of some tensor without ever holding that tensor (weights at DeepSeek-V3 size are 7 GB)."""

    std: float = E4M3_CODE_STD

    dtype = E4M3
    itemsize = E4M3.itemsize

    def _cast(self, values: np.ndarray) -> np.ndarray:
        # NOTE: ml_dtypes turns values above 464 into NaN instead of saturating, so clip first (as act_quant does)
        return np.clip(values, -E4M3_MAX, E4M3_MAX).astype(E4M3)


def keyed_e4m3(seed: int, name: str, shape, std: float = E4M3_CODE_STD, lazy: bool = False):
    """A KeyedE4M3 tensor of e4m3 codes, or (lazy=False) its values as an ndarray."""
    tensor = KeyedE4M3(name, tuple(int(d) for d in shape), int(seed), float(std))
    return tensor if lazy else tensor.materialise()


def keyed_scales(seed: int, name: str, shape, base: float, spread: int = 2) -> np.ndarray:
    """fp32 quantisation scales base * 2^k with k in [-spread, spread], drawn per element from a keyed stream (the
    same scale for the same block however the tensor is cut; scales are small, so always materialised).

    Different blocks get different scales, so a kernel that applies a scale to the wrong group or block is off by up to
    4^spread; powers of two keep every dequantised value exact in fp32.
    """
    draws = KeyedNormal(name, tuple(int(d) for d in shape), int(seed)).materialise().astype(np.float32)
    k = np.clip(np.rint(draws * np.float32(spread / 1.5)), -spread, spread)
    return (np.float32(base) * np.exp2(k)).astype(np.float32)


def fill_chunks(tensor, chunk_bytes: int = 64 << 20) -> Iterator[tuple[int, np.ndarray]]:
    """(byte offset, uint8 chunk) pieces covering a tensor's C-order image, for filling device memory chunk by chunk
    (about `chunk_bytes` on the host at once: rounded down to whole stream blocks, at least one).

    Works on anything with `nbytes` and `fill_bytes(start, stop)` (KeyedNormal) or on an ndarray.
    """
    if chunk_bytes < 1:
        raise InputError(f"fill_chunks: chunk_bytes must be >= 1, got {chunk_bytes}")
    if isinstance(tensor, np.ndarray):
        flat = np.ascontiguousarray(tensor).reshape(-1).view(np.uint8)
        for start in range(0, flat.size, chunk_bytes):
            yield start, flat[start: start + chunk_bytes]
        return
    unit = tensor.itemsize * STREAM_BLOCK
    step = max(unit, chunk_bytes // unit * unit)
    for start in range(0, tensor.nbytes, step):
        yield start, tensor.fill_bytes(start, min(start + step, tensor.nbytes))


def write_chunked(tensor, write, chunk_bytes: int = 64 << 20) -> int:
    """Fill device memory with a tensor chunk by chunk, never holding it whole on the host: calls
    write(byte_offset, uint8 chunk) per chunk (e.g. a cuMemcpyHtoD to base + offset). Returns the bytes written."""
    done = 0
    for offset, chunk in fill_chunks(tensor, chunk_bytes):
        write(offset, chunk)
        done += chunk.size
    return done


def routing_bias(preset: Preset, skew: str, rng: np.random.Generator) -> np.ndarray:
    """e_score_correction_bias for a skew; 'extreme' boosts K experts two per group in the first K/2 groups."""
    check_skew(skew)
    E = preset.E
    if skew == "balanced":
        return rng.normal(0.0, 0.1, E).astype(np.float32)
    if skew == "imbalanced":
        zipf = 0.5 / np.power(np.arange(1, E + 1, dtype=np.float64), 0.6)
        return (zipf + rng.normal(0.0, 0.02, E)).astype(np.float32)
    bias = rng.normal(0.0, 0.1, E)
    per_group = preset.experts_per_group
    if preset.K % 2 or preset.K // 2 > preset.TG or per_group < 2:
        raise InputError(f"extreme skew needs K even and K/2 <= TG with >= 2 experts per group (preset {preset.name})")
    favoured = [g * per_group + j for g in range(preset.K // 2) for j in (0, 1)]
    bias[favoured] += 2.0
    return bias.astype(np.float32)


def selection_margins(logits: np.ndarray, bias: np.ndarray, preset: Preset) -> np.ndarray:
    """Per token, True where the gate's selection is safely away from ties (see SELECTION_GAP/ORDER_GAP)."""
    s = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
    sb = s + bias.astype(np.float64)
    T = sb.shape[0]
    grouped = np.sort(sb.reshape(T, preset.G, preset.experts_per_group), axis=2)
    group_score = grouped[:, :, -1] + grouped[:, :, -2]
    gs = -np.sort(-group_score, axis=1)
    ok = gs[:, preset.TG - 1] - gs[:, preset.TG] >= SELECTION_GAP if preset.TG < preset.G else np.ones(T, bool)
    kept = np.argsort(-group_score, axis=1, kind="stable")[:, : preset.TG]
    mask = np.zeros((T, preset.G), bool)
    np.put_along_axis(mask, kept, True, axis=1)
    cand = np.where(np.repeat(mask, preset.experts_per_group, axis=1), sb, -np.inf)
    top = -np.sort(-cand, axis=1)[:, : preset.K + 1]
    ok &= top[:, preset.K - 1] - top[:, preset.K] >= SELECTION_GAP
    ok &= np.all(top[:, : preset.K - 1] - top[:, 1 : preset.K] >= ORDER_GAP, axis=1)
    return ok


def gate_inputs(preset: Preset, skew: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Router logits ~ N(0,1) and a skew's bias, resampling tokens whose selection is near a tie."""
    bias = routing_bias(preset, skew, rng)
    logits = rng.standard_normal((preset.T, preset.E), dtype=np.float32)
    for _ in range(_MAX_RESAMPLES):
        bad = ~selection_margins(logits, bias, preset)
        if not bad.any():
            return {"logits": logits, "bias": bias}
        logits[bad] = rng.standard_normal((int(bad.sum()), preset.E), dtype=np.float32)
    raise InputError(f"could not draw tie-free gate inputs for preset {preset.name}, skew {skew}")

"""The device rounding primitives (bf16_rn, e4m3_rn_sat, bf16 unpack) against ml_dtypes, run through ptxsim."""
import ml_dtypes
import numpy as np
import pytest
from numba import cuda, types

from cuda_impl.prims import bf16_hi, bf16_lo, bf16_rn, e4m3_rn_sat, f32_bits

pytestmark = pytest.mark.sim

E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
BF16 = np.dtype(ml_dtypes.bfloat16)


def rounding_kernel(x, bf, f8, unpack, n):
    i = cuda.grid(1)
    if i < n:
        bf[i] = bf16_rn(x[i])
        f8[i] = e4m3_rn_sat(x[i])
        w = f32_bits(x[i])
        unpack[2 * i] = bf16_lo(w)
        unpack[2 * i + 1] = bf16_hi(w)


SIG = (types.float32[::1], types.uint32[::1], types.uint32[::1], types.float32[::1], types.int32)


def tricky_values(rng) -> np.ndarray:
    """Every e4m3 value and the midpoints between neighbours (+-1 f32 ulp), bf16 halfway cases, specials, randoms."""
    grid = np.arange(256, dtype=np.uint8).view(E4M3).astype(np.float32)
    grid = np.sort(grid[np.isfinite(grid)])
    mids = ((grid[1:].astype(np.float64) + grid[:-1]) / 2).astype(np.float32)
    around = np.concatenate([mids, np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf))])
    bf_half = (rng.integers(0, 2**16, 512, dtype=np.uint32) << 16 | np.uint32(0x8000)).view(np.float32)
    bf_half = bf_half[np.isfinite(bf_half)]
    specials = np.array([0.0, -0.0, 448.0, -448.0, 464.0, 465.0, 480.0, 1e30, -1e30, np.inf, -np.inf, np.nan,
                         2.0**-6, 2.0**-7, 2.0**-9, 2.0**-10, 2.0**-10 * 1.0001, 1e-40, -1e-40, 3.4e38],
                        dtype=np.float32)
    randoms = (rng.standard_normal(2048) * rng.choice([1e-3, 1.0, 30.0, 300.0], 2048)).astype(np.float32)
    return np.concatenate([grid, around, bf_half, specials, randoms]).astype(np.float32)


def reference_e4m3(x: np.ndarray) -> np.ndarray:
    clipped = np.where(np.isnan(x), x, np.clip(x, -448.0, 448.0)).astype(np.float32)
    return clipped.astype(E4M3).view(np.uint8).astype(np.uint32)


def test_rounding_matches_ml_dtypes(rng):
    from harness.backends.sim import SimBackend

    x = tricky_values(rng)
    n = x.size
    b = SimBackend()
    xd = b.to_device(x)
    outs = [b.empty((n,), np.uint32), b.empty((n,), np.uint32), b.empty((2 * n,), np.float32)]
    b.launch_numba(rounding_kernel, SIG, (n + 127) // 128, 128, [xd, *outs, np.int32(n)])
    bf, f8, unpack = (b.to_host(o) for o in outs)

    want_bf = x.astype(BF16).view(np.uint16).astype(np.uint32)
    nan = np.isnan(x)
    assert np.array_equal(bf[~nan], want_bf[~nan]), np.flatnonzero(bf[~nan] != want_bf[~nan])[:10]
    assert np.all((bf[nan] & 0x7F80) == 0x7F80) and np.all(bf[nan] & 0x7F), "NaN must stay a NaN"

    want_f8 = reference_e4m3(x)
    bad = np.flatnonzero(f8 != want_f8)
    assert bad.size == 0, f"e4m3 mismatches at {x[bad[:8]]}: got {f8[bad[:8]]}, expected {want_f8[bad[:8]]}"

    bits = x.view(np.uint32)
    lo = (bits << 16).view(np.float32)
    hi = (bits & np.uint32(0xFFFF0000)).view(np.float32)
    assert np.array_equal(unpack[0::2].view(np.uint32), lo.view(np.uint32))
    assert np.array_equal(unpack[1::2].view(np.uint32), hi.view(np.uint32))

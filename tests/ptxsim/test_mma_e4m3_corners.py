"""Corners of ptxsim's mma.sync m16n8k32 e4m3 (the FP8 GEMM's rung 1): the largest finite codes, subnormals, signed
zeros, the NaN code, and an fp32 accumulator that the products add to exactly."""
import ml_dtypes
import numpy as np
import pytest
from test_isa_more import MMA_BODY, _frag_a, _frag_b, _frag_c, run

pytestmark = pytest.mark.sim

E4M3 = ml_dtypes.float8_e4m3fn
BODY = MMA_BODY.replace("SHAPE", "m16n8k32").replace("T", "e4m3")


def _mma(A_bits: np.ndarray, B_bits: np.ndarray, C: np.ndarray) -> np.ndarray:
    """D = A @ B + C on the simulator; A [16, 32] and B [32, 8] as e4m3 bit patterns, D as [16, 8] fp32."""
    fa = np.ascontiguousarray(_frag_a(A_bits.view(E4M3), 4, 32)).view(np.uint32)
    fb = np.ascontiguousarray(_frag_b(B_bits.view(E4M3), 4, 32)).view(np.uint32)
    d = np.zeros((32, 4), np.float32)
    run(BODY, fa.reshape(-1), fb.reshape(-1), _frag_c(C).reshape(-1), d.reshape(-1), threads=32)
    out = np.zeros((16, 8), np.float32)
    lane = np.arange(32)
    g, t = lane // 4, lane % 4
    for i in range(4):
        out[g + 8 * (i >= 2), 2 * t + (i & 1)] = d[:, i]
    return out


def test_largest_codes_sum_exactly_in_fp32():
    A = np.full((16, 32), 0x7E, np.uint8)  # +448
    B = np.full((32, 8), 0x7E, np.uint8)
    B[:, 1] = 0xFE  # -448
    D = _mma(A, B, np.zeros((16, 8), np.float32))
    assert np.all(D[:, 0] == 32 * 448.0 * 448.0) and np.all(D[:, 1] == -32 * 448.0 * 448.0)


def test_subnormals_and_signed_zeros():
    A = np.full((16, 32), 0x01, np.uint8)  # 2^-9, the smallest subnormal
    A[:, 16:] = 0x80  # -0
    B = np.full((32, 8), 0x07, np.uint8)  # 7 * 2^-9, the largest subnormal
    C = np.zeros((16, 8), np.float32)
    D = _mma(A, B, C)
    np.testing.assert_array_equal(D, np.full((16, 8), 16 * 7 * 2.0**-18, np.float32))


def test_one_subnormal_product_reaches_the_accumulator():
    A = np.full((16, 32), 0x38, np.uint8)  # 1.0
    B = np.zeros((32, 8), np.uint8)
    B[0] = 0x01  # one product of 2^-9 per column
    C = np.full((16, 8), 1.0, np.float32)
    D = _mma(A, B, C)
    np.testing.assert_array_equal(D, np.float32(1.0 + 2.0**-9))


def test_nan_code_poisons_its_row_only():
    A = np.full((16, 32), 0x38, np.uint8)
    A[3, 5] = 0x7F  # e4m3fn NaN
    B = np.full((32, 8), 0x38, np.uint8)
    D = _mma(A, B, np.zeros((16, 8), np.float32))
    assert np.all(np.isnan(D[3])) and not np.any(np.isnan(np.delete(D, 3, axis=0)))
    assert np.all(np.delete(D, 3, axis=0) == 32.0)

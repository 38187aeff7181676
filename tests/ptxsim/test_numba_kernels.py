"""PTX that Numba generates (compile_ptx, no GPU) run through ptxsim, checked against NumPy."""
import math

import numpy as np
import pytest

import ptxsim

pytestmark = pytest.mark.sim


def _compile(fn, sig):
    from numba import cuda

    ptx, _ = cuda.compile_ptx(fn, sig, cc=(9, 0))
    mod = ptxsim.load_ptx(ptx)
    return mod.kernel(mod.entries[0])


@pytest.fixture(scope="module")
def kernels():
    from numba import cuda, float32, float64, int32

    def saxpy(out, a, x, y):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a * x[i] + y[i]

    def block_sum(x, out):
        s = cuda.shared.array(128, float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        s[t] = x[i] if i < x.size else float32(0)
        cuda.syncthreads()
        k = 64
        while k > 0:
            if t < k:
                s[t] += s[t + k]
            cuda.syncthreads()
            k //= 2
        if t == 0:
            cuda.atomic.add(out, 0, s[0])

    def local_f64(x, idx, y):
        i = cuda.grid(1)
        if i < x.size:
            c = cuda.local.array(3, float64)
            c[0] = 1.0
            c[1] = -0.5
            c[2] = 0.25
            buf = cuda.local.array(8, float64)
            for k in range(8):
                buf[k] = x[(i + k) % x.size]
            v = buf[idx[i] % 8]
            y[i] = c[0] + v * (c[1] + v * c[2]) + math.sqrt(abs(v)) + math.exp(v * 0.1)

    return {
        "saxpy": _compile(saxpy, (float32[:], float32, float32[:], float32[:])),
        "block_sum": _compile(block_sum, (float32[:], float32[:])),
        "local_f64": _compile(local_f64, (float64[:], int32[:], float64[:])),
    }


def test_numba_saxpy(kernels, rng):
    n = 3000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    a = np.float32(rng.standard_normal())
    stats = ptxsim.launch(kernels["saxpy"], (n + 255) // 256, 256,
                          [ptxsim.NumbaArray(out), a, ptxsim.NumbaArray(x), ptxsim.NumbaArray(y)])
    ref = (a.astype(np.float64) * x + y).astype(np.float32)  # fma: one rounding
    np.testing.assert_array_equal(out, ref)
    assert stats.thread_instructions > n * 10


def test_numba_shared_reduction_atomic(kernels, rng):
    x = rng.standard_normal(1000).astype(np.float32)
    out = np.zeros(1, np.float32)
    ptxsim.launch(kernels["block_sum"], 8, 128, [ptxsim.NumbaArray(x), ptxsim.NumbaArray(out)])
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-4)


def test_numba_local_arrays_doubles(kernels, rng):
    n = 200
    x = rng.standard_normal(n)
    idx = rng.integers(0, 100, n).astype(np.int32)
    y = np.zeros(n)
    ptxsim.launch(kernels["local_f64"], 2, 128, [ptxsim.NumbaArray(x), ptxsim.NumbaArray(idx), ptxsim.NumbaArray(y)])
    i = np.arange(n)
    v = x[(i + idx % 8) % n]
    ref = 1.0 + v * (-0.5 + v * 0.25) + np.sqrt(np.abs(v)) + np.exp(v * 0.1)
    np.testing.assert_allclose(y, ref, rtol=1e-15, atol=1e-15)


def test_numba_array_args_must_be_wrapped(kernels):
    with pytest.raises(ptxsim.ParamTypeError, match="NumbaArray"):
        ptxsim.launch(kernels["saxpy"], 1, 32, [np.zeros(4, np.float32), np.float32(1), np.zeros(4, np.float32),
                                                np.zeros(4, np.float32)])

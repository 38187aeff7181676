"""Independent cross-check: the same kernel source under Numba's own CUDA simulator agrees with ptxsim.

Numba's simulator runs ~5,000 threads/s, so this uses a micro preset (4 tokens, 8 experts, 128 hidden) and, for the
grouped GEMM, only two active row blocks; all launches run in ONE subprocess (NUMBA_ENABLE_CUDASIM=1 must be set
before numba.cuda is imported). Integer and FP8 outputs must match bit for bit; float outputs may differ by FMA
contraction (ptxas/NVVM fuse a*b+c, the simulator rounds twice): <= 1 bf16 ulp, topk_w to 1e-6 relative.
"""
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from contract.presets import Preset

pytestmark = pytest.mark.sim

MICRO = Preset("micro", T=4, H=128, E=8, K=2, G=4, TG=2, I=64, BM=16)
HERE = Path(__file__).resolve().parent


def make_cases(seed: int) -> list:
    from contract.kernels import get_kernel

    cases = []
    for i, (kernel, params) in enumerate([("gate", {}), ("align", {}), ("permute", {}), ("act_quant", {}),
                                          ("act_quant", {"pow2_scale": True}), ("swiglu", {}), ("combine", {}),
                                          ("grouped_gemm", {"variant": "up"}), ("grouped_gemm", {"variant": "down"})]):
        skew = ("balanced", "imbalanced", "extreme")[(seed + i) % 3]
        inputs = get_kernel(kernel).make_inputs(MICRO, skew, seed + i, **params)
        if kernel == "grouped_gemm":  # keep two active row blocks: the simulator is slow
            be = inputs["block_expert"].copy()
            keep = np.flatnonzero(be >= 0)[:2]
            be[keep.max() + 1:] = -1
            inputs["block_expert"] = be
            inputs["total_padded"] = np.array([(keep.max() + 1) * MICRO.BM], np.int32)
        label = kernel + ("_pow2" if params.get("pow2_scale") else "") + (f"_{params['variant']}"
                                                                         if "variant" in params else "")
        cases.append((label, kernel, params, inputs))
    return cases


def bf16_close(a: np.ndarray, b: np.ndarray) -> bool:
    x, y = a.astype(np.float64), b.astype(np.float64)
    both_nan = np.isnan(x) & np.isnan(y)
    ulp = np.maximum(np.abs(x), np.abs(y)) * 2.0**-7
    return bool(np.all(both_nan | (np.abs(x - y) <= ulp)))


def test_numba_simulator_agrees_with_ptxsim(tmp_path, seed):
    import cuda_impl
    from contract.kernels import get_kernel
    from harness.backends.sim import SimBackend
    from harness.verify import run_kernel

    cases = make_cases(seed)
    with open(tmp_path / "cases.pkl", "wb") as f:
        pickle.dump({"preset": MICRO, "cases": cases}, f)
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    proc = subprocess.run([sys.executable, str(HERE / "cudasim_child.py"), str(tmp_path / "cases.pkl"),
                           str(tmp_path / "out.pkl")], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    with open(tmp_path / "out.pkl", "rb") as f:
        child = pickle.load(f)
    print("cudasim seconds:", {k: round(v, 1) for k, v in child["seconds"].items()})

    backend = SimBackend()
    for label, kernel, params, inputs in cases:
        _, ours, _ = run_kernel(cuda_impl.KERNELS[kernel], backend, kernel, MICRO, "balanced", 0, inputs=inputs,
                                **params)
        theirs = child["outputs"][label]
        check_params = {k: v for k, v in params.items() if k != "variant"}
        for side, outs in (("ptxsim", ours), ("cudasim", theirs)):
            res = get_kernel(kernel).check(outs, inputs, MICRO, **check_params)
            assert res.ok, f"{label} on {side}: {res.message}"
        for name, got in ours.items():
            other = theirs[name]
            if got.dtype.kind in "iu" or kernel == "act_quant":
                assert np.array_equal(got.view(np.uint8), other.view(np.uint8)), f"{label}.{name} differs bitwise"
            elif got.dtype == np.float32:
                np.testing.assert_allclose(got, other, rtol=1e-6, err_msg=f"{label}.{name}")
            else:
                assert bf16_close(got, other), f"{label}.{name} differs by more than 1 bf16 ulp"

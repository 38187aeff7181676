"""The fp8 layer (kernels.md "The layer", DeepSeek-V3's dataflow) on the hand-written PTX kernels, its GEMMs the
grouped_gemm_fp8 ladder's top rung, through ptxsim: the cases every path runs (tests/layer_fp8_cases.Fp8LayerTests),
and lazy weights giving the bit-identical layer.
"""
import pytest

from contract.presets import SKEWS
from tests.layer_fp8_cases import Fp8LayerTests

pytestmark = pytest.mark.sim


class TestFp8Layer(Fp8LayerTests):
    impl = "ptx_impl"

    def test_fp8_layer_with_lazy_weights_matches_materialised(self, backend, seed):
        """W1 / W2 as lazy KeyedE4M3 (simulated pages filled on first touch) give the bit-identical layer."""
        import numpy as np

        from contract.generators import KeyedE4M3
        from contract.kernels import get_kernel
        from contract.presets import get_preset
        from harness.verify import run_kernel

        skew = SKEWS[seed % len(SKEWS)]
        lazy_in, lazy_out, _ = run_kernel(self.layer, backend, "layer", "tiny", skew, seed, lazy=True, variant="fp8")
        assert isinstance(lazy_in["W1"], KeyedE4M3) and isinstance(lazy_in["W2"], KeyedE4M3)
        _, eager_out, _ = run_kernel(self.layer, backend, "layer", "tiny", skew, seed, lazy=False, variant="fp8")
        for name in ("out", "q", "scale"):
            assert np.array_equal(lazy_out[name].view(np.uint8), eager_out[name].view(np.uint8)), name
        assert get_kernel("layer").check(lazy_out, lazy_in, get_preset("tiny")).ok

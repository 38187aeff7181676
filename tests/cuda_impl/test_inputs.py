"""Bad inputs fail before any launch with an InputError naming the kernel, the value and what was expected."""
import dataclasses

import numpy as np
import pytest

from contract.presets import PRESETS
from harness.backends.base import Backend, DeviceArray
from harness.errors import InputError


class NoLaunch(Backend):
    """A backend that must never be asked to launch (input checks come first)."""

    def launch_numba(self, *a, **k):
        raise AssertionError("launched despite bad inputs")


def arr(shape, dtype):
    return DeviceArray(tuple(shape), np.dtype(dtype), addr=4096)


TINY = PRESETS["tiny"]


def test_wrong_shape_is_named():
    from cuda_impl import gate

    args = {"logits": arr((TINY.T, TINY.E + 1), np.float32), "bias": arr((TINY.E,), np.float32),
            "topk_ids": arr((TINY.T, TINY.K), np.int32), "topk_w": arr((TINY.T, TINY.K), np.float32)}
    with pytest.raises(InputError, match=r"gate: logits has shape \(64, 17\); expected \(64, 16\)"):
        gate.run(NoLaunch(), args, TINY)


def test_missing_argument_is_named():
    from cuda_impl import permute

    with pytest.raises(InputError, match="permute: argument 'x' missing"):
        permute.run(NoLaunch(), {}, TINY)


def test_unsupported_group_size():
    from cuda_impl import gate

    bad = dataclasses.replace(TINY, G=16)  # one expert per group: no top-2 group score
    with pytest.raises(InputError, match=r"E/G=1"):
        gate.run(NoLaunch(), {}, bad)


def test_gemm_tile_must_divide():
    from cuda_impl import grouped_gemm

    args = {"a": arr((TINY.P_max, 200), np.uint16), "w": arr((TINY.E, 256, 200), np.uint16)}
    with pytest.raises(InputError, match="Kd=200 is not a multiple of the K chunk BK=16"):
        grouped_gemm.run(NoLaunch(), args, TINY)


def test_act_quant_group_multiple():
    from cuda_impl import act_quant

    with pytest.raises(InputError, match="N=200 columns, not a multiple of 128"):
        act_quant.run(NoLaunch(), {"a": arr((4, 200), np.uint16)}, TINY)


def test_view_rejects_ragged_rows():
    from cuda_impl.common import view

    with pytest.raises(InputError, match="rows of 6 bytes, not a multiple of 8"):
        view(arr((2, 3), np.uint16), np.uint64, "k", "x")
    assert view(arr((2, 8), np.uint16), np.uint64, "k", "x").shape == (2, 2)

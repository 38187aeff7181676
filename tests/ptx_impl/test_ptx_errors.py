"""Assumptions are enforced before anything is launched, with InputError messages naming kernel, value and
expectation; the descriptor type-checks every launch value against the PTX parameter list."""
import dataclasses

import ml_dtypes
import numpy as np
import pytest

import ptx_impl
from contract.presets import get_preset
from harness.backends.base import Backend, DeviceArray
from harness.errors import InputError
from ptx_impl import act_quant, align, gate
from ptx_impl.descriptor import ptx_entry

TINY = get_preset("tiny")


class RecordingBackend(Backend):
    """Allocates nothing real; records launches so tests can see what would have run."""

    name = "recording"

    def __init__(self):
        self.launches = []
        self._next = 0x1000

    def empty(self, shape, dtype, fill_byte=0xFF):
        shape = tuple(int(d) for d in shape)
        self._next += 0x1000
        return DeviceArray(shape, np.dtype(dtype), self._next)

    def free(self, array):
        pass

    def launch_ptx(self, ptx, entry, grid, block, params, shared_bytes=0, tag=""):
        self.launches.append((entry, grid, block, list(params), shared_bytes))
        return None


def _arrays(backend, specs):
    return {name: backend.empty(shape, dtype) for name, (shape, dtype) in specs.items()}


def test_act_quant_rejects_n_not_multiple_of_128():
    be = RecordingBackend()
    args = _arrays(be, {"a": ((4, 200), ml_dtypes.bfloat16), "q": ((4, 200), ml_dtypes.float8_e4m3fn),
                        "scale": ((4, 1), np.float32)})
    with pytest.raises(InputError, match=r"ptx act_quant: N \(a.shape\[1\]\) = 200, expected a positive multiple"):
        act_quant.run(be, args, TINY)
    assert be.launches == []


def test_wrong_dtype_and_shape_are_named():
    be = RecordingBackend()
    args = _arrays(be, {"a": ((4, 256), np.float32), "q": ((4, 256), ml_dtypes.float8_e4m3fn),
                        "scale": ((4, 2), np.float32)})
    with pytest.raises(InputError, match=r"a.dtype = 'float32', expected bfloat16"):
        act_quant.run(be, args, TINY)
    args["a"] = be.empty((4, 256), ml_dtypes.bfloat16)
    args["scale"] = be.empty((4, 3), np.float32)
    with pytest.raises(InputError, match=r"scale.shape = \(4, 3\), expected \(4, 2\)"):
        act_quant.run(be, args, TINY)


def test_unknown_params_are_rejected():
    be = RecordingBackend()
    with pytest.raises(InputError, match="parameters"):
        ptx_impl.KERNELS["swiglu"](be, {}, TINY, bogus=1)


@pytest.mark.parametrize("change, match", [
    ({"E": 512, "G": 8}, r"ptx gate: E = 512, expected 1..256"),
    ({"G": 16}, r"ptx gate: E/G = 1, expected >= 2"),
    ({"K": 40}, r"ptx gate: K = 40"),
    ({"TG": 5}, r"ptx gate: TG = 5, expected 1..G=4"),
])
def test_gate_routing_limits(change, match):
    with pytest.raises(InputError, match=match):
        gate.check_routing(dataclasses.replace(TINY, **change))


def test_align_launch_config_and_shared_memory():
    be = RecordingBackend()
    from contract.kernels import get_kernel

    specs = {"topk_ids": ((TINY.T, TINY.K), np.int32)}
    specs.update({o.name: (o.shape, o.dtype) for o in get_kernel("align").output_specs(TINY, {})})
    align.run(be, _arrays(be, specs), TINY)
    (entry, grid, block, params, smem), = be.launches
    assert (entry, grid, block) == ("ptx_align", (1, 1, 1), (256, 1, 1))
    assert smem == 4 * (11 * TINY.E + 1)
    assert [int(p) for p in params[7:]] == [TINY.T * TINY.K, TINY.E, TINY.BM, TINY.P_max, TINY.n_blocks]
    assert all(isinstance(p, np.uint32) for p in params[7:])


KERN = ptx_entry("act_quant.ptx", "ptx_act_quant",
                 (("a", ".ptr"), ("q", ".ptr"), ("scale", ".ptr"), ("n_groups", ".u32"), ("pow2", ".u32")))


def test_pack_type_checks():
    be = RecordingBackend()
    arr = be.empty((8,), np.float32)
    good = {"a": arr, "q": arr, "scale": arr, "n_groups": 3, "pow2": 0}
    packed = KERN.pack(good)
    assert packed[:3] == [arr, arr, arr] and packed[3] == np.uint32(3) and packed[3].dtype == np.uint32
    with pytest.raises(InputError, match=r"parameter n_groups = -1, expected an integer in \[0, 4294967295\]"):
        KERN.pack({**good, "n_groups": -1})
    with pytest.raises(InputError, match=r"parameter pow2 = 1.5, expected an integer for .u32"):
        KERN.pack({**good, "pow2": 1.5})
    with pytest.raises(InputError, match=r"parameter a = 'int', expected a DeviceArray"):
        KERN.pack({**good, "a": 1234})
    with pytest.raises(InputError, match=r"missing \['pow2'\]"):
        KERN.pack({k: v for k, v in good.items() if k != "pow2"})
    with pytest.raises(InputError, match="threads per block"):
        KERN.launch(be, 1, (2048, 1, 1), good)

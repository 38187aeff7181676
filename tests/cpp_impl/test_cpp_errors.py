"""Assumptions are enforced before anything is compiled or launched, with InputError messages naming the C++ kernel,
the value and the expectation; a broken .cu file is a BuildError carrying NVRTC's file(line) log."""
import dataclasses

import ml_dtypes
import numpy as np
import pytest

from contract.errors import BuildError, InputError
from contract.presets import get_preset
from cpp_impl import act_quant, combine, gate, nvrtc, permute
from cpp_impl.descriptor import cuda_entry
from harness.backends.base import Backend, DeviceArray

TINY = get_preset("tiny")


class RecordingBackend(Backend):
    """Allocates nothing real; records launches so tests can see what would have run."""

    name = "recording"

    def __init__(self):
        self.launches = []
        self._next = 0x1000

    def empty(self, shape, dtype, fill_byte=0xFF):
        self._next += 0x1000
        return DeviceArray(tuple(int(d) for d in shape), np.dtype(dtype), self._next)

    def free(self, array):
        pass

    def launch_ptx(self, ptx, entry, grid, block, params, shared_bytes=0, tag=""):
        self.launches.append((entry, grid, block, list(params), shared_bytes))


def _arrays(backend, specs):
    return {name: backend.empty(shape, dtype) for name, (shape, dtype) in specs.items()}


def _gate_args(be, preset):
    T, E, K = preset.T, preset.E, preset.K
    return _arrays(be, {"logits": ((T, E), np.float32), "bias": ((E,), np.float32),
                        "topk_ids": ((T, K), np.int32), "topk_w": ((T, K), np.float32)})


def test_act_quant_rejects_n_not_multiple_of_128():
    be = RecordingBackend()
    args = _arrays(be, {"a": ((4, 200), ml_dtypes.bfloat16), "q": ((4, 200), ml_dtypes.float8_e4m3fn),
                        "scale": ((4, 1), np.float32)})
    with pytest.raises(InputError, match=r"cpp act_quant: N \(a.shape\[1\]\) = 200, expected a positive multiple"):
        act_quant.run(be, args, TINY)
    assert be.launches == []


def test_wrong_dtype_is_named():
    be = RecordingBackend()
    args = _arrays(be, {"a": ((4, 256), np.float32), "q": ((4, 256), ml_dtypes.float8_e4m3fn),
                        "scale": ((4, 2), np.float32)})
    with pytest.raises(InputError, match=r"a.dtype = 'float32', expected bfloat16"):
        act_quant.run(be, args, TINY)


def test_gate_rejects_more_than_256_experts():
    preset = dataclasses.replace(TINY, E=512, G=8)
    be = RecordingBackend()
    with pytest.raises(InputError, match=r"cpp gate: E = 512, expected 1\.\.256"):
        gate.run(be, _gate_args(be, preset), preset)
    assert be.launches == []


def test_combine_rejects_k_beyond_the_unroll_limit():
    preset = dataclasses.replace(TINY, K=17, TG=4)
    be = RecordingBackend()
    args = _arrays(be, {"y": ((preset.P_max, preset.H), ml_dtypes.bfloat16),
                        "topk_w": ((preset.T, 17), np.float32), "inverse": ((preset.T, 17), np.int32),
                        "out": ((preset.T, preset.H), ml_dtypes.bfloat16)})
    with pytest.raises(InputError, match=r"cpp combine: K = 17, expected 1\.\.16"):
        combine.run(be, args, preset)


def test_unknown_parameter_is_rejected():
    be = RecordingBackend()
    with pytest.raises(InputError, match="cpp gate"):
        gate.run(be, _gate_args(be, TINY), TINY, tile=3)


def test_unknown_compile_time_constant_is_named():
    with pytest.raises(InputError, match=r"cpp_gate: compile-time constants = \['BOGUS'\], expected a subset"):
        gate.KERNEL.source(BOGUS=1)


def test_launch_packs_the_entry_signature_and_specialises():
    be = RecordingBackend()
    gate.run(be, _gate_args(be, TINY), TINY)
    entry, grid, block, params, smem = be.launches[0]
    assert entry == "cpp_gate" and grid == (TINY.T // 4, 1, 1) and block == (128, 1, 1) and smem == 0
    assert len(params) == len(gate.KERNEL.params)
    args = _arrays(be, {"x": ((TINY.T, TINY.H), ml_dtypes.bfloat16), "sorted_ids": ((TINY.P_max,), np.int32),
                        "total_padded": ((1,), np.int32), "xp": ((TINY.P_max, TINY.H), ml_dtypes.bfloat16)})
    permute.run(be, args, TINY)
    assert be.launches[1][0] == "cpp_permute" and be.launches[1][1] == permute.launch_config(TINY.P_max, TINY.H)[0]


def test_broken_source_is_a_build_error_with_file_and_line(tmp_path, monkeypatch):
    (tmp_path / "broken.cu").write_text('extern "C" __global__ void cpp_broken(int* p)\n{\n    p[0] = nope;\n}\n')
    monkeypatch.setattr(nvrtc, "KERNEL_DIR", tmp_path)
    kernel = cuda_entry("broken.cu", "cpp_broken", (("p", ".ptr"),))
    with pytest.raises(BuildError, match=r"broken\.cu\(3\): error: identifier \"nope\" is undefined"):
        kernel.launch(RecordingBackend(), (1, 1, 1), (1, 1, 1), {"p": RecordingBackend().empty((1,), np.int32)})

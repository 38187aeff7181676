"""Every kernel of every path, and the layer, launched through GpuBackend on the fake driver: parameters match each
`.entry` as ptxsim parses it, Numba arguments match their signatures, and launches over 48 KB of dynamic shared memory
raise the function's limit first (the fakes refuse them otherwise, as the driver does)."""
import ml_dtypes
import numpy as np
import pytest

from contract.kernels import KERNEL_NAMES, get_kernel
from contract.presets import get_preset
from harness.implementations import IMPLS, implementation_table


def _present(kernels) -> list[tuple[str, str]]:
    """(kernel, implementation) of every path that has the kernel (triton has only grouped_gemm_fp8)."""
    from harness.implementations import implementation_table

    return [(k, i) for k in kernels for i in sorted(IMPLS) if k in implementation_table(i)[0]]

CHEAP = ("gate", "align", "permute", "act_quant", "combine")  # DeepSeek-V3 decode inputs are small for these


def _run_on_fake(kernel: str, impl: str, preset_name: str):
    from harness.backends.gpu import GpuBackend
    from harness.contract_row import alloc as _alloc

    preset = get_preset(preset_name)
    spec = get_kernel(kernel)
    inputs = spec.make_inputs(preset, "balanced", 1)
    backend = GpuBackend()
    args, _ = _alloc(backend, spec, inputs, preset)
    run = implementation_table(impl)[0][kernel]
    records = run(backend, args, preset)
    backend.synchronize()
    return backend, records


# paths that plan their launches from the routing read back to the host: on the fake (memory reads back zeros) they
# see no routed rows and launch nothing; tests/harness/fakegpu/test_cutlass_on_fake_driver.py feeds them the routing
# (the cutlass layer builds its GEMMs' groups on the device: it launches everything here)
PLANNED_ON_HOST = {"cutlass"}


@pytest.mark.parametrize("kernel, impl", [(k, i) for k, i in _present(KERNEL_NAMES)
                                          if i not in PLANNED_ON_HOST or k == "layer"])
def test_every_kernel_launches_on_the_fake_driver(fake_gpu, kernel, impl):
    backend, records = _run_on_fake(kernel, impl, "small")
    assert fake_gpu.errors == []
    assert records and len(fake_gpu.launches) == len(records)
    assert {launch["stream"] for launch in fake_gpu.launches} == {backend.stream.handle.value}


@pytest.mark.parametrize("kernel, impl", _present(CHEAP))
def test_cheap_kernels_at_deepseek_decode_size(fake_gpu, kernel, impl):
    _run_on_fake(kernel, impl, "dsv3-decode")
    assert fake_gpu.errors == [] and fake_gpu.launches


def test_ptx_parameters_follow_the_entry_not_a_comment(fake_gpu):
    """align's .entry has a `)` inside a // comment of its parameter list; all 12 parameters must be passed."""
    from harness.backends import numba_abi
    from ptx_impl.align import KERNEL

    text = KERNEL.ptx
    assert "//" in text.split(".entry ptx_align", 1)[1].split("{", 1)[0]  # the comment the old regex tripped on
    assert len(numba_abi.entry_params(text)["ptx_align"]) == 12


# the partition experiment's communication kernels exist on the Numba and PTX paths (cpp_impl has none)
COMM_IMPLS = ("numba", "ptx")


@pytest.mark.parametrize("impl", COMM_IMPLS)
def test_comm_launch_with_an_sm_reservation_raises_the_shared_memory_limit(fake_gpu, impl):
    """The partition sweep reserves a whole SM's shared memory per communication CTA, on both paths."""
    import importlib

    from harness.backends.gpu import GpuBackend
    from harness.partition.problem import CommShapes, dispatch_inputs

    module = importlib.import_module(f"{IMPLS[impl]}.comm")
    backend = GpuBackend()
    shapes = CommShapes(64, 512, 4, spare=5)
    args = {k: backend.to_device(v) for k, v in dispatch_inputs(shapes, np.random.default_rng(0)).items()}
    args["recv"] = backend.empty((shapes.S, shapes.H), ml_dtypes.bfloat16)
    reserve = 227 * 1024
    module.dispatch(backend, args, 4, shared_bytes=reserve)
    backend.synchronize()
    assert fake_gpu.errors == []
    assert fake_gpu.launches[-1]["shared"] == reserve
    assert reserve in fake_gpu.attributes.values()


def test_a_ptx_jit_failure_quotes_the_jit_log(fake_gpu):
    from harness.backends.cuda_api import GpuError
    from harness.backends.gpu import GpuBackend

    fake_gpu.jit_error = "ptxas application ptx input, line 7; error   : Unknown symbol '%rx'"
    backend = GpuBackend()
    ptx = ".version 8.4\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u32 n)\n{\n    ret;\n}\n"
    with pytest.raises(GpuError, match=r"CUDA_ERROR_INVALID_PTX.*Unknown symbol '%rx'"):
        backend.launch_ptx(ptx, "k", 1, 32, [np.uint32(1)])


def test_partition_reservation_is_the_whole_opt_in_shared_memory(fake_gpu):
    """200 KB left room for 20-24 KB GEMM tiles beside a communication CTA; the reservation is the device's maximum."""
    from harness.backends.gpu import GpuBackend
    from harness.partition.measure import RESERVE_BYTES, reserve_bytes
    from tests.harness.fakegpu.fakes import OPTIN_SHARED

    assert reserve_bytes(GpuBackend()) == OPTIN_SHARED == 227 * 1024
    assert RESERVE_BYTES == 227 * 1024

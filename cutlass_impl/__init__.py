"""cutlass_impl: CUTLASS 3.x's sm90 kernels as a contract implementation (`cutlass`): grouped_gemm (bf16) and
grouped_gemm_fp8 (DeepSeek-V3's blockwise scales), compiled from the `nvidia-cutlass` wheel's headers by NVRTC for
sm_90a (build.py; committed gzipped PTX with a source record), their Params built by CUTLASS's own host code (a small
g++ shim against the same headers, params.py) and their tensor maps encoded by the backend at launch. Both: one launch
of CUTLASS's grouped ptr-array kernel, in the configuration the timing model chose (grouped_gemm.py). The layer
(layer.py): those GEMMs with their groups built on the device from the routing (device_args.py), the other stages
the cpp path's. docs/cutlass.md.
"""
from __future__ import annotations

from contract.registry import Implementation


def _grouped_gemm(backend, args, preset, **params):
    """Lazy entry for cutlass_impl.grouped_gemm.run (bf16)."""
    from cutlass_impl import grouped_gemm

    return grouped_gemm.run("grouped_gemm", backend, args, preset, **params)


def _grouped_gemm_fp8(backend, args, preset, **params):
    """Lazy entry for cutlass_impl.grouped_gemm.run (FP8 blockwise)."""
    from cutlass_impl import grouped_gemm

    return grouped_gemm.run("grouped_gemm_fp8", backend, args, preset, **params)


def _layer(backend, args, preset, **params):
    """Lazy entry for cutlass_impl.layer.run (the layer: CUTLASS's GEMMs, cpp's other stages)."""
    from cutlass_impl import layer

    return layer.run(backend, args, preset, **params)


KERNELS = {"grouped_gemm": _grouped_gemm, "grouped_gemm_fp8": _grouped_gemm_fp8, "layer": _layer}

IMPLEMENTATION = Implementation(name="cutlass", language="CUTLASS 3.x (C++ templates, NVRTC to sm_90a PTX)",
                                kernels=KERNELS)

"""Inputs given as the tensors people use: NumPy arrays, anything exposing the NumPy array interface or DLPack on
the CPU (a torch CPU tensor), and, on the gpu backend, CUDA tensors (torch on a GPU, CuPy) through
`__cuda_array_interface__`, Numba's view of their device memory. Each becomes a NumPy array once, when the case is
drawn: every implementation then gets its own device copy of the same values and `check` sees NumPy. bf16 and fp8
arrays are ml_dtypes dtypes (NumPy has none of its own).

NOTE: a CUDA tensor makes one device-to-host copy per case; the sim backend (no GPU) refuses it by name.
"""
from __future__ import annotations

from typing import Any

KDL_CPU, KDL_CUDA_HOST = 1, 3  # DLPack device types whose memory the host reads


def is_tensor(value) -> bool:
    """Whether `value` is an array by one of the interfaces above (a NumPy array included)."""
    return any(hasattr(value, a) for a in ("__array_interface__", "__cuda_array_interface__", "__dlpack__",
                                           "__array__")) and getattr(value, "shape", ()) != ()


def on_gpu(value) -> bool:
    if hasattr(value, "__cuda_array_interface__"):
        return True
    device = getattr(value, "__dlpack_device__", None)
    return device is not None and int(device()[0]) not in (KDL_CPU, KDL_CUDA_HOST)


def to_numpy(where: str, value, gpu_backend: bool) -> Any:
    """`value` as a NumPy array (NumPy arrays unchanged). Raises InputError naming `where` for a CUDA tensor on the
    sim backend or a tensor NumPy cannot hold (a torch bf16 tensor: pass its bits as ml_dtypes.bfloat16)."""
    import numpy as np

    from ptxmoe.errors import InputError

    if isinstance(value, np.ndarray):
        return value
    if on_gpu(value):
        if not gpu_backend:
            raise InputError(f"{where}: a CUDA tensor ({type(value).__name__}); the sim backend has no GPU to read it "
                             f"from: pass a host array (torch: .cpu(); CuPy: cupy.asnumpy) or use backend='gpu'")
        if not hasattr(value, "__cuda_array_interface__"):
            raise InputError(f"{where}: a DLPack GPU tensor without __cuda_array_interface__ ({type(value).__name__})"
                             f"; pass a torch or CuPy array")
        from numba import cuda

        return cuda.as_cuda_array(value).copy_to_host()
    try:
        if hasattr(value, "__dlpack__"):
            return np.from_dlpack(value)
        return np.asarray(value)
    except (TypeError, BufferError, RuntimeError, ValueError) as exc:
        raise InputError(f"{where}: {type(value).__name__} with dtype {getattr(value, 'dtype', '?')} has no NumPy "
                         f"form ({exc}); pass bf16 / fp8 as ml_dtypes arrays (torch: "
                         f"t.view(torch.uint16).numpy().view(ml_dtypes.bfloat16))") from None

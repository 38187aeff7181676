"""ptxsim: a NumPy-vectorised PTX simulator (registers as structure-of-arrays, CTAs batched into lane vectors).

    module = ptxsim.load_ptx(ptx_text)
    kernel = module.kernel("entry")
    stats = ptxsim.launch(kernel, grid=(gx, gy, gz), block=(bx, by, bz), args=[...], shared_bytes=0)

See ptxsim/README.md for the arguments, metrics, sanitizers and environment flags.
"""
from ptxsim.device import Device, DeviceBuffer, NumbaArray
from ptxsim.errors import (
    CallDepthExceeded,
    DeadlockError,
    DecodeError,
    InitcheckError,
    InstructionBudgetExceeded,
    KernelNotFound,
    LaunchError,
    MemcheckError,
    MemoryFault,
    NcHazardError,
    ParamTypeError,
    PtxasError,
    PtxSimError,
    PtxSimWarning,
    PtxSyntaxError,
    RacecheckError,
    ResourceLimitError,
    SanitizerError,
    SynccheckError,
    TimeLimitExceeded,
    UnsupportedInstruction,
)
from ptxsim.launch import launch
from ptxsim.module import Kernel, Module, load_ptx
from ptxsim.plan import LaunchPlan
from ptxsim.sanitizers import SanitizerReport
from ptxsim.stats import LaunchStats

__all__ = ["load_ptx", "launch", "LaunchPlan", "Device", "DeviceBuffer", "NumbaArray", "Module", "Kernel",
           "LaunchStats",
           "SanitizerReport", "PtxSimError", "PtxSimWarning", "PtxSyntaxError", "UnsupportedInstruction",
           "DecodeError", "KernelNotFound", "MemoryFault", "DeadlockError", "InstructionBudgetExceeded",
           "ParamTypeError", "LaunchError", "SanitizerError", "MemcheckError", "RacecheckError", "InitcheckError",
           "SynccheckError", "NcHazardError", "TimeLimitExceeded", "ResourceLimitError", "CallDepthExceeded",
           "PtxasError"]

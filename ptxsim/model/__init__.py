"""ptxsim's occupancy + timing model: device specs as data, sm_90 occupancy, and an analytic kernel-time estimate
from the simulator's ncu-style counters. Pure Python over data; imports nothing from the simulator core.

    from ptxsim.model import get_device, occupancy, estimate, explain
    spec = get_device("h800")
    occ = occupancy(spec, threads_per_block=256, registers_per_thread=64, shared_bytes_per_block=16384)
    est = estimate(metrics, spec, occ, sm_count=20)
    print(explain(est))
"""
from ptxsim.model.costs import CLASS_COSTS, INSTRUCTION_CLASSES, MMA_M16N8K16_FLOPS, MODEL_CONSTANTS, class_cycles
from ptxsim.model.devices import DEVICES, DeviceSpec, get_device
from ptxsim.model.errors import MetricsError, ModelArgumentError, ModelError, ResourceError, UnknownDeviceError
from ptxsim.model.occupancy import LIMITERS, Occupancy, occupancy, occupancy_from_resources
from ptxsim.model.timing import CLASS_METRICS, COMPONENTS, METRIC_KEYS, Estimate, estimate, explain

__all__ = [
    "CLASS_COSTS", "CLASS_METRICS", "COMPONENTS", "DEVICES", "INSTRUCTION_CLASSES", "LIMITERS", "METRIC_KEYS",
    "MMA_M16N8K16_FLOPS", "MODEL_CONSTANTS", "DeviceSpec", "Estimate", "MetricsError", "ModelArgumentError",
    "ModelError", "Occupancy", "ResourceError", "UnknownDeviceError", "class_cycles", "estimate", "explain",
    "get_device", "occupancy", "occupancy_from_resources",
]

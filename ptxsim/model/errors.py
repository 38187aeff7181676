"""Errors of the occupancy + timing model.

`ModelError` derives from Exception for now so this package imports nothing from the simulator core; ptxsim's core
will re-parent it under `PtxSimError` (change the one base class below, nothing else).
"""
from __future__ import annotations


class ModelError(Exception):
    """Base of every error the occupancy/timing model raises on purpose."""


class UnknownDeviceError(ModelError, KeyError):
    """A device name that matches none of the modelled GPUs."""

    def __init__(self, name: object, valid):
        self.name, self.valid = name, sorted(valid)
        super().__init__(f"unknown device {name!r}; valid devices: {', '.join(self.valid)} "
                         "(case, spaces, an 'NVIDIA' prefix and a memory suffix such as '80GB HBM3' are ignored)")

    def __str__(self) -> str:  # KeyError would otherwise quote the whole message
        return self.args[0]


class ResourceError(ModelError):
    """A launch configuration that cannot run on the device at all (too many threads, registers or shared bytes)."""


class ModelArgumentError(ModelError, ValueError):
    """An argument outside its valid range (an SM count, a clock, a bandwidth share...)."""


class MetricsError(ModelError, ValueError):
    """A metrics dict the model cannot use: a negative/non-numeric counter, an unknown instruction class, or launch
    sizes that contradict the occupancy they are estimated with."""

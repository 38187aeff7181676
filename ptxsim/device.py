"""Device: a simulated GPU's global memory (ptxsim/buffers.py) that launches kernels on itself."""
from __future__ import annotations

from ptxsim.buffers import DeviceBuffer, DeviceMemory, Launch, NumbaArray, marshal
from ptxsim.launch import launch

__all__ = ["Device", "DeviceBuffer", "Launch", "NumbaArray", "marshal"]


class Device(DeviceMemory):
    """A simulated GPU's global memory; buffers persist across launches."""

    def launch(self, kernel, grid, block, args, shared_bytes: int = 0, **kw):
        """ptxsim.launch(kernel, grid, block, args, shared_bytes, device=self, **kw)."""
        return launch(kernel, grid, block, args, shared_bytes=shared_bytes, device=self, **kw)

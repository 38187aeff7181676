"""The harness side of the backend contract (tinygrad's Allocator + Program, in a dozen methods).

contract.device says what an implementation may call (`KernelBackend`: to_device, empty, free, launch_ptx,
launch_numba) and defines DeviceArray / LaunchRecord; `Backend` is the base class the harness's backends
(harness.backends.sim.SimBackend, harness.backends.gpu.GpuBackend) implement, with the host-side calls the runner
uses besides. The same source compiles with `numba.cuda.compile_ptx` for ptxsim and with `numba.cuda.jit(signature)`
on a GPU; PTX text (hand-written or NVRTC's) is loaded once per text.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from contract.device import LAUNCH_MARKS, DeviceArray, LaunchArg, LaunchRecord, WorkItems
from harness.backends.kinds import BackendKind, backend_kind

if TYPE_CHECKING:
    from harness.plain_sampling import WarmWaves
    from harness.sampling import SamplePolicy
    from harness.timing.row_timing import RowTimes, RowTiming

__all__ = ["Backend", "DeviceArray", "LaunchArg", "LaunchRecord", "WorkItems", "flatten_work_items"]


def flatten_work_items(params: Sequence[LaunchArg]) -> list:
    """Launch parameters with each WorkItems as its two u32 parameters for the whole work, (0, count), and without
    the marks that are not kernel parameters (contract.device.LAUNCH_MARKS: the whole launch runs)."""
    out: list = []
    for p in params:
        if not isinstance(p, LAUNCH_MARKS):
            out.extend(p.params() if isinstance(p, WorkItems) else (p,))
    return out


class Backend:
    """What a backend provides: every member the runner (harness.row_run) uses is declared here, so the runner never
    asks whether a backend has one. Subclasses: harness.backends.sim.SimBackend, harness.backends.gpu.GpuBackend."""

    name: str = "abstract"
    records: list[LaunchRecord]  # the launches since the runner last cleared it
    sources: dict  # launch name -> what it launched (for static facts)
    lazy_inputs: bool = False  # takes lazy input tensors (contract.generators.KeyedNormal), filled when touched
    sanitize: tuple[str, ...] = ()  # the ptxsim sanitizers every launch runs under (simulating backends)
    # > 0: kernels that spin on mbarrier waits (the persistent FP8 rungs 4, 5) launch their bounded variant, which
    # traps after this many failed tries instead of hanging (the GPU backend sets it with its sync watchdog)
    wait_bound: int = 0
    # which launches run sampled (simulating backends; set by the runner per row, or by ptxmoe.compare(sample_waves))
    sample: SamplePolicy | WarmWaves | None = None
    # a dict: every workspace freed is copied here (the layer's intermediates, for its stage-by-stage sampled check)
    captured_workspace: dict | None = None

    @property
    def kind(self) -> BackendKind:
        """What this backend is (harness.backends.kinds): modelled or measured times, simulating or not."""
        return backend_kind(self.name)

    def sample_policy(self, text: str | None) -> SamplePolicy | None:
        """The --sample policy (harness.sampling.parse_sample of `text`, "auto" when None) on a simulating backend;
        None where every CTA always runs."""
        if not self.kind.simulated:
            return None
        from harness.sampling import parse_sample

        return parse_sample(text or "auto")

    def max_dynamic_shared(self) -> int | None:
        """The most dynamic shared memory one block may opt into on this device; None where it cannot be read."""
        return None

    def reset_memory(self) -> None:
        """Start the next row on empty device memory (a simulated heap is dropped; a GPU's memory is Numba's)."""

    def sanitizer_findings(self, records=None) -> list[dict]:
        """Every sanitizer finding of `records` (default: the launches so far), run.json dicts in launch order."""
        return []

    def launched_sources(self) -> dict:
        """{launch name: what it launched} since the records were last cleared (harness.static reads it)."""
        return {}

    def time_row(self, call: Callable[[dict], object], args: dict, inputs: dict, records: list,
                 timing: RowTiming) -> RowTimes:
        """Time one row: `call(args)` launches the implementation once (no synchronisation), `records` are the
        launches of its checked run, `inputs` its host inputs (a measuring backend rotates copies of them).

        A simulating backend's launches already ran: the ptxsim timing model times `records` (nothing runs again),
        and the simulator's counters come with it. A measuring backend overrides this (GpuBackend: CUDA events)."""
        if not self.kind.simulated:
            raise NotImplementedError(f"{type(self).__name__} ({self.name}) measures times but has no time_row")
        from harness.timing.row_timing import RowTimes
        from harness.timing.sim import metrics_dict, model_row, sum_metrics

        modelled = model_row(records, self.launched_sources(), timing.model_device, timing.device_profile,
                            timing.timing_model)
        per_launch = [{"name": r.name, "metrics": metrics_dict(r.stats)} for r in records]
        counters = {"total": sum_metrics([p["metrics"] for p in per_launch]), "launches": per_launch}
        return RowTimes(modelled, modelled["modelled_us"], counters)

    def to_device(self, host: np.ndarray) -> DeviceArray:
        raise NotImplementedError

    def empty(self, shape: Sequence[int], dtype, fill_byte: int = 0xFF) -> DeviceArray:
        """A new device array with every byte set to `fill_byte` (poison: unwritten elements are detectable)."""
        raise NotImplementedError

    def to_host(self, array: DeviceArray) -> np.ndarray:
        raise NotImplementedError

    def device_free_bytes(self) -> int | None:
        """Device memory free now (a GPU's; None where the device memory is this process's own: sim)."""
        return None

    def watch_writes(self, arrays: Sequence[DeviceArray]) -> bool:
        """Start counting which bytes of `arrays` the next launches store to (each array starts as never written);
        False when this backend cannot (a GPU: stores are not observed), and then `unwritten_fraction` says None."""
        return False

    def unwritten_fraction(self, array: DeviceArray) -> float | None:
        """The fraction of `array`'s elements no launch stored to since `watch_writes`; None when not watched."""
        return None

    def free(self, array: DeviceArray) -> None:
        raise NotImplementedError

    def launch_ptx(self, ptx: str, entry: str, grid, block, params: Sequence[LaunchArg], shared_bytes: int = 0,
                   tag: str = "") -> LaunchRecord:
        """Launch entry `entry` of PTX module text `ptx` (cached per text); DeviceArray params pass their address."""
        raise NotImplementedError

    def launch_numba(self, pyfunc, signature, grid, block, args: Sequence[LaunchArg], shared_bytes: int = 0,
                     tag: str = "") -> LaunchRecord:
        """Launch a Numba CUDA kernel given as a plain Python function plus its explicit Numba signature.

        Array arguments are DeviceArrays (1-D or N-D C-contiguous, matching the signature's array types); scalars are
        NumPy scalars matching the signature. Compiled once per (pyfunc, signature).
        """
        raise NotImplementedError

    def synchronize(self) -> None:
        pass

    # workspaces -----------------------------------------------------------------------------------------------
    keep_workspaces: bool = False  # set by a timing loop: workspaces then live until release_workspaces()

    def workspace(self, owner: str, specs: dict) -> dict[str, DeviceArray]:
        """Poisoned (0xFF) arrays {name: (shape, dtype)} for `owner`'s intermediates.

        Fresh every call, unless `keep_workspaces` is set: then the first call's arrays are kept per (owner, specs)
        and handed out again (no allocation or free inside a timed window), until `release_workspaces()`.
        Give them back with `done_with_workspace`.
        """
        key = (owner, tuple((name, tuple(int(d) for d in shape), np.dtype(dtype).str)
                            for name, (shape, dtype) in specs.items()))
        cache = self.__dict__.setdefault("_workspace_cache", {})
        if key in cache:
            return cache[key]
        arrays: dict[str, DeviceArray] = {}
        try:
            for name, (shape, dtype) in specs.items():
                arrays[name] = self.empty(shape, dtype, fill_byte=0xFF)
        except BaseException:
            self._free_all(arrays)
            raise
        if self.keep_workspaces:
            cache[key] = arrays
        return arrays

    def done_with_workspace(self, arrays: dict[str, DeviceArray]) -> None:
        """Free a workspace from `workspace()` unless it is a kept one."""
        if not any(arrays is kept for kept in self.__dict__.get("_workspace_cache", {}).values()):
            self._free_all(arrays)

    def release_workspaces(self) -> None:
        """Free every kept workspace."""
        cache = self.__dict__.pop("_workspace_cache", {})
        for arrays in cache.values():
            self._free_all(arrays)

    def _free_all(self, arrays: dict[str, DeviceArray]) -> None:
        for array in arrays.values():
            self.free(array)

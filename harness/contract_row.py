"""The sweep's rows (`ptxmoe compare` on the CLI): a RowJob (harness.row_run) for one registered implementation, or
one rung of a ladder, of one contract cell.

Inputs are the kernel's own (contract.kernels: make_inputs with the cell's seed, keyed lazy tensors for the big ones
where the backend takes them), outputs are poisoned before the run, the check is kernels.md's (on exactly what ran
when big GEMM launches were sampled: harness.sampling; a sampled layer stage by stage on its captured intermediates),
and launches are grouped into the kernels.md stages.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.backends.base import Backend
from harness.implementations import split_slot
from harness.sweep_plan import CompareSettings, Item

if TYPE_CHECKING:
    from harness.sampling import SamplePolicy


def row_head(settings: CompareSettings, item: Item, slot: str, seed: int) -> dict:
    """The fields that name a row: key, kernel, variant, impl, preset, skew, seed, backend, and for a laddered
    kernel's rows `rung` ({number, name, of, top}); `slot` is an implementation or a lower rung's slot ("ptx.r1",
    whose row has impl "ptx")."""
    head: dict[str, Any] = {"key": item.key(slot), "kernel": item.kernel, "variant": item.variant,
                            "impl": split_slot(slot)[0], "preset": item.preset, "skew": item.skew, "seed": seed,
                            "backend": settings.backend}
    rung = item.rung(slot)
    if rung is not None:
        head["rung"] = rung
    return head


def plain_row(settings: CompareSettings, item: Item, impl: str, seed: int, status: str, reason: str) -> dict:
    """A row that did not run (missing, skipped) or broke before it had results (error)."""
    return {**row_head(settings, item, impl, seed), "status": status, "reason": reason}


def draw_inputs(backend: Backend, item: Item, seed: int) -> dict:
    """A cell's inputs: keyed lazy tensors for the big ones when the backend takes them (contract.footprint
    .wants_lazy: the dsv3 GEMM weights are 14 GiB), else NumPy arrays; the same values either way."""
    from contract.kernels import get_kernel
    from contract.presets import get_preset

    lazy = backend.lazy_inputs and wants_lazy(item)
    return get_kernel(item.kernel).checked_inputs(get_preset(item.preset), item.skew, seed, lazy=lazy, **item.params)


def wants_lazy(item: Item) -> bool:
    """Whether the cell's big inputs are drawn lazy on a backend that takes lazy inputs (contract.footprint)."""
    from contract.errors import UnknownNameError
    from contract.footprint import wants_lazy as footprint_wants_lazy

    try:
        return footprint_wants_lazy(item.kernel, item.preset, item.variant or "up")
    except UnknownNameError:  # a kernel without a size table: drawn whole
        return False


def alloc(backend: Backend, spec, inputs: dict, preset) -> tuple[dict, list]:
    """Device copies of the inputs (lazy tensors stay lazy on backends that take them) and poisoned outputs."""
    from contract.kernels import POISON_BYTE
    from harness.verify import to_device

    args = {name: to_device(backend, arr) for name, arr in inputs.items()}
    out_specs = spec.output_specs(preset, inputs)
    for out in out_specs:
        args[out.name] = backend.empty(out.shape, out.dtype, fill_byte=POISON_BYTE)
    return args, out_specs


@dataclass
class ContractRow:
    """One implementation (`slot`: "ptx", or a lower rung "ptx.r1") of one cell, with its run function."""

    settings: CompareSettings
    item: Item
    slot: str
    run: Callable
    seed: int
    device_name: str  # the GPU (or model device) a measured row's model estimate models

    def __post_init__(self) -> None:
        from contract.kernels import get_kernel
        from contract.presets import get_preset

        self.preset = get_preset(self.item.preset)
        self.spec = get_kernel(self.item.kernel)
        self.run_params = {k: v for k, v in self.item.params.items() if k != "variant"}
        self.head = {**row_head(self.settings, self.item, self.slot, self.seed), "params": self.item.params}
        self.kernel: str = self.item.kernel
        self.variant: str | None = self.item.variant
        self.policy: SamplePolicy | None = None

    def build(self, backend: Backend, inputs: dict):
        """The registered run function (it builds what it launches on first use: NVRTC, Numba)."""
        return lambda be, args: self.run(be, args, self.preset, **self.run_params)

    def begin(self, backend: Backend) -> None:
        policy = backend.sample_policy(self.settings.sample)
        self.policy = policy.for_preset(self.preset) if policy is not None else None
        backend.sample = self.policy
        # NOTE: a sampled layer is checked stage by stage on the intermediates it really produced
        wanted = self.item.kernel == "layer" and self.policy is not None and not self.policy.off
        backend.captured_workspace = {} if wanted else None

    def place(self, backend: Backend, inputs: dict) -> tuple[dict, tuple[str, ...]]:
        args, out_specs = alloc(backend, self.spec, inputs, self.preset)
        return args, tuple(o.name for o in out_specs)

    def check(self, backend: Backend, outputs: dict, inputs: dict, records: list) -> dict:
        """The kernels.md check: on exactly the simulated subset when a launch was sampled; a sampled layer stage
        by stage on its captured intermediates (harness.verify.check_layer_stages)."""
        from harness.verify import check_layer_stages, was_sampled

        sampled = was_sampled(records)
        captured = backend.captured_workspace
        if self.item.kernel == "layer" and sampled and captured:
            backend.captured_workspace = None
            result = check_layer_stages(outputs, inputs, captured, self.preset)
        else:
            result = self.spec.check(outputs, inputs, self.preset, sampled=sampled, **self.run_params)
        return {"ok": bool(result.ok), "message": result.message, "errors": result.errors}

    def counts(self, inputs: dict) -> tuple[int | None, int | None]:
        return int(self.spec.min_bytes(inputs, self.preset)), int(self.spec.flops(inputs, self.preset))

    def annotate(self, row: dict, backend: Backend, inputs: dict, records: list) -> None:
        from harness.gemm_work import gemm_work
        from harness.row_report import sampling_summary

        row["sampling"] = sampling_summary(records, row["correctness"]["errors"], self.policy)
        row["gemm_work"] = gemm_work(self.item.kernel, inputs, self.preset)
        if not backend.kind.simulated:  # a measured row: the timing model's figure beside it
            row["model_estimate"] = None
            if self.settings.model_estimate:
                from harness.timing.model_estimate import model_estimate

                row["model_estimate"] = model_estimate(self.run, inputs, self.preset, self.run_params, self.spec,
                                                       self.device_name, sample=self.settings.sample,
                                                       profile=self.settings.device_profile)

    def stages(self, records: list, timing: dict) -> tuple[list[str], dict[str, float]]:
        from harness.stages import stage_names, stage_times

        return stage_names([r.name for r in records]), stage_times(timing)

"""What a comparison sweep runs: its settings (CompareSettings), its cells (Item: one (kernel[variant], preset, skew),
one row per implementation and per rung of a laddered kernel) in run order (plan), and each cell's seed (item_seed).
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field

from harness.implementations import IMPL_ORDER, Ladder, Pair, split_slot
from harness.results import row_key
from harness.timing.gpu import GpuTimingSettings


@dataclass(frozen=True)
class Item:
    """One (kernel, variant, preset, skew) cell; it has one row per implementation (and per rung of a laddered
    kernel, `ladders`) and one verdict per pair."""

    kernel: str
    variant: str | None
    preset: str
    skew: str
    ladders: tuple[Ladder, ...] = ()  # the kernel's ladders among the implementations asked for

    def slots(self, impls) -> tuple[str, ...]:
        """The rows of this cell for `impls`, in run order: each implementation, then its ladder's lower rungs
        (lowest first) when it has one for this kernel."""
        out: list[str] = []
        for impl in impls:
            out.append(impl)
            ladder = self.ladder(impl)
            if ladder is not None:
                out.extend(ladder.slots()[:-1])
        return tuple(out)

    def ladder(self, impl: str) -> Ladder | None:
        return next((lad for lad in self.ladders if lad.impl == impl), None)

    def rung(self, slot: str) -> dict | None:
        """The rung record ({number, name, of, top}) of a row slot of a laddered kernel, else None."""
        ladder = self.ladder(split_slot(slot)[0])
        return ladder.rung(slot) if ladder is not None else None

    @property
    def label(self) -> str:
        return f"{self.kernel}[{self.variant}]" if self.variant else self.kernel

    @property
    def verdict_key(self) -> str:
        return f"{self.label}/{self.preset}/{self.skew}"

    def key(self, impl: str) -> str:
        """The row key of an implementation or a lower rung's slot: "grouped_gemm_fp8[up]/ptx.r1/tiny/balanced"."""
        return row_key(self.kernel, self.variant, impl, self.preset, self.skew)

    def pair_key(self, pair: Pair) -> str:
        """The key of one pair's verdict: "gate/tiny/balanced/ptx-vs-cpp"."""
        return f"{self.verdict_key}/{pair.name}"

    @property
    def params(self) -> dict:
        return {"variant": self.variant} if self.variant else {}


@dataclass(frozen=True)
class CompareSettings:
    backend: str  # resolved: "sim" or "gpu"
    presets: tuple[str, ...]
    skews: tuple[str, ...]
    kernels: tuple[str, ...]
    seed: int
    impls: tuple[str, ...] = IMPL_ORDER
    static: bool = True
    timing: GpuTimingSettings = field(default_factory=GpuTimingSettings)
    model_device: str = "H200 SXM"
    sanitize: tuple[str, ...] = ()  # sim only: ptxsim sanitizers on every launch (findings fail the row)
    model_estimate: bool = True  # gpu only: also record the timing model's estimate (sampled ptxsim run)
    sample: str = "auto"  # sim only: --sample auto|off|N (harness.sampling)
    memory_limit: int | None = None  # --memory-limit: bytes the rows running at once may take (None: the free memory)
    device_profile: str | None = None  # --device-profile: the timing model's constants from this calibrated profile
    device_profile_digest: str | None = None  # its content's sha256 (12 hex): what --resume checks the file against
    timing_model: str = "v1"  # --timing-model: v1 (analytic bounds) or v2 (cycle-approximate, opt-in)

    def row_settings(self, l2_fallback_bytes: int | None = None):
        """What every row of the sweep shares (harness.row_run.RowSettings): static facts, how rows are timed."""
        from harness.row_run import RowSettings
        from harness.timing.row_timing import DEFAULT_L2_BYTES, RowTiming

        timing = RowTiming(model_device=self.model_device, device_profile=self.device_profile,
                           timing_model=self.timing_model, gpu=self.timing,
                           l2_fallback_bytes=l2_fallback_bytes or DEFAULT_L2_BYTES)
        return RowSettings(static=self.static, timing=timing)

    def as_dict(self) -> dict:
        return {"backend": self.backend, "presets": list(self.presets), "skews": list(self.skews),
                "kernels": list(self.kernels), "seed": self.seed, "impls": list(self.impls), "static": self.static,
                "timing": vars(self.timing).copy(), "model_device": self.model_device,
                "sanitize": list(self.sanitize), "model_estimate": self.model_estimate, "sample": self.sample,
                "memory_limit": self.memory_limit, "device_profile": self.device_profile,
                "device_profile_digest": self.device_profile_digest,
                "timing_model": self.timing_model}


def plan(settings: CompareSettings) -> list[Item]:
    """The cells of a sweep in run order (grouped_gemm expands to its up and down variants), each with the ladders
    the implementations asked for register for its kernel."""
    from contract.kernels import get_kernel
    from contract.presets import get_preset
    from harness.implementations import implementation_ladders

    ladders = {impl: implementation_ladders(impl) for impl in settings.impls}
    items: list[Item] = []
    # NOTE: each name once (a run.json written before the CLI removed repeats may hold "gate,gate")
    for preset in dict.fromkeys(settings.presets):
        for skew in dict.fromkeys(settings.skews):
            for kernel in dict.fromkeys(settings.kernels):
                variants = get_kernel(kernel).variants or (None,)
                if get_preset(preset).is_gemm_shape:
                    variants = variants[:1]  # a GEMM shape is its kernel's "up" variant (contract.presets)
                found = tuple(ladders[i][kernel] for i in settings.impls if kernel in ladders[i])
                items.extend(Item(kernel, v, preset, skew, found) for v in variants)
    return items


def item_seed(base_seed: int, item: Item) -> int:
    """The seed of one cell: the base seed mixed with the cell's name (every path shares it)."""
    return (int(base_seed) + zlib.crc32(item.verdict_key.encode())) % 2**32

"""Problem sizes (kernels.md "Shapes and presets") and routing skews."""
from __future__ import annotations

from dataclasses import dataclass

from contract.errors import UnknownNameError


@dataclass(frozen=True)
class Preset:
    """One row of kernels.md's preset table."""

    name: str
    T: int  # tokens
    H: int  # hidden size
    E: int  # routed experts
    K: int  # experts per token
    G: int  # expert groups
    TG: int  # groups kept per token
    I: int  # noqa: E741 - expert intermediate size, named as in kernels.md
    BM: int  # row block of the grouped GEMM
    route_scale: float = 2.5

    @property
    def P_max(self) -> int:
        """Bound on padded rows: T*K + E*(BM-1) rounded up to a multiple of BM."""
        raw = self.T * self.K + self.E * (self.BM - 1)
        return -(-raw // self.BM) * self.BM

    @property
    def n_blocks(self) -> int:
        return self.P_max // self.BM

    @property
    def experts_per_group(self) -> int:
        return self.E // self.G

    @property
    def slots(self) -> int:
        """T*K routed (token, expert) slots; also the sentinel value in sorted_ids."""
        return self.T * self.K


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("tiny", T=64, H=256, E=16, K=4, G=4, TG=2, I=128, BM=16),
        Preset("small", T=256, H=1024, E=32, K=8, G=8, TG=4, I=256, BM=32),
        Preset("dsv3-decode", T=128, H=7168, E=256, K=8, G=8, TG=4, I=2048, BM=64),
        Preset("dsv3-prefill", T=4096, H=7168, E=256, K=8, G=8, TG=4, I=2048, BM=128),
    )
}

SKEWS = ("balanced", "imbalanced", "extreme")


def get_preset(name: str | Preset) -> Preset:
    if isinstance(name, Preset):
        return name
    try:
        return PRESETS[name]
    except KeyError:
        raise UnknownNameError("preset", name, PRESETS) from None


def check_skew(name: str) -> str:
    if name not in SKEWS:
        raise UnknownNameError("skew", name, SKEWS)
    return name

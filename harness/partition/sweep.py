"""The partition sweep as data: settings, the partition.json document, and writing it into a run folder.

    settings = PartitionSettings(backend="sim", sms=(0, 4, 8, ..., 32))
    doc = run_sweep(settings)                 # rows + schedule table + model description
    path = write_doc(doc, Path("profiles"))   # profiles/<run-id>/partition.json, atomically

The schedule table feeds the sweep into harness.pipeline: F = the overlapped step time at the SM count closest to
DeepSeek-V3's 20 (ptx/no_allocate rows when present), B = 2F and W = F (the usual backward/forward ratios), and
FB = (F + B) x overlapped/back-to-back at that point (what overlapping communication saves on one F&B pair), all in
whole nanoseconds (makespans and bubbles of the schedule rows are in ns too).
"""
from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from contract.presets import Preset
from harness.backends.kinds import KINDS, backend_kind
from harness.errors import InputError, PtxmoeError
from harness.partition.counters import DEFAULT_SERIES, SimSizes

SCHEMA_VERSION = 1
DOC_FILE = "partition.json"
DEFAULT_SMS = tuple(range(0, 33, 4))
DEEPSEEK_COMM_SMS = 20
MAX_SM_COUNTS = 256  # points of one sweep (--sms); each is a modelled or measured run
MAX_SMS = 1024       # an SM count above any GPU's (H100/H200: 132); the device check then names the real limit


@dataclass(frozen=True)
class PartitionSettings:
    """One sweep: where it runs, the target shapes, which SM counts and cache policies."""

    backend: str = "sim"                     # "sim" (modelled) or "gpu" (measured)
    device: str = "h800"                     # the modelled device (sim); the gpu backend reports its own
    preset: str | Preset = "dsv3-prefill"         # target T, H, K, E, I, BM: a preset name or a harness Preset
    ep: int = 32                             # expert parallelism: the GEMM holds E/ep experts
    sms: tuple[int, ...] = DEFAULT_SMS       # SMs given to communication
    series: tuple[str, ...] = DEFAULT_SERIES  # comm kernels: impl/loads (ptx/plain, ptx/no_allocate, numba/plain)
    seed: int | None = None                  # None: fresh (recorded in the document)
    sizes: SimSizes = field(default_factory=SimSizes)
    pp: int = 8                              # schedule table: pipeline stages
    microbatches: int = 20                   # schedule table: micro-batches
    repeats: int = 5                         # gpu: timed repetitions per point (median)

    def __post_init__(self):
        if self.backend not in KINDS:
            raise InputError(f"PartitionSettings.backend = {self.backend!r}; expected 'sim' or 'gpu' "
                             "(resolve 'auto' first)")
        if not self.sms:
            raise InputError("PartitionSettings.sms is empty; expected SM counts such as 0,4,...,32")
        for n in self.sms:
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise InputError(f"PartitionSettings.sms contains {n!r}; expected integers >= 0")
        if len(set(self.sms)) != len(self.sms):
            raise InputError(f"PartitionSettings.sms = {self.sms} repeats a value")
        if len(self.sms) > MAX_SM_COUNTS or max(self.sms) > MAX_SMS:
            raise InputError(f"PartitionSettings.sms: {len(self.sms)} counts up to {max(self.sms)}; expected at most "
                             f"{MAX_SM_COUNTS} counts, each <= {MAX_SMS} (a GPU's SM count)")
        if not any(n > 0 for n in self.sms):
            raise InputError(f"PartitionSettings.sms = {self.sms}: expected at least one count > 0 (N = 0 alone has "
                             "no overlap to model or measure)")
        from harness.partition.counters import parse_series

        if not self.series or len(set(self.series)) != len(self.series):
            raise InputError(f"PartitionSettings.series = {self.series}; expected distinct comm series such as "
                             f"{', '.join(DEFAULT_SERIES)}")
        for name in self.series:
            parse_series(name)
        if isinstance(self.repeats, bool) or not isinstance(self.repeats, int) or self.repeats < 1:
            raise InputError(f"PartitionSettings.repeats = {self.repeats!r}; expected an integer >= 1")
        _check_schedule_sizes(self.pp, self.microbatches)


def _check_schedule_sizes(pp, microbatches) -> None:
    """The schedule table's sizes, checked before the sweep runs (it is built last): every method must accept them."""
    from harness.pipeline.schedules import BUILDERS, check_sizes

    for method in BUILDERS:
        try:
            check_sizes(method, pp, microbatches)
        except PtxmoeError as exc:
            raise InputError(f"--pp {pp!r} --microbatches {microbatches!r} (the schedule table): {exc}") from None


def parse_sms(text: str) -> tuple[int, ...]:
    """"0,4,8" or "0:33:4" (start:stop:step, stop exclusive) -> SM counts (at most MAX_SM_COUNTS of them)."""
    text = text.strip()
    try:
        if ":" in text:
            parts = [int(p) for p in text.split(":")]
            if len(parts) not in (2, 3):
                raise ValueError
            # NOTE: len() of a range is O(1): a huge range is refused before it exists
            counts: Sequence[int] = range(*parts)
        else:
            counts = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise InputError(f"--sms {text!r}: expected comma-separated integers (0,4,8) or start:stop:step") from None
    if len(counts) > MAX_SM_COUNTS:
        raise InputError(f"--sms {text!r}: {len(counts)} SM counts; expected at most {MAX_SM_COUNTS}")
    return tuple(counts)


def _anchor(rows: list[dict]) -> dict:
    """The row nearest DeepSeek-V3's 20 comm SMs among overlapped rows (ptx/no_allocate preferred)."""
    overlapped = [r for r in rows if r["comm SMs"] > 0]
    if not overlapped:
        raise InputError("the schedule table needs at least one SM count > 0 in --sms")
    pool = [r for r in overlapped if r.get("series") == "ptx/no_allocate"] or overlapped
    return min(pool, key=lambda r: (abs(r["comm SMs"] - DEEPSEEK_COMM_SMS), r["comm SMs"]))


def schedule_section(rows: list[dict], pp: int, microbatches: int) -> dict:
    """harness.pipeline.schedule_table fed with chunk times derived from the sweep (module docstring)."""
    from harness.pipeline import ChunkTimes, schedule_table

    row = _anchor(rows)
    # NOTE: whole nanoseconds, so the schedule checker's sums of chunk times are exact in floating point.
    F = max(1, round(row["step overlapped (us)"] * 1e3))
    ratio = min(1.0, row["step overlapped (us)"] / row["step back-to-back (us)"])
    times = ChunkTimes(F=F, B=2 * F, W=F, FB=max(1, round(3 * F * ratio)))
    return {"chunk_times_ns": asdict(times), "pp": pp, "microbatches": microbatches,
            "derived_from": {"comm SMs": row["comm SMs"], "series": row.get("series"),
                             "rule": "F = overlapped step; B = 2F; W = F; FB = (F + B) x overlapped / back-to-back"},
            "rows": schedule_table(pp, microbatches, times)}


def _sim_rows(settings: PartitionSettings, seed: int) -> tuple[list[dict], dict]:
    from contract.presets import get_preset
    from harness.partition.counters import collect, local_preset
    from harness.partition.interference import CONSTANTS, LOAD_POLICIES, MODEL_NOTE
    from harness.partition.model import LABEL, modelled_sweep
    from ptxsim.model import get_device

    preset = get_preset(settings.preset)
    spec = get_device(settings.device)
    bad = [n for n in settings.sms if not 0 <= n < spec.sm_count]
    if bad:
        from harness.partition.counters import PartitionError

        raise PartitionError(f"--sms {bad}: outside 0..{spec.sm_count - 1} (the SMs of {spec.name}, one kept for "
                             "the GEMM)")
    local_preset(preset, settings.ep)  # a bad --ep fails before anything is simulated
    counters = collect(preset, settings.sizes, seed, ep=settings.ep, series=settings.series)
    rows = modelled_sweep(counters, spec, settings.sms, settings.series)
    from harness.partition import counters as counters_module

    model = {
        "label": LABEL, "note": MODEL_NOTE, "device": spec.name, "sm_count": spec.sm_count,
        "gemm_target": asdict(local_preset(preset, settings.ep)),
        "constants": {k: {"value": v, "meaning": why} for k, (v, why) in CONSTANTS.items()},
        "policies": {name: asdict(p) for name, p in LOAD_POLICIES.items()},
        "scaling": counters_module.__doc__, "counters": [kc.as_dict() for kc in counters.values()],
    }
    return rows, model


def run_sweep(settings: PartitionSettings) -> dict:
    """Run the sweep on settings.backend; the partition.json document (rows, schedule, model or measurement)."""
    from harness.results import utc_now

    seed = settings.seed if settings.seed is not None else secrets.randbits(32)
    if backend_kind(settings.backend).simulated:
        rows, about = _sim_rows(settings, seed)
        label = about["label"]
    else:
        from harness.partition.measure import measured_sweep

        rows, about = measured_sweep(settings, seed)
        label = about["label"]
    return {
        "schema_version": SCHEMA_VERSION, "kind": "partition", "created": utc_now(), "backend": settings.backend,
        "label": label, "seed": seed, "settings": asdict(settings), "rows": rows,
        "schedule": schedule_section(rows, settings.pp, settings.microbatches),
        ("model" if backend_kind(settings.backend).simulated else "measurement"): about,
    }


def write_doc(doc: dict, out_dir, run_id: str | None = None) -> Path:
    """Write `doc` to <out_dir>/<run-id>/partition.json atomically; returns the file's path."""
    from harness.atomic import atomic_write_text
    from harness.results import jsonable, new_run_id

    run_id = run_id or new_run_id(f"partition-{doc['backend']}")
    doc = dict(doc, run_id=run_id)
    return atomic_write_text(Path(out_dir) / run_id / DOC_FILE, json.dumps(jsonable(doc), indent=1) + "\n")


def load_doc(run_dir) -> dict:
    """partition.json of a run folder (or the file itself).

    Raises:
        InputError: missing, unreadable, or not a partition document of this schema version.
    """
    path = Path(run_dir)
    path = path / DOC_FILE if path.is_dir() else path
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot read a partition document ({exc})") from None
    if not isinstance(doc, dict) or doc.get("kind") != "partition" or doc.get("schema_version") != SCHEMA_VERSION:
        raise InputError(f"{path}: not a partition.json of schema version {SCHEMA_VERSION}")
    return doc

"""`ptxmoe calibrate`: measure the timing model's microbenchmarks on this GPU and write a device profile (JSON) that
`ptxmoe compare --device-profile FILE` (and `benchmarks/model_validation.py --device-profile FILE`) load, so one
GPU hour calibrates the model for that part.

    ptxmoe calibrate --out profiles/h200.json [--device "H200 SXM"] [--repeat 10]
    ptxmoe calibrate --out p.json --measurements measured.json     # fit from a file, no GPU needed

The microbenchmarks are ptxsim/model/microbench.py's PTX kernels, launched through the gpu backend (cuLaunchKernel,
CUDA events; the median of `--repeat` timed launches after two warm-ups). Each constant is fitted in closed form from
one measured quantity (ptxsim/model/profile.py FITS). A measurement file is {bench name: quantity in the bench's
unit} or {"device": ..., "measured": {...}, "ratios": {...}}; the measurements a GPU run took are written with
`--save-measurements`.

The SM clock under a sustained wgmma load (harness/calibrate_clock.py: d(%clock64) / d(%globaltimer)) is measured
first, unless `--no-clock`, and goes into the profile's "clock": with the profile, every bound of the model runs at
it (ptxsim.model.profile.DeviceProfile.spec), and the fractions are fitted against peaks at it.

The paired validation rows' kernels (harness/calibrate_variants.py: ptxsim/model/paired.py GPU_PAIRS) are timed too,
unless `--no-pairs`; each ratio with its 95% bootstrap interval goes into the profile's "pairs", from which
ptxsim.model.profile_intervals fits the model's ratio error on this GPU. So do harness/calibrate_pairs.py's GPU-only
pairs (bank-conflicted vs padded transpose, wgmma.wait_group 0 vs 1, a copy on 20 SMs vs all, 4-byte vs 16-byte
accesses), under "ratios" ({pair: {ratio, numerator_us, denominator_us, what, sms}}), carried, not used by the model.

The profile (and the --save-measurements file) is rewritten after each phase (clock, microbenchmarks, ratios) and each
measured pair, so a run cut short by a time limit keeps what it had measured (docs/calibrate.md).
"""
from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from pathlib import Path

from harness.errors import InputError, PtxmoeError

# On a GPU the DRAM chase must miss a 50-60 MB L2 even after the warm-up launches: spread its lines over 256 MB.
GPU_DRAM_CHASE_LINES = 2 * 2**20


def register(subparsers) -> None:
    parser = subparsers.add_parser("calibrate", help="measure the model's microbenchmarks on this GPU and write a "
                                                     "device profile for --device-profile")
    parser.add_argument("--out", required=True, help="where to write the device profile (JSON)")
    parser.add_argument("--device", default=None, help="modelled device (default: the GPU's name; H200 SXM for "
                                                       "--measurements files that name none)")
    parser.add_argument("--measurements", default=None, help="fit from this JSON file instead of measuring")
    parser.add_argument("--save-measurements", default=None, help="also write the measured quantities here")
    parser.add_argument("--repeat", type=int, default=10, help="timed launches per microbenchmark (median)")
    parser.add_argument("--no-pairs", action="store_true", help="skip the paired variants (\"pairs\" and \"ratios\")")
    parser.add_argument("--no-clock", action="store_true", help="skip the under-load clock (the model then keeps the "
                                                                "documented default clock)")
    parser.add_argument("--intervals", action="store_true", help="also run the measured pairs' variants on ptxsim "
                                                                  "(about 30 s) and print the model's ratio error on "
                                                                  "them: the 95%% intervals a profile gives")
    parser.add_argument("--clock-launches", type=int, default=6, help="back-to-back ~80 ms wgmma load launches for "
                                                                      "the clock (the later half is kept; default 6)")
    parser.set_defaults(func=run)


def _read_measurements(path: str) -> tuple[str | None, dict, dict, dict | None, dict]:
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as exc:
        raise InputError(f"--measurements {path}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise InputError(f"--measurements {path}: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise InputError(f"--measurements {path}: expected an object of bench name -> quantity, got "
                         f"{type(doc).__name__}")
    if "measured" in doc:
        if not isinstance(doc["measured"], dict):
            raise InputError(f"--measurements {path}: 'measured' must be an object, got {doc['measured']!r}")
        from harness.calibrate_pairs import check_ratios
        from ptxsim.model.profile import MeasuredPair
        from ptxsim.model.profile_schema import check_clock, check_pair

        where = f"--measurements {path}"
        try:
            ratios = check_ratios(doc.get("ratios", {}), where)
            check_clock(doc.get("clock"), where)
            raw = doc.get("pairs") or {}
            if not isinstance(raw, dict):
                raise InputError(f"{where}: field 'pairs' = {raw!r}; expected an object of pair -> {{ratio, ci95}}")
            pairs = {name: MeasuredPair(name, *check_pair(name, entry, where)) for name, entry in raw.items()}
        except ValueError as exc:  # ProfileError is a ValueError
            raise InputError(str(exc)) from None
        return doc.get("device"), doc["measured"], ratios, doc.get("clock"), pairs
    return None, doc, {}, None, {}


class _GpuDevice:
    """The allocation interface microbench Launch.args expects (alloc, copy_in), on the gpu backend."""

    def __init__(self, backend):
        self.backend = backend

    def alloc(self, nbytes: int):
        import numpy as np

        return self.backend.empty((int(nbytes),), np.uint8, fill_byte=0)

    def copy_in(self, buf, array) -> None:
        import numpy as np

        buf.handle.copy_to_device(np.ascontiguousarray(array).reshape(-1).view(np.uint8), stream=self.backend.stream)
        self.backend.synchronize()


def _kernel_seconds(backend, bench, launch, repeat: int) -> float:
    dev = _GpuDevice(backend)
    args = launch.args(dev)
    times = []
    for i in range(repeat + 2):
        record = backend.launch_ptx(bench.ptx, bench.entry, launch.grid, launch.block, args)
        if i >= 2:
            times.append(record.stats.elapsed_ms() * 1e-3)
    return statistics.median(times)


def _dram_chase_seconds(backend, bench, repeat: int) -> tuple[float, ...]:
    """Kernel seconds of each chase length of `bench` over GPU_DRAM_CHASE_LINES lines, every run starting at a part
    of the cycle no earlier run touched (so its lines are not L2-resident)."""
    import numpy as np

    from ptxsim.model.microbench import chase_chain

    n, stride = GPU_DRAM_CHASE_LINES, 128
    dev = _GpuDevice(backend)
    buf = dev.alloc(n * stride)
    order, offsets = chase_chain(n, stride)
    table = np.zeros(n * stride // 8, np.uint64)
    table[np.arange(n) * (stride // 8)] = np.uint64(buf.addr) + offsets.astype(np.uint64)
    dev.copy_in(buf, table)
    out_buf = dev.alloc(8)
    span = max(int(ls.work) for ls in bench.launches)
    if (repeat + 1) * len(bench.launches) * span > n:
        raise InputError(f"--repeat {repeat} is too many for the DRAM chase: each run needs {span} fresh lines of "
                         f"{n}; use --repeat <= {n // (len(bench.launches) * span) - 1}")
    times, run = [], 0
    for launch in bench.launches:
        samples = []
        for i in range(repeat + 1):
            start = np.uint64(buf.addr + int(order[run * span]) * stride)
            run += 1
            record = backend.launch_ptx(bench.ptx, bench.entry, 1, 1, [start, out_buf, np.uint32(int(launch.work))])
            if i >= 1:
                samples.append(record.stats.elapsed_ms() * 1e-3)
        times.append(statistics.median(samples))
    return tuple(times)


def _launch_gap(backend, bench, repeat: int) -> float:
    """Seconds from one back-to-back empty launch to the next: events around 100 launches, / 100."""
    backend.launch_ptx(bench.ptx, bench.entry, 1, 32, [])
    gaps = []
    for _ in range(repeat):
        start, end = backend._cuda.event(), backend._cuda.event()
        start.record(backend.stream)
        for _ in range(100):
            backend.launch_ptx(bench.ptx, bench.entry, 1, 32, [])
        end.record(backend.stream)
        end.synchronize()
        gaps.append(start.elapsed_time(end) * 1e-3 / 100)
    backend.records.clear()
    return statistics.median(gaps)


def measure_on_gpu(repeat: int, progress=sys.stdout, backend=None) -> dict[str, float]:
    """Every microbenchmark's quantity measured on this GPU (needs cuda-python and numba-cuda)."""
    from harness.backends.gpu import GpuBackend
    from ptxsim.model.microbench import BENCHES

    backend = backend or GpuBackend()
    clock = _sm_clock_hz(backend)
    out = {}
    for name, bench in BENCHES.items():
        if name == "launch_gap":
            out[name] = _launch_gap(backend, bench, repeat) * 1e6
        else:
            times = _dram_chase_seconds(backend, bench, repeat) if name == "chase_dram" else \
                tuple(_kernel_seconds(backend, bench, ls, repeat) for ls in bench.launches)
            out[name] = float(bench.quantity(times, bench.launches, clock))
        backend.records.clear()
        print(f"  {name:<16} {out[name]:12.4g} {bench.unit}", file=progress, flush=True)
    return out


def measure_ratios(backend, repeat: int, progress=None) -> dict[str, dict]:
    """The paired variants' ratios on this GPU (harness/calibrate_pairs.py), each printed as it is measured."""
    from harness.calibrate_pairs import PAIRS, measure_pairs

    out = {}
    for name in PAIRS:
        out.update(measure_pairs(backend, repeat, names=[name]))
        print(f"  {name:<28} {out[name]['ratio']:12.4g} (ratio)", file=progress or sys.stdout, flush=True)
    return out


def _write_json(path: Path, doc: dict) -> None:
    """Atomically (a temporary file, then a rename): a run killed mid-write leaves the previous phase's file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def _sm_clock_hz(backend) -> float:
    """The device's CLOCK_RATE attribute (its maximum SM clock), in Hz: converts seconds to clocks for the benches
    quoted in clocks when no under-load clock was measured."""
    return float(backend.context.device.CLOCK_RATE) * 1e3


def _gpu_device_name() -> str:
    from numba import cuda

    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


class _Calibration:
    """What a calibration has so far, written out (profile and measurement file) after every phase."""

    def __init__(self, args, device: str):
        self.args, self.device = args, device
        self.measured: dict = {}
        self.ratios: dict = {}
        self.clock: dict | None = None
        self.pairs: dict = {}
        self.skipped: dict = {}

    def profile(self):
        from ptxsim.model.errors import ModelError
        from ptxsim.model.profile import fit

        try:
            profile = fit(self.device, self.measured, self.clock, self.pairs)
        except ModelError as exc:
            raise InputError(str(exc)) from None
        return dataclasses.replace(profile, ratios=dict(self.ratios))

    def write(self):
        profile = self.profile()
        _write_json(Path(self.args.out), profile.to_json())
        if self.args.save_measurements:
            pairs = {name: pair.to_json() for name, pair in self.pairs.items()}
            _write_json(Path(self.args.save_measurements), {"device": self.device, "measured": self.measured,
                                                             "ratios": self.ratios, "clock": self.clock,
                                                             "pairs": pairs, "not_measured": self.skipped})
        return profile


def _measure(cal: _Calibration, args) -> None:
    """The GPU phases, the files rewritten after each."""
    from harness.backends.gpu import GpuBackend
    from ptxsim.model.microbench import BENCHES

    backend = GpuBackend()
    if not args.no_clock:
        from harness.calibrate_clock import measure_clock

        print("measuring the SM clock under a sustained wgmma load:")
        try:
            cal.clock = measure_clock(backend, launches=args.clock_launches)
        except PtxmoeError as exc:  # e.g. counters that did not advance: the rest of the calibration still runs
            cal.skipped["clock"] = str(exc)
            print(f"  under-load clock not measured ({exc}); the model keeps the default", flush=True)
        else:
            print(f"  under-load clock {cal.clock['under_load_hz'] / 1e6:.0f} MHz (launches: "
                  f"{', '.join(f'{hz / 1e6:.0f}' for hz in cal.clock['per_launch_hz'])} MHz)", flush=True)
            cal.write()
    print(f"measuring {len(BENCHES)} microbenchmarks on {cal.device} ({args.repeat} timed launches each):")
    cal.measured = measure_on_gpu(args.repeat, backend=backend)
    cal.write()
    if args.no_pairs:
        return
    cal.ratios = measure_ratios(backend, args.repeat)
    cal.write()
    from harness.calibrate_variants import measure_variant_pairs

    print("measuring the paired validation rows' variants (ratio, 95% bootstrap interval):")
    clock_hz = cal.clock["under_load_hz"] if cal.clock else _sm_clock_hz(backend)

    def keep(pairs: dict, skipped: dict) -> None:
        cal.pairs = dict(pairs)
        cal.skipped.update(skipped)
        cal.write()
    measure_variant_pairs(backend, max(args.repeat, 2), clock_hz, on_pair=keep)


def run(args) -> int:
    from ptxsim.model.microbench import BENCHES

    if args.repeat < 1:
        raise InputError(f"--repeat must be >= 1, got {args.repeat}")
    if args.clock_launches < 2:
        raise InputError(f"--clock-launches must be >= 2 (the later half is kept), got {args.clock_launches}")
    if args.measurements:
        file_device, measured, ratios, clock, pairs = _read_measurements(args.measurements)
        cal = _Calibration(args, args.device or file_device or "H200 SXM")
        cal.measured, cal.ratios, cal.clock, cal.pairs = measured, ratios, clock, pairs
    else:
        from harness import toolchain

        ok, why = toolchain.gpu_visible()
        if not ok:
            raise PtxmoeError(f"calibrate needs a GPU ({why}); pass --measurements FILE to fit from measured values")
        cal = _Calibration(args, args.device or _gpu_device_name())
        cal.profile()  # an unknown --device is refused before any measuring
        _measure(cal, args)
    profile = cal.write()
    measured = cal.measured
    print(f"device profile for {profile.device} -> {args.out}")
    if profile.under_load_clock_hz is not None:
        print(f"  under-load clock {profile.under_load_clock_hz / 1e6:.0f} MHz (every bound of the model uses it)")
    for key, value in sorted(profile.constants.items()):
        print(f"  {key:<28} {value:.4g}   (from {profile.fitted_from[key]} = {measured[profile.fitted_from[key]]:g} "
              f"{BENCHES[profile.fitted_from[key]].unit})")
    for name, entry in sorted(cal.ratios.items()):
        print(f"  ratio {name:<28} {entry['ratio']:.4g}   ({entry.get('what', '')})")
    for name, pair in sorted(profile.pairs.items()):
        print(f"  pair {name:<36} {pair.ratio:.4g}   [{pair.ci95[0]:.4g}, {pair.ci95[1]:.4g}]")
    for name, why in sorted(cal.skipped.items()):
        print(f"  {'' if name == 'clock' else 'pair '}{name:<36} not measured: {why}")
    unused = sorted(set(BENCHES) - set(measured))
    if unused:
        print(f"  not measured (defaults kept): {', '.join(unused)}")
    if getattr(args, "intervals", False):
        _print_intervals(profile)
    return 0


def _print_intervals(profile) -> None:
    """The model's ratio for each measured pair beside the measured one, and the 95% interval fits they give."""
    import math

    from harness.static import analyse_ptx
    from ptxsim.model.profile_intervals import profile_fits, profile_pair_rows

    if len(profile.pairs) < 2:
        print(f"  intervals: {len(profile.pairs)} measured pair(s); a spread needs at least 2")
        return
    print(f"the model on {profile.device} at {profile.spec().under_load_clock_hz / 1e6:.0f} MHz vs the measured pairs:")
    for row in profile_pair_rows(profile, static_facts=analyse_ptx):
        print(f"  {row.name:<36} modelled {row.modelled:8.4g}  measured {row.published:8.4g}  error "
              f"{row.error_ratio:6.3f}  ({'/'.join(row.limiters)})")
    for key, fit in profile_fits(profile, static_facts=analyse_ptx).items():
        print(f"  95% prediction interval, {key} (fitted on {fit.basis}, n = {fit.n}): bias {math.expm1(fit.bias):+.1%}"
              f", spread {math.expm1(fit.spread):.1%}, interval r x exp(-b) x/ {math.exp(fit.half_width):.3f}")

"""The measured sweep (gpu backend): CUDA events on two streams, one for communication and one for the GEMM.

Partitioning SMs without green contexts: every communication CTA asks for all the dynamic shared memory a block may
opt into (227 KB on Hopper, read from the device; the kernels use none), so each of the N CTAs holds a whole SM and
no other CTA (a grouped-GEMM tile of 20-48 KB, + 1 KB reserved each) fits beside it; the GEMM's CTAs run on the
other 132 - N SMs. To time the GEMM alone on 132 - N SMs, a blocker kernel with the same reservation spins on
%globaltimer on N SMs while the GEMM runs.

Per N and comm series (ptx/plain, ptx/no_allocate, numba/plain; median of `repeats`):
  comm (us)               dispatch + combine, N CTAs, comm stream, nothing else running
  GEMM (us)               grouped GEMM up + down on the GEMM stream, N SMs held by the blocker
  step overlapped (us)    comm and GEMM launched together on their streams (the GEMM stream waits on an event
                          recorded on the comm stream just before); from that event to the later of the two ends
  GEMM overlapped (us)    from that event to the GEMM's end
  step back-to-back (us)  comm (us) + GEMM (us); unpartitioned: comm on all SMs + GEMM on all SMs
Caches are not flushed between repetitions (the step is a steady-state loop on hardware too).
Inputs are random bf16 at the target shapes (the GEMM: E/ep local experts, balanced routing); outputs are checked
on a small problem on the same GPU before timing (documented in the document's `measurement.checks`). A series whose
launch refuses the reservation is listed in `measurement.skipped` (GpuBackend raises each kernel's
MAX_DYNAMIC_SHARED_SIZE_BYTES first, Numba kernels included, so none should be).
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from harness.errors import PtxmoeError

RESERVE_BYTES = 227 * 1024  # Hopper's per-block opt-in maximum; the device's own value is used when it can be read
LABEL = "measured (CUDA events on two streams; SM partition by shared-memory reservation)"
NOTE = ("measured on this GPU: the SM partition is enforced by reserving the whole per-block dynamic shared memory "
        "(227 KB on Hopper) per communication CTA, so N CTAs hold N whole SMs and nothing else fits beside them")


def reserve_bytes(backend) -> int:
    """The SM-holding reservation: the device's per-block opt-in shared-memory maximum (RESERVE_BYTES if unknown)."""
    found = backend.max_dynamic_shared()
    return int(found) if found is not None else RESERVE_BYTES

BLOCKER_PTX = """
.version 8.4
.target sm_90
.address_size 64
.visible .entry ptxmoe_sm_blocker(.param .u64 p_ns)
{
    .reg .pred %p;
    .reg .b64 %ns, %t0, %t;
    ld.param.u64 %ns, [p_ns];
    mov.u64 %t0, %globaltimer;
SPIN:
    nanosleep.u32 1000;
    mov.u64 %t, %globaltimer;
    sub.u64 %t, %t, %t0;
    setp.lt.u64 %p, %t, %ns;
    @%p bra SPIN;
    ret;
}
"""


def _bf16(rng, shape, scale: float = 1.0):
    """N(0, scale^2) bf16 drawn in float32 (the target's arrays hold ~10^8 elements; float64 draws double the cost)."""
    from contract.generators import BF16

    out = rng.standard_normal(shape, dtype=np.float32)
    if scale != 1.0:
        out *= np.float32(scale)
    return out.astype(BF16)


def _gemm_args(backend, local, variant: str, rng) -> dict:
    """Device inputs/outputs of one grouped GEMM at the local target (balanced routing, every block routed)."""
    from contract.generators import BF16
    from harness.partition.counters import _gemm_dims, balanced_padded_rows

    kd, n = _gemm_dims(local, variant)
    rows = balanced_padded_rows(local)
    blocks = rows // local.BM
    block_expert = (np.arange(blocks) * local.E // blocks).astype(np.int32)
    return {
        "a": backend.to_device(_bf16(rng, (rows, kd))),
        "w": backend.to_device(_bf16(rng, (local.E, n, kd), 1.0 / np.sqrt(kd))),
        "block_expert": backend.to_device(block_expert),
        "total_padded": backend.to_device(np.array([rows], np.int32)),
        "c": backend.empty((rows, n), BF16, fill_byte=0),
    }


def _comm_args(backend, shapes, rng) -> tuple[dict, dict]:
    from contract.generators import BF16
    from harness.partition.problem import combine_inputs, dispatch_inputs

    d = {k: backend.to_device(v) for k, v in dispatch_inputs(shapes, rng).items()}
    d["recv"] = backend.empty((shapes.S, shapes.H), BF16, fill_byte=0)
    c = {k: backend.to_device(v) for k, v in combine_inputs(shapes, rng).items()}
    c["out"] = backend.empty((shapes.T, shapes.H), BF16, fill_byte=0)
    return d, c


class _Timer:
    """CUDA events on the two streams of a comm backend and a GEMM backend."""

    def __init__(self, comm_backend, gemm_backend):
        from numba import cuda

        self.cuda = cuda
        self.cb, self.gb = comm_backend, gemm_backend

    def event(self, stream):
        ev = self.cuda.event(timing=True)
        ev.record(stream)
        return ev

    @staticmethod
    def ms(start, end) -> float:
        end.synchronize()
        return float(start.elapsed_time(end))


def measured_sweep(settings, seed: int) -> tuple[list[dict], dict]:
    """Rows with the modelled sweep's keys (plus "modelled": False), measured on the visible GPU.

    Raises:
        PtxmoeError: no visible GPU (the reason is given), or a correctness check failed on the GPU.
    """
    from contract.presets import get_preset
    from harness.backends.gpu import GpuBackend
    from harness.partition.counters import local_preset, parse_series
    from harness.partition.problem import CommShapes, run_comm, shapes_of
    from harness.toolchain import gpu_visible
    from ptx_impl import comm, grouped_gemm

    ok, why = gpu_visible()
    if not ok:
        raise PtxmoeError(f"the gpu partition sweep needs a visible CUDA GPU: {why}; use --backend sim")
    import cuda_impl.comm as cuda_comm

    rng = np.random.default_rng(seed)
    cb, gb = GpuBackend(event_timing=False), GpuBackend(event_timing=False)
    reserve = reserve_bytes(cb)
    timer = _Timer(cb, gb)
    sm_total = int(cb.context.device.MULTIPROCESSOR_COUNT)
    bad = [n for n in settings.sms if n >= sm_total]
    if bad:
        raise PtxmoeError(f"--sms {bad}: this GPU has {sm_total} SMs; expected counts below that")

    def module_of(series):
        impl, loads = parse_series(series)
        return (comm, {"loads": loads}) if impl == "ptx" else (cuda_comm, {})

    checks = {}
    small = CommShapes(64, 512, 4, spare=5)
    for series in settings.series:
        module, extra = module_of(series)
        for op in ("dispatch", "combine"):
            result, _ = run_comm(module, cb, op, small, rng, 3, **extra)
            checks[f"{op}[{series}]"] = result.message
            if not result.ok:
                raise PtxmoeError(f"gpu check of comm {op}[{series}] failed: {result.message}")

    preset = get_preset(settings.preset)
    local = local_preset(preset, settings.ep)
    shapes = shapes_of(preset)
    dispatch_args, combine_args = _comm_args(cb, shapes, rng)
    gemm_args = [_gemm_args(gb, local, v, rng) for v in ("up", "down")]
    comm_bytes = shapes.dispatch_bytes() + shapes.combine_bytes()
    gemm_flops = sum(2.0 * preset.T * preset.K * n * kd for kd, n in
                     ((local.H, 2 * local.I), (local.I, local.H)))

    def launch_comm(n, series, smem):
        module, extra = module_of(series)
        module.dispatch(cb, dispatch_args, n, shared_bytes=smem, **extra)
        module.combine(cb, combine_args, n, shared_bytes=smem, **extra)

    def launch_gemm():
        for args in gemm_args:
            grouped_gemm.run(gb, args, local)

    def comm_alone(n, series, smem=None):
        s = timer.event(cb.stream)
        launch_comm(n, series, reserve if smem is None else smem)
        return timer.ms(s, timer.event(cb.stream))

    def gemm_alone():
        s = timer.event(gb.stream)
        launch_gemm()
        return timer.ms(s, timer.event(gb.stream))

    def gemm_beside_blocker(n, hold_ms):
        cb.launch_ptx(BLOCKER_PTX, "ptxmoe_sm_blocker", (n, 1, 1), (32, 1, 1), [np.uint64(int(hold_ms * 1e6))],
                      shared_bytes=reserve)
        time.sleep(0.002)  # let the blocker's CTAs become resident before the GEMM's are scheduled
        ms = gemm_alone()
        cb.synchronize()
        return ms

    def overlapped(n, series):
        start = timer.event(cb.stream)
        start.wait(gb.stream)
        launch_comm(n, series, reserve)
        c_end = timer.event(cb.stream)
        launch_gemm()
        g_end = timer.event(gb.stream)
        return timer.ms(start, c_end), timer.ms(start, g_end)

    def median(fn, *a):
        values = [fn(*a) for _ in range(settings.repeats)]
        if isinstance(values[0], tuple):
            return tuple(statistics.median(v[i] for v in values) for i in range(len(values[0])))
        return statistics.median(values)

    gemm_alone()  # warm-up: module loads, clocks
    g_full = median(gemm_alone)
    hold_ms = 4 * g_full + 5.0
    rows, skipped = [], {}
    for series in settings.series:
        impl, loads = parse_series(series)
        try:
            comm_alone(1, series)  # warm-up, and the shared-memory reservation must be accepted
        except Exception as exc:  # noqa: BLE001 - e.g. a Numba launch refusing 200 KB of dynamic shared memory
            skipped[series] = f"{type(exc).__name__}: {exc}"
            continue
        c_full = median(comm_alone, sm_total, series, 0)
        for n in settings.sms:
            row = {"comm SMs": n, "GEMM SMs": sm_total - n, "series": series, "impl": impl, "loads": loads,
                   "modelled": False, "step unpartitioned (us)": (c_full + g_full) * 1e3}
            if n == 0:
                c, g, c1, g1, step = c_full, g_full, c_full, g_full, c_full + g_full
            else:
                c = median(comm_alone, n, series)
                g = median(gemm_beside_blocker, n, hold_ms)
                c1, g1 = median(overlapped, n, series)
                step = max(c1, g1)
            row.update({
                "comm (us)": c * 1e3, "comm bandwidth (GB/s)": comm_bytes / (c * 1e-3) / 1e9,
                "comm overlapped (us)": c1 * 1e3, "GEMM (us)": g * 1e3,
                "GEMM (TFLOP/s)": gemm_flops / (g * 1e-3) / 1e12,
                "GEMM overlapped (us)": g1 * 1e3, "GEMM interference slowdown (%)": (g1 / g - 1.0) * 100,
                "step overlapped (us)": step * 1e3, "step back-to-back (us)": (c + g) * 1e3,
                "overlap saving (%)": (1.0 - step / (c + g)) * 100,
            })
            rows.append(row)
    name = cb.context.device.name
    about = {"label": LABEL, "note": NOTE, "device": name.decode() if isinstance(name, bytes) else str(name),
             "sm_count": sm_total,
             "reserve_bytes": reserve, "repeats": settings.repeats, "checks": checks, "skipped": skipped,
             "gemm_target": {"T": local.T, "H": local.H, "E": local.E, "K": local.K, "I": local.I, "BM": local.BM}}
    return rows, about

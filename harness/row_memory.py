"""Whether a row's memory, known before it is spent, fits this machine: the contract's estimate
(contract.footprint.estimate_memory: lazy inputs, sampled GEMMs) against MemAvailable, and the one line saying why a
row is skipped (what it needs, what the machine has, which flag helps)."""
from __future__ import annotations

import os

from harness.backends.kinds import backend_kind

SAMPLED_KERNELS = ("grouped_gemm", "grouped_gemm_fp8", "layer")  # rows whose GEMM launches --sample samples


def estimate_row_memory(kernel: str, preset, variant: str | None = None, backend: str = "sim", lazy: bool = False,
                        sample_blocks: int | None = None):
    """contract.footprint.MemoryEstimate of one row; on gpu only its host part counts (sim_bytes 0, inputs whole).

    Args:
        lazy: the big inputs are keyed lazy tensors (the sim backend takes them); sample_blocks: routing blocks each
            sampled GEMM launch simulates (harness.sampling), None = every CTA.
    Raises:
        UnknownNameError: an unknown kernel or preset.
    """
    from dataclasses import replace

    from contract.footprint import estimate_memory

    if not backend_kind(backend).simulated:
        return replace(estimate_memory(kernel, preset, variant or "up", lazy=False), sim_bytes=0)
    # NOTE: sample_blocks as sample_ctas is an upper bound: the footprint counts one routing block (BM rows and one
    # expert's weights) per sampled CTA, and a sampled grid row is one routing block
    return estimate_memory(kernel, preset, variant or "up", lazy=lazy, sample_ctas=sample_blocks)


MEMINFO, SELF_CGROUP, CGROUP_ROOT = "/proc/meminfo", "/proc/self/cgroup", "/sys/fs/cgroup"
NO_LIMIT = 1 << 60  # cgroup v1 writes "no limit" as a page-rounded 2**63 - 1; any limit above this is none


def available_bytes(meminfo: str = MEMINFO, self_cgroup: str = SELF_CGROUP,
                    cgroup_root: str = CGROUP_ROOT) -> int | None:
    """Memory this process can be given now, or None if unknown: the machine's (MemAvailable from /proc/meminfo;
    on kernels before 3.14, which lack it, MemFree + Buffers + Cached + SReclaimable; else free pages), capped by the
    headroom of any memory cgroup this process is in (a container or VM slice whose limit is below what the machine
    has free: the OOM killer acts at the cgroup's limit, not the machine's)."""
    machine = _meminfo_available(meminfo)
    if machine is None:
        try:
            machine = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            machine = None
    cgroup = cgroup_headroom(self_cgroup, cgroup_root)
    known = [n for n in (machine, cgroup) if n is not None]
    return min(known) if known else None


def _kb_fields(path: str) -> dict:
    """The "Name: N kB" lines of a /proc file in bytes, {} if it cannot be read."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                name, _, rest = line.partition(":")
                words = rest.split()
                if words:
                    out[name] = int(words[0]) * 1024
    except (OSError, ValueError):
        return {}
    return out


def _meminfo_available(path: str) -> int | None:
    fields = _kb_fields(path)
    if "MemAvailable" in fields:
        return fields["MemAvailable"]
    if "MemFree" not in fields:
        return None
    # NOTE: the estimate the kernel made before MemAvailable existed: free pages plus the page cache and reclaimable
    # slab it can drop (an overestimate by the part of the cache that is dirty or mapped, as `free` showed then)
    return sum(fields.get(name, 0) for name in ("MemFree", "Buffers", "Cached", "SReclaimable"))


def _read_int(path: str) -> int | None:
    """A cgroup file's one number; None if absent, unreadable or "max" (v2's no limit)."""
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _stat_field(path: str, name: str) -> int:
    """One "name value" line of a cgroup memory.stat, 0 if absent."""
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == name:
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _cgroup_dirs(base: str, path: str) -> list:
    """The directories of a cgroup and its ancestors under the mount `base`, innermost first. A process in a cgroup
    namespace (most containers) sees its own cgroup as the mount's root, and /proc/self/cgroup may then name a path
    the mount does not hold: the root alone is read."""
    parts = [p for p in path.strip().split("/") if p]
    dirs = [os.path.join(base, *parts[:n]) for n in range(len(parts), -1, -1)]
    return [d for d in dirs if os.path.isdir(d)]


# (limit file, usage file, memory.stat's reclaimable page-cache field) per cgroup version
CGROUP_FILES = {2: ("memory.max", "memory.current", "inactive_file"),
                1: ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")}


def cgroup_headroom(self_cgroup: str = SELF_CGROUP, cgroup_root: str = CGROUP_ROOT) -> int | None:
    """The least (limit - usage) over this process's memory cgroup and its ancestors, v2 (memory.max -
    memory.current) or v1 (memory.limit_in_bytes - memory.usage_in_bytes), usage less its inactive page cache (the
    kernel reclaims that before it kills); None where no limit is set or nothing can be read."""
    try:
        with open(self_cgroup) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    places = []  # (version, mount, path in it)
    for line in lines:
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        _, controllers, path = fields
        if controllers == "":  # the v2 unified line "0::/path"; hybrid systems mount it at unified/
            places += [(2, cgroup_root, path), (2, os.path.join(cgroup_root, "unified"), path)]
        elif "memory" in controllers.split(","):
            places.append((1, os.path.join(cgroup_root, controllers), path))
    rooms = []
    for version, mount, path in places:
        limit_file, usage_file, inactive = CGROUP_FILES[version]
        for d in _cgroup_dirs(mount, path):
            limit, usage = _read_int(os.path.join(d, limit_file)), _read_int(os.path.join(d, usage_file))
            if limit is None or usage is None or limit >= NO_LIMIT:
                continue
            usage -= min(usage, _stat_field(os.path.join(d, "memory.stat"), inactive))
            rooms.append(max(0, limit - usage))
    return min(rooms) if rooms else None


# NOTE: Linux resets a process's peak RSS (VmHWM) to its current RSS when "5" is written to /proc/self/clear_refs
# (since 4.0), so each row's own peak can be read after it, whatever rows the process ran before. A sandboxed kernel
# could accept the write and ignore it, so a reset counts only if VmHWM then reads near VmRSS.
CLEAR_REFS, STATUS = "/proc/self/clear_refs", "/proc/self/status"
RESET_SLACK_BYTES = 16 << 20  # RSS can move a little between the reset and the read of /proc/self/status


def _status_bytes(*fields: str) -> dict:
    """The named /proc/self/status fields (kB lines) in bytes; a field the file lacks is left out."""
    out = {}
    try:
        with open(STATUS) as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name in fields:
                    out[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return out


def reset_peak_rss() -> bool:
    """Start a new peak-RSS window for this process; False where the kernel refuses or ignores it (then
    peak_rss_bytes is the process's peak since it started)."""
    try:
        with open(CLEAR_REFS, "w") as f:
            f.write("5")
    except OSError:
        return False
    now = _status_bytes("VmHWM", "VmRSS")
    if len(now) < 2:
        return False
    return now["VmHWM"] - now["VmRSS"] <= RESET_SLACK_BYTES


def peak_rss_bytes() -> int | None:
    """This process's peak resident bytes since the last reset_peak_rss (VmHWM), or None where unknown."""
    return _status_bytes("VmHWM").get("VmHWM")


def rss_bytes() -> int | None:
    """This process's resident bytes now (VmRSS), or None where unknown."""
    return _status_bytes("VmRSS").get("VmRSS")


def release_memory(drop_draws: bool = True) -> int | None:
    """Give back what a finished row left in this process; its resident bytes after, or None where unknown.

    A row's arrays are freed when it ends, but not all of the memory comes back by itself: ptxsim's launches leave
    reference cycles (freed at Python's rare full collection), the keyed generators keep the last blocks they drew
    (contract.generators, up to 256 MiB: the row's check reuses them), and glibc's malloc keeps freed heap for the
    process rather than returning it. Measured after the cutlass bf16 layer row at dsv3-decode: 1.50 GB held, 0.62 GB
    after gc and malloc_trim. `drop_draws` False keeps the generators' blocks (the next row is of the same cell: the
    same tensors and seed).
    """
    import gc

    if drop_draws:
        from contract.generators import clear_block_cache

        clear_block_cache()
    gc.collect()
    _malloc_trim()
    return rss_bytes()


def _malloc_trim() -> None:
    """glibc's malloc_trim(0): return the free heap at the top and in the arenas' free pages to the OS (a no-op where
    the C library is not glibc)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    trim(0)


def memory_record(estimate, peak: int | None, windowed: bool, start: int | None = None,
                  end: int | None = None) -> dict:
    """run.json's row["memory"]: the estimate made before the row (contract.footprint) next to the peak it reached.
    peak_rss_bytes is the process's (everything it holds, the base and earlier rows' caches included); windowed False
    means the peak is since the process started (no per-row reset on this system). start_rss_bytes: what the process
    held when the row started, so peak - start is the row's own rise (a process that ran other rows keeps some of
    theirs: up to 1.0 GB by the end of a serial dsv3-decode run, which the estimate's PROCESS_BASE does not know).
    end_rss_bytes: what it held after the row once release_memory gave back what it could (Dask workers: what the
    scheduler counts as that worker's between rows)."""
    out = {"peak_rss_bytes": peak, "peak_is_row": bool(windowed and peak is not None), "start_rss_bytes": start}
    if end is not None:  # what the process still held once the row was done and its memory released
        out["end_rss_bytes"] = end
    if estimate is not None:
        out.update(estimated_bytes=int(estimate.total_bytes), estimated_host_bytes=int(estimate.host_bytes),
                   estimated_sim_bytes=int(estimate.sim_bytes))
    return out


def gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def row_estimate(kernel: str, preset: str, variant: str | None, backend: str, lazy: bool = False,
                 sample_blocks: int | None = None):
    """estimate_row_memory, or None for a kernel or variant the size table does not know."""
    from contract.errors import UnknownNameError
    from contract.footprint import SHAPES

    if kernel not in SHAPES:
        return None
    try:
        return estimate_row_memory(kernel, preset, variant, backend, lazy, sample_blocks)
    except UnknownNameError:  # e.g. a variant the size table does not know
        return None


def memory_skip_reason(kernel: str, preset: str, variant: str | None, backend: str, available: int | None,
                       lazy: bool = False, sample_blocks: int | None = None, need=None) -> str | None:
    """One line saying why a row will not fit (what it needs, what the machine has, which flag helps), or None.
    `need`: the row's estimate if already made (row_estimate)."""
    if need is None:
        need = row_estimate(kernel, preset, variant, backend, lazy, sample_blocks)
    if available is None or need is None:  # unknown: run it rather than guess
        return None
    if need.total_bytes <= available:
        return None
    parts = f"host {gib(need.host_bytes)}" + (f" + simulated {gib(need.sim_bytes)}" if need.sim_bytes else "")
    if backend_kind(backend).simulated:
        sampling = "--sample auto (big GEMMs simulate a few routing blocks), " if sample_blocks is None and \
            kernel in SAMPLED_KERNELS else ""
        helps = f"{sampling}a smaller --preset, fewer --workers, or leave the kernel out with --kernels"
    else:
        helps = "a smaller --preset, or leave the kernel out with --kernels"
    return f"needs about {gib(need.total_bytes)} ({parts}), the machine has {gib(available)} free: skipped; use {helps}"

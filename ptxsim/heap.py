"""Keep the C heap's freed lane-vector temporaries mapped (glibc malloc settings, once per process).

A launch's handlers allocate and free NumPy temporaries of one lane vector each (32768 lanes x 8 bytes = 256 KiB)
hundreds of thousands of times. glibc serves a block over its mmap threshold (128 KiB at start) with a fresh mmap,
and trims the heap's top back to the system once more than its trim threshold is free, so every new temporary's
pages fault in again: on 32768-lane vectors, 110 minor page faults per fma.rn.f32 took it from 87 us to 260 us.
A 4 MiB mmap threshold and a 64 MiB trim threshold keep those pages in the heap for the next one.

NOTE: process-wide, and glibc's: elsewhere (musl, macOS, Windows) nothing changes. Blocks from 4 MiB up (tensors,
shared and global memory images) are still mapped and unmapped one by one, and the heap still gives its free top
back beyond 64 MiB. PTXSIM_HEAP=0 leaves the allocator alone.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import platform

from ptxsim.config import CONFIG

# mallopt parameters (glibc malloc.h) and their values
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
SETTINGS = ((_M_MMAP_THRESHOLD, 4 << 20), (_M_TRIM_THRESHOLD, 64 << 20))
_done: list[bool] = []


def keep_temporaries(enabled: bool | None = None) -> bool:
    """Apply SETTINGS with glibc's mallopt, the first time only; True when they are in force.

    Args:
        enabled: override PTXSIM_HEAP (None: the flag).
    """
    if _done:
        return _done[0]
    on = CONFIG.heap if enabled is None else enabled
    ok = False
    if on and platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            ok = all(libc.mallopt(param, value) == 1 for param, value in SETTINGS)
        except (OSError, AttributeError):  # no loadable C library, or one without mallopt
            ok = False
    _done.append(ok)
    return ok

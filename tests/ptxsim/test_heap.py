"""ptxsim/heap.py: a launch keeps freed lane-vector temporaries mapped, so allocating the next one costs no page
faults (measured in a fresh interpreter each, since the setting is process-wide)."""
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                                reason="the heap settings are glibc's")

# allocate, touch and free a handler's temporaries (five lane vectors of 32768 x 8 bytes) 200 times
PROBE = """
import resource, sys
import numpy as np
from ptxsim.heap import keep_temporaries
print(keep_temporaries(), file=sys.stderr)
x = np.ones(32768)
tmps = [x + i for i in range(5)]  # the first round maps the pages (in either setting)
del tmps
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(200):
    tmps = [x + i for i in range(5)]
    del tmps
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / 200)
"""


def _faults_per_round(heap: str) -> tuple[float, str]:
    env = {"PTXSIM_HEAP": heap, "PATH": "", "PYTHONPATH": ":".join(sys.path)}
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=60,
                          check=True)
    return float(done.stdout), done.stderr.strip()


def test_temporaries_stay_mapped():
    tuned, applied = _faults_per_round("1")
    assert applied == "True"
    assert tuned < 1  # 5 x 64 pages were faulted in every round before


def test_flag_leaves_the_allocator_alone():
    default, applied = _faults_per_round("0")
    assert applied == "False"
    assert default > 50  # glibc maps and unmaps each 256 KiB block: the cost the setting removes

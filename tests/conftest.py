"""Shared test fixtures: fresh printed seeds, GPU tier skipping."""
import os
import secrets

import numpy as np
import pytest

# Strict asynchronous timing in every test's launches (ptxsim/README.md): async-copy destinations poisoned until a
# waiter observes them, waits that fail once, late bulk stores, wgmma operands re-read at retire. Read when ptxsim is
# first imported, which is after this file; PTXSIM_STRICT_ASYNC=0 in the environment turns it off.
os.environ.setdefault("PTXSIM_STRICT_ASYNC", "1")


@pytest.fixture
def seed(request) -> int:
    """A fresh random seed per test (PTXMOE_SEED pins it to reproduce a failure); printed so -rA/-s shows it."""
    value = int(os.environ.get("PTXMOE_SEED", secrets.randbits(32)))
    print(f"[seed] {request.node.nodeid}: PTXMOE_SEED={value}")
    return value


@pytest.fixture
def rng(seed) -> np.random.Generator:
    return np.random.default_rng(seed)


def _gpu_reason():
    from harness.toolchain import gpu_visible

    ok, why = gpu_visible()
    return None if ok else why


def pytest_collection_modifyitems(config, items):
    import os

    if os.environ.get("PTXMOE_LONG_TESTS") != "1":  # the long tier: minutes each, outside make test's 10 minutes
        long = pytest.mark.skip(reason="long tier: set PTXMOE_LONG_TESTS=1 to run it")
        for item in items:
            if item.get_closest_marker("long"):
                item.add_marker(long)
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    reason = _gpu_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU: {reason}")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)

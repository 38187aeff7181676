"""The fake-driver tier: GPU code paths run against recording fakes of cuda.bindings.driver and numba.cuda."""
import pytest

from tests.harness.fakegpu.fakes import install


@pytest.fixture
def fake_gpu(monkeypatch):
    return install(monkeypatch)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "/fakegpu/" in str(item.fspath):
            item.add_marker(pytest.mark.fakegpu)

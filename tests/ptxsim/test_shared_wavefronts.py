"""counters.shared_wavefronts against a per-phase count written from the definition, on its three paths: whole
warps with every phase the same pattern (counted once), whole warps with mixed patterns (sorted), and part of the
lanes."""
import numpy as np
import pytest

from ptxsim.counters import shared_wavefronts


def _reference(la, addr, nbytes):
    """Per phase (warp / half-warp / quarter-warp for 4 / 8 / 16-byte accesses): the most distinct 4-byte words one
    of the 32 banks serves; (sum over phases, number of phases)."""
    per_phase = 32 if nbytes <= 4 else (16 if nbytes == 8 else 8)
    phases = {}
    for lane, a in zip(la.tolist(), addr.tolist(), strict=True):
        key = (lane >> 5, (lane & 31) // per_phase)
        for k in range(max(nbytes // 4, 1)):
            w = (a >> 2) + k
            phases.setdefault(key, {}).setdefault(w & 31, set()).add(w)
    return sum(max(len(s) for s in banks.values()) for banks in phases.values()), len(phases)


def _tile(rng, nwarps, nbytes, stride):
    """Every warp reads the same shape (lane i at i * stride words, some lanes broadcast) from its own base."""
    per = np.arange(32) * stride
    per[rng.integers(0, 32, 6)] = per[0]  # a few broadcasts
    base = rng.integers(0, 4096, nwarps)[:, None] * 4
    return ((base + per[None, :]) * 4).reshape(-1).astype(np.uint64) // nbytes * nbytes


@pytest.mark.parametrize("nbytes", [4, 8, 16])
@pytest.mark.parametrize("stride", [1, 2, 17, 32, 33])
def test_same_pattern_in_every_phase(rng, nbytes, stride):
    la = np.arange(8 * 32)
    addr = _tile(rng, 8, nbytes, stride)
    want = _reference(la, addr, nbytes)
    assert shared_wavefronts(la, addr, nbytes) == want
    assert shared_wavefronts(la, addr, nbytes, whole_warps=True) == want


@pytest.mark.parametrize("nbytes", [4, 8, 16])
def test_mixed_patterns(rng, nbytes):
    la = np.arange(8 * 32)
    addr = _tile(rng, 8, nbytes, 32)
    addr[37] += np.uint64(nbytes * 3)  # one lane of warp 1 leaves the common pattern
    addr[200:232] = rng.integers(0, 1 << 14, 32).astype(np.uint64) // nbytes * nbytes  # warp 6: random words
    got = shared_wavefronts(la, addr, nbytes)
    assert got == _reference(la, addr, nbytes)


@pytest.mark.parametrize("nbytes", [4, 16])
def test_part_of_the_lanes(rng, nbytes):
    la = np.sort(rng.choice(8 * 32, 100, replace=False))
    addr = _tile(rng, 8, nbytes, 32)[la]
    assert shared_wavefronts(la, addr, nbytes) == _reference(la, addr, nbytes)

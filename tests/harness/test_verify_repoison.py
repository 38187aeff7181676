"""harness.verify._repoison_rows: rows a stage's inputs did not define read as unwritten for its check, without a
copy of the output when none of them was written (the sampled down GEMM's y: 0.7-1.05 GB at dsv3-prefill)."""
import numpy as np

from contract.coverage import POISON_BYTE, written
from contract.generators import BF16
from harness.verify import _repoison_rows


def _poisoned(shape):
    arr = np.empty(shape, BF16)
    arr.view(np.uint8).fill(POISON_BYTE)
    return arr


def test_no_written_row_to_drop_returns_the_array_itself():
    y = _poisoned((40, 8))
    y[8:16] = 1.5  # a sampled block's rows, the ones its inputs defined
    keep = np.zeros(40, bool)
    keep[8:16] = True
    y.flags.writeable = False  # a read-only view of the simulated heap, as the runner hands it over
    assert _repoison_rows(y, keep, rows_per_chunk=3) is y


def test_written_rows_outside_keep_are_poisoned_in_a_copy():
    a = np.full((40, 8), 2.0, BF16)  # swiglu ran whole: every row written
    keep = np.zeros(40, bool)
    keep[8:16] = True
    out = _repoison_rows(a, keep, rows_per_chunk=3)
    assert out is not a and np.array_equal(written(out).all(axis=1), keep)
    assert written(a).all()  # the original is left as it was
    late = _poisoned((40, 8))
    late[39, 7] = 0.25  # one element, in the last chunk of dropped rows
    out = _repoison_rows(late, keep, rows_per_chunk=3)
    assert out is not late and not written(out).any()

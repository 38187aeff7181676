"""contract.device's launch-parameter marks: LiveRows (a grouped GEMM's total_padded, marked with the rows a grid row
computes) is a DeviceArray to every backend, and refuses what cannot be one."""
import numpy as np
import pytest

from contract.device import DeviceArray, LiveRows
from contract.errors import InputError

TOTAL = DeviceArray((1,), np.dtype(np.int32), 0x1000, handle="buffer")


def test_live_rows_is_the_same_device_array_with_its_rows_per_grid_row():
    live = LiveRows.of(TOTAL, 16)
    assert isinstance(live, DeviceArray) and live.rows_per_grid_row == 16
    assert (live.shape, live.dtype, live.addr, live.handle, live.nbytes) == ((1,), TOTAL.dtype, 0x1000, "buffer", 4)


@pytest.mark.parametrize("array, rows, msg", [
    (TOTAL, 0, r"rows_per_grid_row = 0: expected a positive int"),
    (TOTAL, True, r"rows_per_grid_row = True"),
    (TOTAL, 16.0, r"rows_per_grid_row = 16.0"),
    (DeviceArray((2,), np.dtype(np.int32), 0x1000), 16, r"total_padded has shape \(2,\); expected \(1,\)"),
])
def test_a_bad_live_rows_is_an_input_error(array, rows, msg):
    with pytest.raises(InputError, match=msg):
        LiveRows.of(array, rows)

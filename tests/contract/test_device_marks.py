"""contract.device's launch-parameter marks: LiveRows (a grouped GEMM's total_padded, marked with the rows a grid row
computes and the launch's block_expert) is a DeviceArray to every backend, and refuses what cannot be one."""
import numpy as np
import pytest

from contract.device import DeviceArray, LiveRows
from contract.errors import InputError

TOTAL = DeviceArray((1,), np.dtype(np.int32), 0x1000, handle="buffer")
BLOCKS = DeviceArray((76,), np.dtype(np.int32), 0x2000, handle="blocks")


def test_live_rows_is_the_same_device_array_with_its_rows_per_grid_row():
    live = LiveRows.of(TOTAL, 16, BLOCKS)
    assert isinstance(live, DeviceArray) and live.rows_per_grid_row == 16 and live.block_expert is BLOCKS
    assert (live.shape, live.dtype, live.addr, live.handle, live.nbytes) == ((1,), TOTAL.dtype, 0x1000, "buffer", 4)


@pytest.mark.parametrize("array, rows, blocks, msg", [
    (TOTAL, 0, BLOCKS, r"rows_per_grid_row = 0: expected a positive int"),
    (TOTAL, True, BLOCKS, r"rows_per_grid_row = True"),
    (TOTAL, 16.0, BLOCKS, r"rows_per_grid_row = 16.0"),
    (DeviceArray((2,), np.dtype(np.int32), 0x1000), 16, BLOCKS, r"total_padded has shape \(2,\); expected \(1,\)"),
    (TOTAL, 16, np.zeros(76, np.int32), r"block_expert is a ndarray of shape \(76,\); expected the launch's 1-D"),
])
def test_a_bad_live_rows_is_an_input_error(array, rows, blocks, msg):
    with pytest.raises(InputError, match=msg):
        LiveRows.of(array, rows, blocks)

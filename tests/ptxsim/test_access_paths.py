"""access.py's whole-unit paths (vector loads/stores and cp.async rows moved as 4/8/16-byte units, a generic access
that lies in one window) against their element-by-element meaning, including colliding lanes and unaligned
fallbacks."""
import numpy as np
import pytest
from ptxkit import HEADER

import ptxsim
from ptxsim import access


@pytest.mark.parametrize("dtype,n", [(np.uint32, 4), (np.float32, 2), (np.uint16, 2), (np.uint16, 8), (np.uint8, 16),
                                     (np.uint32, 3)])
def test_gather_equals_elementwise(rng, dtype, n):
    buf = rng.integers(0, 256, 4096, dtype=np.uint8)
    width = np.dtype(dtype).itemsize * n
    phys = (rng.integers(0, 4096 // width - 1, 300) * width).astype(np.uint64)
    want = buf.view(dtype)[(phys // np.dtype(dtype).itemsize).astype(np.int64)[:, None] + np.arange(n)]
    got = access._gather(buf, phys, np.dtype(dtype), n)
    assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()
    odd = phys + np.uint64(np.dtype(dtype).itemsize)  # aligned to the element only: the element-wise fallback
    want = buf.view(dtype)[(odd // np.dtype(dtype).itemsize).astype(np.int64)[:, None] + np.arange(n)]
    assert access._gather(buf, odd, np.dtype(dtype), n).tobytes() == want.tobytes()


@pytest.mark.parametrize("width", [4, 8, 16, 12])
def test_copy_rows_last_wins(rng, width):
    buf = np.zeros(4096, np.uint8)
    phys = np.array([0, 64, 0, 128, 64], np.int64) * (width if width != 12 else 1)
    data = rng.integers(0, 256, (5, width), dtype=np.uint8)
    want = buf.copy()
    for p, d in zip(phys, data, strict=True):  # in lane order: the highest colliding lane wins
        want[p:p + width] = d
    access.copy_rows(buf, phys, data)
    assert buf.tobytes() == want.tobytes()


def test_generic_access_in_one_window_and_across_windows():
    """Generic loads from shared memory only, and from shared and global in one instruction, read what was stored."""
    text = HEADER + """
.visible .entry k(.param .u64 g, .param .u64 out)
{
  .shared .align 16 .b32 s[64];
  .reg .pred %p1; .reg .b32 %r<8>; .reg .b64 %rd<12>;
  mov.u32 %r1, %tid.x; mul.wide.u32 %rd1, %r1, 4; mov.u64 %rd2, s; add.s64 %rd3, %rd2, %rd1;
  mul.lo.u32 %r2, %r1, 3; st.shared.u32 [%rd3], %r2; bar.sync 0;
  cvta.shared.u64 %rd4, %rd3; ld.u32 %r3, [%rd4];
  ld.param.u64 %rd5, [g]; cvta.to.global.u64 %rd6, %rd5; add.s64 %rd7, %rd5, %rd1;
  and.b32 %r4, %r1, 1; setp.eq.u32 %p1, %r4, 0; selp.b64 %rd8, %rd4, %rd7, %p1; ld.u32 %r5, [%rd8];
  ld.param.u64 %rd9, [out]; mul.wide.u32 %rd10, %r1, 8; add.s64 %rd11, %rd9, %rd10;
  st.global.v2.u32 [%rd11], {%r3, %r5};
  ret;
}
"""
    g = np.arange(64, dtype=np.uint32) + 1000
    out = np.zeros((64, 2), np.uint32)
    ptxsim.launch(ptxsim.load_ptx(text).kernel("k"), 1, 64, [g, out])
    t = np.arange(64)
    np.testing.assert_array_equal(out[:, 0], 3 * t)
    np.testing.assert_array_equal(out[:, 1], np.where(t % 2 == 0, 3 * t, 1000 + t))

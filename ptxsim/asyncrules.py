"""asynccheck's ordering rules for Hopper's asynchronous units, per batch of CTAs (made when asynccheck is on).

- wgmma.fence: a warpgroup's first wgmma.mma_async, and one whose accumulator registers were read or written, or whose
  A-fragment registers were written, by another instruction since the thread's last wgmma.fence (wgmma.mma_async's
  own accumulator chaining excepted), is reported.
"""
from __future__ import annotations

import numpy as np


class AsyncRules:
    def __init__(self, st):
        self.st = st

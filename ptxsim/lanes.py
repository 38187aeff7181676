"""What a lane's pc holds besides an instruction index: the exit and blocked marks every waiting mechanism (barriers,
mbarriers, clusters, the register pool, warp syncs) and the scheduler agree on. A leaf module, so that each of them
can read the marks without importing the scheduler that imports them."""
from __future__ import annotations

EXITED = 1 << 30  # a lane that has exited holds EXITED
BLOCKED = 1 << 29  # a lane waiting at a barrier holds pc + BLOCKED

"""harness.runlock: one holder per run folder; the lock goes when its holder exits, even killed."""
import os
import subprocess
import sys

import pytest

from harness.runlock import RunLock, RunLockedError


def test_second_holder_is_refused_until_release(tmp_path):
    first = RunLock(tmp_path).acquire()
    with pytest.raises(RunLockedError, match=f"in use by another ptxmoe process \\(pid {os.getpid()}\\)"):
        RunLock(tmp_path).acquire()
    first.release()
    with RunLock(tmp_path):
        pass


def test_killed_holder_leaves_no_stale_lock(tmp_path):
    code = (f"import os, sys; sys.path.insert(0, {os.getcwd()!r}); from harness.runlock import RunLock; "
            f"RunLock({str(tmp_path)!r}).acquire(); print('held', flush=True); os.kill(os.getpid(), 9)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.stdout.strip() == "held" and proc.returncode == -9
    with RunLock(tmp_path):  # the kernel dropped the killed holder's flock
        pass

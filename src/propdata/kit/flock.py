"""Exclusive file locks (flock) taken without waiting: one holder of a file at a time.

The kernel drops such a lock when its descriptor is closed, or when its process (and every
child given the descriptor) exits, so a holder that dies never blocks the others.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


def try_lock(path: str | Path, mode: int = 0o600) -> int | None:
    """A descriptor of `path` (made with `mode` if absent) that holds an exclusive flock on
    it, or None while another descriptor holds one (another process's or this one's).
    OSError when the file cannot be opened or locked."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, mode)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd

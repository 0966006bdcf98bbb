"""Processes of this host, by their id."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether a process of that id runs (one of another user's counts: it exists)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

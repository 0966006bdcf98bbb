"""Keep a worker's resident memory close to what it uses (glibc's allocator, Linux).

numpy's large temporaries (a search's masks and gathers, the index build's sorts) are
freed right away, but glibc raises its mmap threshold after the first large free, so later
ones come from the heap, which it rarely gives back: a worker serving searches at 1,000,000
properties stayed tens of MB above its live data. A fixed threshold keeps every allocation
of 256 KB or more in its own mapping, returned on free; `trim` hands back what the heap
freed after a big one-off job. Both are no-ops where glibc is not the allocator.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
from collections.abc import Iterator

M_MMAP_THRESHOLD = -3
"""mallopt's parameter number (malloc.h); setting it also turns the dynamic threshold off."""
THRESHOLD = 256 * 1024


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def map_large_allocations() -> None:
    """Once per process, at start-up."""
    libc = _libc()
    if libc is not None:
        with contextlib.suppress(AttributeError):
            libc.mallopt(M_MMAP_THRESHOLD, THRESHOLD)


def trim() -> None:
    """Return the heap's free memory to the system (after the search index is built)."""
    libc = _libc()
    if libc is not None:
        with contextlib.suppress(AttributeError):
            libc.malloc_trim(0)


@contextlib.contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Pause the cyclic garbage collector, restoring its state after.

    A rebuild allocates millions of short-lived rows and keeps millions of values; the
    collector would walk them again and again (a third of the market rebuild's time at a
    million properties). Nothing such a pass creates forms a cycle, so reference counting
    frees it all.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def freeze_startup_objects() -> None:
    """Move every object alive now out of the cyclic collector's sight, once per process,
    at the end of start-up.

    A worker's modules, routes, schemas and tables are hundreds of thousands of objects that
    live as long as it does; a full collection walked them all, pausing every answer under
    way for 40-90 ms. What start-up made is never garbage in a cycle, so nothing is lost.
    """
    gc.collect()
    gc.freeze()

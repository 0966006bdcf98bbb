"""Keep-alive connections spread evenly over the workers of `propdata serve --workers N`.

The workers share one listening socket and race to accept each connection; a keep-alive
connection then stays with the worker that won it. When a client opens its connections at
once, one worker often wins most of them: wrk's 16 connections went 16/0 to one of two
workers in 4 runs of 12, which then answered half as many searches with p50 doubled
(docs/measurements.md, "Connections spread over the workers"). A proxy's pool of upstream
connections is such a client. So each worker counts its open connections in a small file
shared by the host's workers (`WorkerSlots`, one slot per worker); a worker holding more than
one connection more than the least busy live worker answers the next request on one of its
connections with `Connection: close` (as HTTP/1.1 lets a server do, and as clients handle by
reconnecting). The reconnection goes to whichever worker accepts first, most often an idle
one, so the spread evens out after a few answers; a worker with its fair share never closes
anything.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import mmap
import os
import struct
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from propdata.kit.processes import alive

log = logging.getLogger("propdata")

SLOTS_ENV = "PROPDATA_WORKER_SLOTS"
"""The path of the host's `WorkerSlots` file, set by `propdata serve` for its workers."""
_SLOT = struct.Struct("=qq")
"""A slot: the worker's pid (0: free) and its open connections."""
SHED_EVERY = 0.02
"""Seconds between two connections a worker sends back. A reconnection goes to whichever
worker accepts first; were the others stalled, it would come back to this one, which would
send it back again: this bounds that to 50 reconnections a second, and evening out 16/0
still takes under 0.2 s."""


class WorkerSlots:
    """Each worker's open connections, in a file every worker of one `propdata serve` maps.

    A worker writes only its own slot, so no lock is taken but to claim one: the first slot
    that is free, or whose worker has died (uvicorn starts a new worker in its place)."""

    def __init__(self, path: Path) -> None:
        fd = os.open(path, os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            self._map = mmap.mmap(fd, size)
            self._slots = size // _SLOT.size
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                self.mine = self._claim()
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
        self._values = memoryview(self._map).cast("q")
        self._count = self.mine * 2 + 1
        self._shed_at = -SHED_EVERY

    @staticmethod
    def create(path: Path, slots: int) -> None:
        """The file of `slots` slots, every one free (`propdata serve` makes it); a worker
        that finds none free goes without evening out (`worker_slots`)."""
        with path.open("wb") as f:
            f.write(bytes(_SLOT.size * slots))

    def _claim(self) -> int:
        me = os.getpid()
        for slot in range(self._slots):
            pid, _ = _SLOT.unpack_from(self._map, slot * _SLOT.size)
            if pid in (0, me) or not alive(pid):
                _SLOT.pack_into(self._map, slot * _SLOT.size, me, 0)
                return slot
        raise RuntimeError("no free worker slot")  # more workers than `propdata serve` made

    def opened(self, change: int) -> None:
        """One connection more (1) or less (-1) on this worker."""
        self._values[self._count] += change

    def crowded(self) -> bool:
        """True when this worker holds more than one connection more than a live worker, and
        has not sent one back in the last `SHED_EVERY` seconds (then it sends this one)."""
        values, mine = self._values, self._values[self._count]
        for slot in range(self._slots):
            pid, count = values[slot * 2], values[slot * 2 + 1]
            if slot != self.mine and pid and count + 1 < mine and alive(pid):
                now = time.monotonic()
                if now - self._shed_at < SHED_EVERY:
                    return False
                self._shed_at = now
                return True
        return False


@contextlib.contextmanager
def shared_slots(workers: int) -> Iterator[None]:
    """While `propdata serve` runs: the workers' file (twice their number of slots, room
    for workers added later with uvicorn's SIGTTIN), named in the environment its workers
    inherit. One worker needs none; a host without a writable temporary folder serves
    without evening out (logged) rather than not at all."""
    if workers < 2:
        yield
        return
    try:
        folder = tempfile.TemporaryDirectory(prefix="propdata-")
        path = Path(folder.name) / "workers"
        WorkerSlots.create(path, 2 * workers)
    except OSError as exc:
        log.warning("no file for the workers' connection counts (%s): connections are not"
                    " evened out over the workers", exc)  # fmt: skip
        yield
        return
    os.environ[SLOTS_ENV] = str(path)
    try:
        yield
    finally:
        os.environ.pop(SLOTS_ENV, None)
        folder.cleanup()


_slots: list[WorkerSlots | None] = []
"""This process's `WorkerSlots` once its first connection opened it (None: a lone worker)."""


def worker_slots() -> WorkerSlots | None:
    if not _slots:
        path = os.environ.get(SLOTS_ENV)
        found = None
        if path:
            with contextlib.suppress(OSError, ValueError, RuntimeError):
                found = WorkerSlots(Path(path))
        _slots.append(found)
    return _slots[0]


class SpreadingProtocol(HttpToolsProtocol):
    """HttpToolsProtocol that counts its worker's connections and, while the worker holds
    more than its share, answers the next request with `Connection: close`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._spread = worker_slots()

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        if self._spread is not None:
            self._spread.opened(1)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self._spread is not None:
            self._spread.opened(-1)
            self._spread = None  # counted once, whatever calls follow

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        spread = self._spread
        if spread is None or self.transport.is_closing() or self.pipeline:
            return  # refused before the application, or queued behind another request
        if spread.crowded():
            self.cycle.keep_alive = False  # answered, then closed: the client reconnects

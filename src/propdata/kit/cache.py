"""Response cache: answers kept for a time under a key; the embedded one lives in the process.

The scale-out one (kit.redis_cache) is shared by every process and host, and falls back to
a per-process MemoryCache while Redis is unreachable.

Keys carry the data version, so a load or rebuild (which bumps it) makes every older entry
unreachable at once, in every process, without a broadcast.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Cached:
    status: int
    content_type: bytes
    body: bytes


class ResponseCache(Protocol):
    async def get(self, key: str) -> Cached | None: ...

    async def set(self, key: str, value: Cached, ttl: float) -> None: ...

    def status(self) -> str:
        """ "ok", or "degraded" while answering from a fallback."""
        ...

    async def close(self) -> None: ...


MAX_ENTRY = 4 * 1024 * 1024
"""The largest answer kept (and at most a quarter of a worker's budget)."""

ENTRY_OVERHEAD = 240
"""Bytes an entry costs beyond its key, body and content type: the dict slot, the tuple,
the Cached object and the str and bytes headers (tracemalloc: 341 bytes for an entry with a
65-character key and a 100-byte body, so about 176 + the content type's 49)."""


class MemoryCache:
    """A bounded cache in this process: what every entry costs, keys included, stays under
    `max_bytes`; entries leave when they expire, looked up or not, or oldest first when the
    budget is spent.

    Entries are kept in the order they were stored. The service stores every entry with the
    same lifetime (PROPDATA_CACHE_TTL), so that is also the order they expire in, and each
    `set` drops the expired ones from the front: about one a call, however the cache is used.
    """

    def __init__(self, max_bytes: int = 64 * 1024 * 1024, clock: object = time.monotonic) -> None:
        self._items: OrderedDict[str, tuple[float, Cached, int]] = OrderedDict()
        self._bytes = 0
        self.max_bytes = max_bytes
        self._clock = clock

    def _now(self) -> float:
        return self._clock()  # type: ignore[operator, no-any-return]

    @property
    def size(self) -> int:
        """Bytes the entries cost now (see ENTRY_OVERHEAD)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    async def get(self, key: str) -> Cached | None:
        item = self._items.get(key)
        if item is None:
            return None
        expires, value, _ = item
        if expires <= self._now():
            self._drop(key)
            return None
        return value

    async def set(self, key: str, value: Cached, ttl: float) -> None:
        now = self._now()
        self._expire(now)
        cost = len(key) + len(value.body) + len(value.content_type) + ENTRY_OVERHEAD
        if ttl <= 0 or cost > min(MAX_ENTRY, self.max_bytes // 4):
            return
        if key in self._items:
            self._drop(key)
        self._items[key] = (now + ttl, value, cost)
        self._bytes += cost
        while self._bytes > self.max_bytes and self._items:
            self._drop(next(iter(self._items)))

    def _expire(self, now: float) -> None:
        """Drop expired entries from the front (the oldest stored)."""
        items = self._items
        while items:
            key, (expires, _, _) = next(iter(items.items()))
            if expires > now:
                return
            self._drop(key)

    def _drop(self, key: str) -> None:
        _, _, cost = self._items.pop(key)
        self._bytes -= cost

    def status(self) -> str:
        """ "ok"; a backend that can fall back (the Resilient ones) says "degraded" then."""
        return "ok"

    async def close(self) -> None:
        self._items.clear()
        self._bytes = 0

"""Response cache: answers kept for a time under a key; the embedded one lives in the process.

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

    async def close(self) -> None: ...


class MemoryCache:
    """A bounded LRU with per-entry expiry; `max_bytes` caps the bodies it holds."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024, clock: object = time.monotonic) -> None:
        self._items: OrderedDict[str, tuple[float, Cached]] = OrderedDict()
        self._bytes = 0
        self.max_bytes = max_bytes
        self._clock = clock

    def _now(self) -> float:
        return self._clock()  # type: ignore[operator, no-any-return]

    async def get(self, key: str) -> Cached | None:
        item = self._items.get(key)
        if item is None:
            return None
        expires, value = item
        if expires <= self._now():
            self._drop(key)
            return None
        self._items.move_to_end(key)
        return value

    async def set(self, key: str, value: Cached, ttl: float) -> None:
        if ttl <= 0 or len(value.body) > self.max_bytes // 16:
            return
        if key in self._items:
            self._drop(key)
        self._items[key] = (self._now() + ttl, value)
        self._bytes += len(value.body)
        while self._bytes > self.max_bytes and self._items:
            self._drop(next(iter(self._items)))

    def _drop(self, key: str) -> None:
        _, value = self._items.pop(key)
        self._bytes -= len(value.body)

    async def close(self) -> None:
        self._items.clear()
        self._bytes = 0

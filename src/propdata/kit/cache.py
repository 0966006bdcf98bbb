"""Response cache: answers kept for a time under a key; the embedded one lives in the process.

The scale-out one (RedisCache, behind ResilientCache) is shared by every process and host,
and falls back to a per-process MemoryCache while Redis is unreachable.

Keys carry the data version, so a load or rebuild (which bumps it) makes every older entry
unreachable at once, in every process, without a broadcast.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol, cast

from propdata.kit.redis_link import Client, Outage, connect


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


class RedisCache:
    """The scale-out cache: one Redis string per entry, shared by every process and host.

    An entry is `<status>\\n<content type>\\n<body>` under `pd:cache:` + SHA-256 of the cache
    key (keys hold a path and query of any length; the hash keeps Redis keys short), stored
    with SET PX, so Redis drops it when it expires.

        cache = RedisCache(connect("redis://127.0.0.1:6379/0"))
    """

    def __init__(self, client: Client, prefix: str = "pd:cache:") -> None:
        self.client = client
        self.prefix = prefix

    @classmethod
    def from_url(cls, url: str) -> RedisCache:
        return cls(connect(url))

    def redis_key(self, key: str) -> str:
        return self.prefix + hashlib.sha256(key.encode()).hexdigest()

    async def get(self, key: str) -> Cached | None:
        # The client is built without decode_responses: values come back as bytes.
        raw = cast("bytes | None", await self.client.get(self.redis_key(key)))
        if raw is None:
            return None
        status, content_type, body = raw.split(b"\n", 2)
        return Cached(int(status), content_type, body)

    async def set(self, key: str, value: Cached, ttl: float) -> None:
        ms = int(ttl * 1000)
        if ms <= 0:
            return
        raw = b"%d\n%s\n%s" % (value.status, value.content_type, value.body)
        await self.client.set(self.redis_key(key), raw, px=ms)

    def status(self) -> str:
        """ "ok"; a backend that can fall back (the Resilient ones) says "degraded" then."""
        return "ok"

    async def close(self) -> None:
        await self.client.aclose()


class ResilientCache:
    """Redis while it answers; a per-process MemoryCache while it does not (see kit.redis_link)."""

    def __init__(self, redis: RedisCache, fallback: MemoryCache | None = None) -> None:
        self.redis = redis
        self.fallback = fallback or MemoryCache()
        self.outage = Outage("cache")

    def status(self) -> str:
        return "degraded" if self.outage.down else "ok"

    async def get(self, key: str) -> Cached | None:
        return await self.outage.call(lambda: self.redis.get(key), lambda: self.fallback.get(key))

    async def set(self, key: str, value: Cached, ttl: float) -> None:
        await self.outage.call(
            lambda: self.redis.set(key, value, ttl), lambda: self.fallback.set(key, value, ttl)
        )

    async def close(self) -> None:
        await self.redis.close()
        await self.fallback.close()

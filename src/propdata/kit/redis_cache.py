"""The scale-out response cache: RedisCache, shared by every process and host, behind
ResilientCache, which falls back to a per-process MemoryCache while Redis is unreachable.

A module apart from kit.cache so that an embedded process never loads Redis's client.
"""

from __future__ import annotations

import hashlib
from typing import cast

from propdata.kit.cache import Cached, MemoryCache
from propdata.kit.redis_link import Client, Outage, connect


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

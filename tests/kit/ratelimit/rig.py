"""What the limiter suites share: one limiter of each kind on one fake clock, and clean-up.

The `rig` fixture (tests/kit/ratelimit/conftest.py) runs a test against every kind: SQLite
(a real file), Redis (the real server at 127.0.0.1:6379) and the fallback (a
ResilientLimiter whose Redis is away, answering from its in-memory SQLiteLimiter).
"""

from __future__ import annotations

import math
import sqlite3
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from propdata.kit.ratelimit.base import Limiter
from propdata.kit.ratelimit.redis import RedisLimiter
from propdata.kit.ratelimit.resilient import ResilientLimiter
from propdata.kit.ratelimit.sqlite import SQLiteLimiter
from propdata.kit.redis_link import connect
from tests.conftest import FakeClock
from tests.redis_support import REDIS_URL, require_redis

KINDS = ["sqlite", "redis", "fallback"]
NOWHERE = "redis://127.0.0.1:1/0"
"""A Redis no one listens on: the fallback kind never reaches it."""


@dataclass
class Rig:
    limiter: Limiter
    clock: FakeClock
    key: str
    kind: str = "sqlite"
    folder: Path | None = None

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of a query on the SQLite store behind the sqlite and fallback kinds."""
        if isinstance(self.limiter, ResilientLimiter):
            return list(self.limiter.fallback._conn.execute(query, params))
        assert self.kind == "sqlite" and self.folder is not None
        with sqlite3.connect(self.folder / "usage.db") as conn:
            return list(conn.execute(query, params))


def new_key() -> str:
    return "key_test" + uuid.uuid4().hex[:12]


def forget(key: str) -> None:
    """Delete an API key's Redis keys."""
    with redis.Redis.from_url(REDIS_URL) as client:
        client.delete(*RedisLimiter.keys_of(key))


def forget_names(*names: str) -> None:
    """Delete the Redis keys of attempt guards."""
    with redis.Redis.from_url(REDIS_URL) as client:
        client.delete(*(RedisLimiter.attempt_key_of(name) for name in names))


def fallback(clock: FakeClock) -> ResilientLimiter:
    """A ResilientLimiter in an outage that never ends: every answer is its fallback's."""
    limiter = ResilientLimiter(RedisLimiter(connect(NOWHERE), clock))
    limiter.outage.retry_every = math.inf
    limiter.outage.failed(ConnectionError("the test's Redis is away"))
    return limiter


async def make_limiter(kind: str, clock: FakeClock, folder: Path) -> Limiter:
    if kind == "sqlite":
        return SQLiteLimiter(str(folder / "usage.db"), clock=clock)
    if kind == "redis":
        require_redis()
        return RedisLimiter(connect(REDIS_URL), clock=clock)
    return fallback(clock)

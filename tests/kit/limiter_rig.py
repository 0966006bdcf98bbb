"""What the limiter suites share: one limiter of each kind on one fake clock, and clean-up.

The `rig` fixture (tests/kit/conftest.py) runs a test against SQLite (a real file), Redis
(the real server at 127.0.0.1:6379) and memory alike.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import redis

from propdata.kit.limiter import Limiter, SQLiteLimiter
from propdata.kit.redis_limiter import MemoryLimiter, RedisLimiter
from propdata.kit.redis_link import connect
from tests.conftest import FakeClock
from tests.redis_support import REDIS_URL, require_redis

KINDS = ["sqlite", "redis", "memory"]


@dataclass
class Rig:
    limiter: Limiter
    clock: FakeClock
    key: str
    kind: str = "sqlite"
    folder: Path | None = None


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


async def make_limiter(kind: str, clock: FakeClock, folder: Path) -> Limiter:
    if kind == "sqlite":
        return SQLiteLimiter(str(folder / "usage.db"), clock=clock)
    if kind == "redis":
        require_redis()
        return RedisLimiter(connect(REDIS_URL), clock=clock)
    return MemoryLimiter(clock)

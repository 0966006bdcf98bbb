"""Real Redis for tests: the shared server at 127.0.0.1:6379, and private servers to kill.

A Redis that cannot be reached (or a missing redis-server) fails the test when CI is set and
skips it otherwise, so CI can never pass by skipping the scale-out tests.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import redis

from propdata.accounts.service import CustomLimits, keys_of
from propdata.config import Settings

REDIS_URL = "redis://127.0.0.1:6379/0"


def unavailable(message: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def require_redis(url: str = REDIS_URL) -> None:
    """Fail (CI) or skip unless the Redis at `url` answers."""
    try:
        with redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1) as client:
            client.ping()
    except redis.RedisError as exc:
        unavailable(f"Redis at {url} is unreachable ({exc}); these tests need it")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """A private redis-server on its own port, without persistence, that a test may kill."""

    def __init__(
        self, port: int | None = None, extra: tuple[str, ...] = (), cwd: Path | None = None
    ) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            unavailable("redis-server is not installed; the Redis fault tests need it")
        self.binary = str(binary)
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.extra = extra
        self.cwd = cwd
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "no", *self.extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=self.cwd,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while True:
            try:
                with self.client() as client:
                    client.ping()
                return self
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise
                time.sleep(0.05)

    def kill(self) -> None:
        """Stop it the hard way, as a crash or a lost host would."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.process = None

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_connect_timeout=1, socket_timeout=1)


async def sqlite_store(path: Path) -> Settings:
    """A SQLite store with the test catalogue; the Settings of an app over it (no Redis yet)."""
    from tests.conftest import build_store, new_store

    store = await new_store("embedded", path.parent)
    assert store.url == str(path)
    await build_store(store)
    return Settings(database_url=str(path), as_of=dt.date(2026, 11, 21))


async def new_key(path: Path, plan: str, **limits: int) -> tuple[str, str]:
    """Create a key in the store at `path`; return (key id, secret)."""
    async with keys_of(str(path)) as keys:
        key, secret = await keys.create(plan, None, CustomLimits(**limits))
    return key.id, secret

"""Real Redis for tests: the shared server at 127.0.0.1:6379, and private servers to kill.

A Redis that cannot be reached (or a missing redis-server) fails the test when CI is set and
skips it otherwise, so CI can never pass by skipping the scale-out tests.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import redis

from propdata.accounts.keys import CustomLimits, keys_of
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


_PORTS = range(20_000, 32_000)
"""Below Linux's ephemeral range (32768-60999), so no outgoing connection holds one."""
_PORT_FILE = Path(tempfile.gettempdir()) / "propdata-test-ports"


def free_port() -> int:
    """A port no other test process on this host is about to use.

    Asking the kernel for a free port (bind to 0) and closing it leaves a window in which a
    test in another xdist worker gets the same port: two servers then race for it, the loser
    exits, and its test talks to the winner, which vanishes when its own test ends. So every
    test process takes ports in turn from one counter in a locked file, and skips any port
    that is in use.
    """
    with open(_PORT_FILE, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        text = handle.read().strip()
        last = int(text) if text.isdigit() else _PORTS.start + os.getpid() % len(_PORTS)
        for step in range(1, len(_PORTS) + 1):
            port = _PORTS.start + (last - _PORTS.start + step) % len(_PORTS)
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    continue
            handle.seek(0)
            handle.truncate()
            handle.write(str(port))
            handle.flush()
            return port
    raise RuntimeError("no free port between 20000 and 32000")


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

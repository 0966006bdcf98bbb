"""The Redis plumbing the scale-out limiter and cache share: the client and the outage tracker.

The client fails fast (short socket timeouts) because every caller has a per-process answer
to fall back on; waiting seconds for Redis would stall every request. A timeout is never
retried: the limiter's script may have run, and a second run would record one request twice.
A broken connection is retried once, on a new one: after Redis restarts, every pooled
connection from before is dead and fails when it is next used (minutes later for some), and
treating each as an outage sent its process to the fallback, which admitted beyond the
limit (seen in the soak). At worst the retry records a request twice: the safe side.

`Outage` is a small circuit breaker: after a failure it sends callers to their fallback and
lets one caller at a time try Redis again at most once per `retry_every` seconds. It logs
once when an outage starts and once when it ends.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis import exceptions as rx
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

log = logging.getLogger("propdata")
T = TypeVar("T")
Client = aioredis.Redis | RedisCluster

SOCKET_TIMEOUT = 0.5
CONNECT_TIMEOUT = 0.25
RETRY_EVERY = 1.0

OUTAGE_ERRORS: tuple[type[BaseException], ...] = (
    rx.ConnectionError,  # refused, reset, loading, too many connections, auth
    rx.TimeoutError,
    rx.ReadOnlyError,  # a replica after a failover, before the client follows the new primary
    rx.OutOfMemoryError,
    rx.ClusterDownError,
    rx.TryAgainError,
    rx.InvalidResponse,  # something that is not Redis answers at that address
    rx.RedisClusterException,  # no cluster node reachable, a slot not covered
    OSError,
    asyncio.TimeoutError,
)
"""What counts as Redis being unreachable. A script error is a bug, not an outage: it is raised."""


def connect(url: str) -> Client:
    """A client for `url` that gives up within about half a second and never retries.

    `?cluster=true` on the URL (any one node of the cluster) gives a Redis Cluster client,
    which follows MOVED and ASK redirects itself.

        client = connect("redis://127.0.0.1:6379/0")
    """
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    cluster = any(k == "cluster" and v.lower() in ("1", "true", "yes") for k, v in query)
    options: dict[str, Any] = {
        "socket_timeout": SOCKET_TIMEOUT,
        "socket_connect_timeout": CONNECT_TIMEOUT,
        "retry": Retry(NoBackoff(), 1, supported_errors=(rx.ConnectionError,)),
    }
    if cluster:
        rest = urlencode([(k, v) for k, v in query if k != "cluster"])
        return RedisCluster.from_url(urlunsplit(parts._replace(query=rest)), **options)
    client: aioredis.Redis = aioredis.Redis.from_url(url, **options)
    return client


class Outage:
    """Tracks whether Redis answers; `what` names the fallback in the log lines."""

    def __init__(self, what: str, retry_every: float = RETRY_EVERY) -> None:
        self.what = what
        self.retry_every = retry_every
        self.down = False
        self._next_try = 0.0
        self._probing = False

    async def call(
        self, primary: Callable[[], Awaitable[T]], fallback: Callable[[], Awaitable[T]]
    ) -> T:
        """Answer from Redis (`primary`) when it can, else from the per-process `fallback`."""
        if not self.use_redis():
            return await fallback()
        try:
            result = await primary()
        except OUTAGE_ERRORS as exc:
            self.failed(exc)
            return await fallback()
        except BaseException:
            self._probing = False  # a cancelled probe must not block the next one
            raise
        self.succeeded()
        return result

    def use_redis(self) -> bool:
        """True when the caller should try Redis: it is up, or it is this caller's turn to probe."""
        if not self.down:
            return True
        if self._probing or time.monotonic() < self._next_try:
            return False
        self._probing = True
        return True

    def failed(self, exc: BaseException) -> None:
        if not self.down:
            log.warning("redis unreachable, using the per-process %s (%s)", self.what,
                        type(exc).__name__)  # fmt: skip
        self.down = True
        self._probing = False
        self._next_try = time.monotonic() + self.retry_every

    def succeeded(self) -> None:
        if self.down:
            log.warning("redis is back, the %s uses it again", self.what)
        self.down = False
        self._probing = False

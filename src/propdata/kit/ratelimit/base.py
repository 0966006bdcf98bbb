"""Exact sliding-log rate limits: a per-minute window and a rolling daily window per key.

A request is admitted only when both windows (now - 60 s, now] and (now - 24 h, now] have
room; the check and the record are one atomic step. An admitted request that ends 4xx/5xx
is refunded; a refused one is never recorded.

Beside them, each key has a third log, of failed requests: `fail` records one, and `admit`
or `usage` given a `failures` limit refuse every request of the key while (now - 60 s, now]
holds that many. It never touches the two metered windows.

Two more things every limiter keeps, for dashboards and guards built above `kit`:

- Hourly counts (`hourly`): each admitted request adds one to its key's count for the hour
  that holds it (bucket = unix seconds of the hour's start), in the same atomic step as the
  admission; a refund that takes an entry back subtracts it from the hour of that entry. A
  refund finds an entry only while it is inside the longest window the key keeps (the day
  with a daily quota, else the minute): a later refund changes nothing, on every backend.
  Buckets are kept `HOURLY_KEEP` seconds (32 days) before the current hour's, then dropped.
- Attempt guards (`attempt`): a sliding log per arbitrary name ("at most 5 in 15 minutes"),
  stored under the SHA-256 of the name, never the name itself.
- Leases (`hold`, `release`): at most `limit` holders under a name at once ("20 open event
  streams of an account"), each holding its slot until it lets go or its lease runs out
  (a process that dies leaks no slot for longer than the lease), renewed by holding again.

This module holds the interface (`Limiter`) and the arithmetic every backend shares; the
backends are `sqlite.SQLiteLimiter` (embedded, and the in-memory fallback),
`redis.RedisLimiter` (scale-out) and `resilient.ResilientLimiter` (Redis with the fallback).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

MINUTE = 60.0
DAY = 86_400.0
HOUR = 3600
HOUR_US = 3_600_000_000
HOURLY_KEEP = 32 * 24 * HOUR
"""Seconds of hour buckets kept before the current hour's: `hourly` answers any `since` in
the last 32 days in full; older buckets are dropped (and never reported)."""
Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class Window:
    limit: int
    used: int
    reset: int
    """Unix seconds at which the oldest request in the window expires (now when empty)."""

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    """False when `admit` refused the request, or when `usage` finds the failed-request
    guard closed (which refuses every request of the key, cached answers too)."""
    minute: Window
    day: Window | None
    """None: no daily quota."""
    retry_after: int | None = None
    exceeded: str | None = None
    """'minute', 'day' or 'failures' on a refusal: the window that needs the longest wait."""
    stamp: tuple[int, int] | None = None
    """The recorded entry (microseconds, same-microsecond sequence), to refund it."""
    failures: Window | None = None
    """The failed requests of the last 60 s, when a `failures` limit was given."""


@dataclass(frozen=True, slots=True)
class Attempts:
    """What `Limiter.attempt` found: `used` attempts of `limit` in the window (counting the
    one just recorded); `retry_after` seconds (at least 1) until one more fits, when refused."""

    allowed: bool
    used: int
    limit: int
    retry_after: int | None = None


def hour_of(seconds: float) -> int:
    """The hour bucket (unix seconds of the hour's start) that holds `seconds`."""
    return int(seconds // HOUR) * HOUR


def hour_of_us(at_us: int) -> int:
    """The hour bucket of a time in unix microseconds (exact: integer arithmetic)."""
    return at_us // HOUR_US * HOUR


def hourly_range(since: float, now_us: int) -> tuple[int, int]:
    """The buckets `hourly` reports: from the one holding `since` (no older than the
    retention) to the current one, both included."""
    now_hour = hour_of_us(now_us)
    return max(hour_of(since), now_hour - HOURLY_KEEP), now_hour


def attempt_digest(name: str) -> str:
    """The stored form of an attempt guard's name: SHA-256, hex. Names may hold personal
    data; only this digest is ever written."""
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()


def lease_us(limit: int, ttl: float) -> int:
    """A lease's length in microseconds, after checking the arguments of `hold`."""
    if limit < 1 or not ttl > 0:
        raise ValueError(f"hold: limit must be >= 1 and ttl > 0 (got {limit}, {ttl})")
    return round(ttl * 1_000_000)


def attempt_window_us(limit: int, window: float) -> int:
    """The window in microseconds, after checking the arguments of `attempt`."""
    if limit < 1 or not window > 0:
        raise ValueError(f"attempt: limit must be >= 1 and window > 0 (got {limit}, {window})")
    return round(window * 1_000_000)


def retry_after_us(oldest_us: int, window_us: int, now_us: int) -> int:
    """Whole seconds until an entry at `oldest_us` leaves a window of `window_us`, at least 1."""
    wait_us = oldest_us + window_us - now_us
    return max(1, -(-wait_us // 1_000_000))


class Limiter(Protocol):
    async def admit(
        self, key_id: str, per_minute: int, daily: int | None, failures: int | None = None
    ) -> Decision:
        """Check both windows (and the failed-request guard when `failures` is given) and
        record the request when they all have room: one atomic step."""
        ...

    async def refund(
        self, key_id: str, stamp: tuple[int, int], per_minute: int, daily: int | None
    ) -> Decision: ...

    async def usage(
        self, key_id: str, per_minute: int, daily: int | None, failures: int | None = None
    ) -> Decision:
        """Describe the windows without recording anything."""
        ...

    async def fail(self, key_id: str) -> None:
        """Record a failed request (a 4xx answer) in the key's failed-request log."""
        ...

    async def hourly(self, key_id: str, since: float) -> dict[int, int]:
        """Admitted (and not refunded) requests of the key per hour bucket, from the bucket
        holding `since` (unix seconds; at most `HOURLY_KEEP` back) to the current one. Keys
        are unix seconds of each hour's start; hours with no request are absent (never 0),
        so callers fill the gaps. One read."""
        ...

    async def attempt(self, name: str, limit: int, window: float, record: bool = True) -> Attempts:
        """A guard of at most `limit` attempts per `window` seconds under `name`, a sliding log
        like the minute window's: (now - window, now].

        `record=True` checks and records one attempt in one atomic step (recorded only when
        allowed, i.e. fewer than `limit` were in the window); `record=False` only tells whether
        one more would be allowed, writing nothing. `name` is any string (it may hold an
        e-mail or IP address): only its SHA-256 is stored. Use one `window` per name (put the
        purpose in the name): entries are dropped once past the window they were recorded
        with."""
        ...

    async def hold(self, name: str, holder: str, limit: int, ttl: float) -> bool:
        """Take, or renew, `holder`'s lease on one of `limit` slots under `name` for `ttl`
        seconds from now: True when it holds one (it had one, or one was free: a lease that
        ran out frees its slot), False when all `limit` are another's. One atomic step;
        only the name's SHA-256 is stored."""
        ...

    async def release(self, name: str, holder: str) -> None:
        """Give back `holder`'s slot under `name` (nothing when it holds none)."""
        ...

    async def forget(self, name: str) -> None:
        """Take back the newest attempt recorded under `name` (a reservation that turned out
        not to count, such as a log-in that succeeded): reserve first with `attempt`, then
        forget, and concurrent attempts can never slip past the limit."""
        ...

    def status(self) -> str:
        """ "ok", or "degraded" while answering from a fallback."""
        ...

    async def close(self) -> None: ...


def sum_hours(pairs: Iterable[tuple[int, int]]) -> dict[int, int]:
    """(hour, count) pairs summed per hour, in hour order, the hours above zero only."""
    hours: dict[int, int] = {}
    for hour, n in sorted(pairs):
        hours[hour] = hours.get(hour, 0) + n
    return {hour: n for hour, n in hours.items() if n > 0}


def reset_at(oldest_us: int | None, span: float, now: float) -> int:
    """Unix seconds at which a window's oldest entry leaves it (now when it has none)."""
    if oldest_us is None:
        return math.ceil(now)
    return math.ceil(oldest_us / 1e6 + span)

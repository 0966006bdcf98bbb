"""The scale-out limiter as the app uses it: Redis while it answers, an in-memory fallback
while it does not."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable

from propdata.kit.ratelimit.base import Attempts, Decision
from propdata.kit.ratelimit.redis import RedisLimiter
from propdata.kit.ratelimit.sqlite import SQLiteLimiter
from propdata.kit.redis_link import Outage


def _marked(decision: Decision) -> Decision:
    """The fallback's stamp with a negative sequence number (Redis's counter starts at 1), so
    a refund can be sent to the limiter that recorded the entry."""
    if decision.stamp is None:
        return decision
    at, dup = decision.stamp
    return dataclasses.replace(decision, stamp=(at, -1 - dup))


class ResilientLimiter:
    """Redis while it answers; a per-process SQLiteLimiter in memory while it does not.

    While Redis is unreachable each process counts on its own (so N processes admit up to N
    times a key's limit), `status()` says "degraded", one warning is logged per outage, and
    Redis is tried again at most once a second. A refund goes to the limiter that recorded
    the entry; one Redis recorded but cannot take back now stays counted (the safe side).

    Hourly counts, attempt guards and leases follow the same rule (a lease taken by the
    fallback is taken again from Redis at its next renewal, room permitting). During an outage `hourly` answers
    from this process's fallback: only the requests this process admitted while Redis was
    away, not Redis's counts. Requests admitted by a fallback are never added to Redis's
    hours, so once Redis is back its counts for the outage's hours miss them (an
    undercount, per process, of what the fallbacks admitted). An attempt guard counts per
    process during an outage (N processes allow up to N times its limit), and the attempts
    recorded then are forgotten when Redis answers again. The fallback holds what the
    embedded limiter holds for each key it saw during the outage (its last day's log, 32
    days of hour buckets) until the process ends.
    """

    def __init__(self, redis: RedisLimiter, fallback: SQLiteLimiter | None = None) -> None:
        self.redis = redis
        self.fallback = fallback or SQLiteLimiter(":memory:", redis.clock or time.time)
        self.outage = Outage("limiter")

    def status(self) -> str:
        return "degraded" if self.outage.down else "ok"

    async def _call(
        self,
        redis: Callable[[], Awaitable[Decision]],
        fallback: Callable[[], Awaitable[Decision]],
    ) -> Decision:
        return await self.outage.call(redis, fallback)

    async def admit(
        self, key_id: str, per_minute: int, daily: int | None, failures: int | None = None
    ) -> Decision:
        return await self._call(
            lambda: self.redis.admit(key_id, per_minute, daily, failures),
            lambda: self._fallback_admit(key_id, per_minute, daily, failures),
        )

    async def _fallback_admit(
        self, key_id: str, per_minute: int, daily: int | None, failures: int | None
    ) -> Decision:
        return _marked(await self.fallback.admit(key_id, per_minute, daily, failures))

    async def usage(
        self, key_id: str, per_minute: int, daily: int | None, failures: int | None = None
    ) -> Decision:
        return await self._call(
            lambda: self.redis.usage(key_id, per_minute, daily, failures),
            lambda: self.fallback.usage(key_id, per_minute, daily, failures),
        )

    async def fail(self, key_id: str) -> None:
        await self.outage.call(lambda: self.redis.fail(key_id), lambda: self.fallback.fail(key_id))

    async def refund(
        self, key_id: str, stamp: tuple[int, int], per_minute: int, daily: int | None
    ) -> Decision:
        if stamp[1] < 0:  # recorded by the fallback
            return await self.fallback.refund(key_id, (stamp[0], -1 - stamp[1]), per_minute, daily)
        return await self._call(
            lambda: self.redis.refund(key_id, stamp, per_minute, daily),
            lambda: self.fallback.usage(key_id, per_minute, daily),
        )

    async def hourly(self, key_id: str, since: float) -> dict[int, int]:
        return await self.outage.call(
            lambda: self.redis.hourly(key_id, since), lambda: self.fallback.hourly(key_id, since)
        )

    async def attempt(self, name: str, limit: int, window: float, record: bool = True) -> Attempts:
        return await self.outage.call(
            lambda: self.redis.attempt(name, limit, window, record),
            lambda: self.fallback.attempt(name, limit, window, record),
        )

    async def hold(self, name: str, holder: str, limit: int, ttl: float) -> bool:
        return await self.outage.call(
            lambda: self.redis.hold(name, holder, limit, ttl),
            lambda: self.fallback.hold(name, holder, limit, ttl),
        )

    async def release(self, name: str, holder: str) -> None:
        await self.outage.call(
            lambda: self.redis.release(name, holder),
            lambda: self.fallback.release(name, holder),
        )

    async def forget(self, name: str) -> None:
        await self.outage.call(lambda: self.redis.forget(name), lambda: self.fallback.forget(name))

    async def close(self) -> None:
        await self.redis.close()
        await self.fallback.close()

"""The scale-out limiter: the same exact sliding logs as SQLiteLimiter, kept in Redis.

One sorted set per API key holds its log: score = the request's time in microseconds,
member = "<µs>-<n>" with n from a per-key counter, so every entry is unique and a refund
removes exactly the one it recorded. Both windows come from that one set: the day is all of
it (older entries are trimmed), the minute is a ZCOUNT of its tail. A key without a daily
quota keeps only its last minute.

Every decision is one Lua script (`lua/admit.lua`: trim, count, decide, record, and compute
Reset and Retry-After), so it is atomic across every process and host that shares the Redis, and it
takes the time from Redis's TIME: the hosts' clocks never matter. The keys of an API key
share a hash tag (`pd:{key_id}:log`, `pd:{key_id}:seq`, `pd:{key_id}:fail`,
`pd:{key_id}:hours`), so they live in one Redis Cluster slot. The limits come in with every
call, read from the database on every request, so a plan change holds on the key's next
request.

Hourly counts: one hash per API key (`pd:{key_id}:hours`), field = the hour bucket, value =
its count, changed by the admitting (or refunding) script itself. When an admission creates
a bucket, the buckets past the retention are deleted and the hash's expiry is set to the
retention plus an hour, so an idle key's hash goes on its own.

Leases (`lua/hold.lua`): one sorted set per name, `pd:lease:{<sha256 of the name>}`, member
= the holder, score = when its lease runs out (µs); leases that ran out are dropped before
each decision, and the set expires with its last lease.

Attempt guards: one sorted set per name, `pd:att:{<sha256 of the name>}` (member
"<µs>-<n>", n = how many entries already had that microsecond), trimmed to the window on
every recording and expiring one window (plus a second) after the last one.

`resilient.ResilientLimiter` answers from it and falls back to an in-memory SQLiteLimiter
while Redis is unreachable.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from propdata.kit.ratelimit.base import (
    HOUR_US,
    HOURLY_KEEP,
    Attempts,
    Clock,
    Decision,
    Window,
    attempt_digest,
    attempt_window_us,
    hourly_range,
    lease_us,
    retry_after_us,
    sum_hours,
)
from propdata.kit.redis_link import Client, connect

SCRIPT_HEAD = "clock.lua"
"""The functions every script of `lua/` uses (the time, microsecond strings); put before each."""


def read_script(name: str) -> str:
    """A script of `lua/` (package data) after its head, with kit.ratelimit.base's constants put in."""
    lua = resources.files("propdata.kit.ratelimit").joinpath("lua")
    text = lua.joinpath(SCRIPT_HEAD).read_text() + lua.joinpath(name).read_text()
    return text.replace("@HOUR_US@", str(HOUR_US)).replace("@HOURLY_KEEP@", str(HOURLY_KEEP))


_EXCEEDED = {1: "minute", 2: "day", 3: "failures"}


class RedisLimiter:
    """The Redis limiter; decisions identical to SQLiteLimiter's.

    Production passes no clock: the script reads the time from Redis (TIME), so every host
    of the service sees one clock. `clock` (unix seconds) exists for tests only: when given,
    its value replaces TIME inside the script, as SQLiteLimiter's clock does.

        limiter = RedisLimiter(connect("redis://127.0.0.1:6379/0"))
        decision = await limiter.admit("key_1a2b3c", per_minute=10, daily=100)
    """

    def __init__(self, client: Client, clock: Clock | None = None, prefix: str = "pd") -> None:
        self.client = client
        self.clock = clock
        self.prefix = prefix
        self._script = client.register_script(read_script("admit.lua"))
        self._hourly_script = client.register_script(read_script("hourly.lua"))
        self._attempt_script = client.register_script(read_script("attempt.lua"))
        self._hold_script = client.register_script(read_script("hold.lua"))

    @classmethod
    def from_url(cls, url: str, clock: Clock | None = None) -> RedisLimiter:
        return cls(connect(url), clock)

    @staticmethod
    def keys_of(key_id: str, prefix: str = "pd") -> tuple[str, str, str, str]:
        """The log, counter, failures and hourly-counts keys of an API key; the hash tag keeps
        them in one slot."""
        return (f"{prefix}:{{{key_id}}}:log", f"{prefix}:{{{key_id}}}:seq",
                f"{prefix}:{{{key_id}}}:fail", f"{prefix}:{{{key_id}}}:hours")  # fmt: skip

    def keys(self, key_id: str) -> tuple[str, str, str, str]:
        return self.keys_of(key_id, self.prefix)

    @staticmethod
    def attempt_key_of(name: str, prefix: str = "pd") -> str:
        """The sorted set of an attempt guard: the name's digest, as its own hash tag."""
        return f"{prefix}:att:{{{attempt_digest(name)}}}"

    def _now(self) -> str:
        """The time to pass the scripts: none in production (they read TIME)."""
        return "" if self.clock is None else str(int(self.clock() * 1_000_000))

    async def _run(
        self,
        mode: str,
        key_id: str,
        per_minute: int,
        daily: int | None,
        member: str = "",
        failures: int | None = None,
    ) -> Decision:
        now = self._now()
        args: list[str | int] = [mode, per_minute, "" if daily is None else daily, member, now,
                                 "" if failures is None else failures]  # fmt: skip
        reply: list[Any] = await self._script(keys=self.keys(key_id), args=args)
        ok, minute_used, minute_reset, day_used, day_reset, retry, exceeded, at, n = (
            int(v) for v in reply[:9]
        )
        failed, fail_reset = int(reply[9]), int(reply[10])
        minute = Window(per_minute, minute_used, minute_reset)
        day = Window(daily, day_used, day_reset) if daily is not None else None
        guard = Window(failures, failed, fail_reset) if failures is not None else None
        if ok:
            stamp = (at, n) if mode == "admit" else None
            return Decision(True, minute, day, stamp=stamp, failures=guard)
        return Decision(False, minute, day, retry_after=retry, exceeded=_EXCEEDED[exceeded],
                        failures=guard)  # fmt: skip

    async def admit(
        self, key_id: str, per_minute: int, daily: int | None, failures: int | None = None
    ) -> Decision:
        return await self._run("admit", key_id, per_minute, daily, failures=failures)

    async def usage(
        self, key_id: str, per_minute: int, daily: int | None, failures: int | None = None
    ) -> Decision:
        return await self._run("usage", key_id, per_minute, daily, failures=failures)

    async def fail(self, key_id: str) -> None:
        await self._script(keys=self.keys(key_id), args=["fail", 0, "", "", self._now(), ""])

    async def refund(
        self, key_id: str, stamp: tuple[int, int], per_minute: int, daily: int | None
    ) -> Decision:
        member = f"{stamp[0]}-{stamp[1]}"
        return await self._run("refund", key_id, per_minute, daily, member)

    async def hourly(self, key_id: str, since: float) -> dict[int, int]:
        """One script: the hash and the time it was read at (Redis's TIME, as the buckets)."""
        reply: list[Any] = await self._hourly_script(
            keys=[self.keys(key_id)[3]], args=[self._now()]
        )
        first, last = hourly_range(since, int(reply[0]))
        fields = reply[1].split()
        pairs = ((int(fields[i]), int(fields[i + 1])) for i in range(0, len(fields), 2))
        return sum_hours((hour, n) for hour, n in pairs if first <= hour <= last)

    async def attempt(self, name: str, limit: int, window: float, record: bool = True) -> Attempts:
        window_us = attempt_window_us(limit, window)
        args = [limit, window_us, "1" if record else "0", self._now()]
        reply: list[Any] = await self._attempt_script(
            keys=[self.attempt_key_of(name, self.prefix)], args=args
        )
        if int(reply[0]):
            return Attempts(True, int(reply[1]), limit)
        # The script returns the oldest entry that must leave and its own time, so the wait is
        # worked out here in integers, as the other limiters do.
        oldest, now_us = int(reply[2]), int(reply[3])
        return Attempts(False, int(reply[1]), limit, retry_after_us(oldest, window_us, now_us))

    async def forget(self, name: str) -> None:
        await self.client.zpopmax(self.attempt_key_of(name, self.prefix))

    @staticmethod
    def lease_key_of(name: str, prefix: str = "pd") -> str:
        """The sorted set of a name's leases: the name's digest, as its own hash tag."""
        return f"{prefix}:lease:{{{attempt_digest(name)}}}"

    async def hold(self, name: str, holder: str, limit: int, ttl: float) -> bool:
        args: list[str | int] = [holder, limit, lease_us(limit, ttl), self._now()]
        reply = await self._hold_script(keys=[self.lease_key_of(name, self.prefix)], args=args)
        return bool(int(reply))

    async def release(self, name: str, holder: str) -> None:
        await self.client.zrem(self.lease_key_of(name, self.prefix), holder)

    async def stored_bytes(self, key_id: str) -> int:
        """MEMORY USAGE of one key's log, for the sizing report."""
        size = await self.client.memory_usage(self.keys(key_id)[0], samples=0)
        return int(size or 0)

    def status(self) -> str:
        """ "ok"; ResilientLimiter says "degraded" while it answers from its fallback."""
        return "ok"

    async def close(self) -> None:
        await self.client.aclose()

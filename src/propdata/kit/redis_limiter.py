"""The scale-out limiter: the same exact sliding logs as SQLiteLimiter, kept in Redis.

One sorted set per API key holds its log: score = the request's time in microseconds,
member = "<µs>-<n>" with n from a per-key counter, so every entry is unique and a refund
removes exactly the one it recorded. Both windows come from that one set: the day is all of
it (older entries are trimmed), the minute is a ZCOUNT of its tail. A key without a daily
quota keeps only its last minute.

Every decision is one Lua script (trim, count, decide, record, and compute Reset and
Retry-After), so it is atomic across every process and host that shares the Redis, and it
takes the time from Redis's TIME: the hosts' clocks never matter. The keys of an API key
share a hash tag (`pd:{key_id}:log`, `pd:{key_id}:seq`, `pd:{key_id}:fail`,
`pd:{key_id}:hours`), so they live in one Redis Cluster slot. The limits come in with every
call, read from the database on every request, so a plan change holds on the key's next
request.

Hourly counts: one hash per API key (`pd:{key_id}:hours`), field = the hour bucket, value =
its count, changed by the admitting (or refunding) script itself. When an admission creates
a bucket, the buckets past the retention are deleted and the hash's expiry is set to the
retention plus an hour, so an idle key's hash goes on its own.

Attempt guards: one sorted set per name, `pd:att:{<sha256 of the name>}` (member
"<µs>-<n>", n = how many entries already had that microsecond), trimmed to the window on
every recording and expiring one window (plus a second) after the last one.

Beside it: `MemoryLimiter`, the same log in one process's memory, and `ResilientLimiter`,
which answers from Redis and falls back to the MemoryLimiter while Redis is unreachable.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

from propdata.kit.limiter import (
    DAY,
    HOUR_US,
    HOURLY_KEEP,
    MINUTE,
    Attempts,
    Clock,
    Decision,
    Window,
    attempt_digest,
    attempt_window_us,
    hour_of_us,
    hourly_range,
    reset_at,
    retry_after_us,
    sum_hours,
)
from propdata.kit.redis_link import Client, Outage, connect

# Mirrors SQLiteLimiter._decide and _describe step by step; the float arithmetic of Reset
# and Retry-After is written in the same order so both round the same way (Lua numbers are
# IEEE doubles like Python floats, and microsecond times stay below 2^53, so exact).
_SCRIPT = """
-- Redis before 5 replicates scripts verbatim and would refuse writes after TIME.
if redis.replicate_commands then redis.replicate_commands() end
local log, seq, fails, hours = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local mode = ARGV[1]
local per_minute = tonumber(ARGV[2])
local daily = tonumber(ARGV[3])
local fail_limit = tonumber(ARGV[6])
local now_us
if ARGV[5] ~= '' then
  now_us = tonumber(ARGV[5])
else
  local t = redis.call('TIME')
  now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local MINUTE_US, DAY_US, HOUR_US, KEEP = 60000000, 86400000000, @HOUR_US@, @HOURLY_KEEP@
local function us(n) return string.format('%.0f', n) end
local minute_from = now_us - MINUTE_US
local day_from = now_us - DAY_US

if mode == 'fail' then
  -- A failed request: its own log, never the metered one. Kept a minute.
  local n = redis.call('INCR', seq)
  if redis.call('PTTL', seq) < 0 then redis.call('PEXPIRE', seq, MINUTE_US / 1000 + 1000) end
  redis.call('ZADD', fails, us(now_us), us(now_us) .. '-' .. n)
  redis.call('PEXPIRE', fails, MINUTE_US / 1000 + 1000)
  return {1}
end

if daily then
  redis.call('ZREMRANGEBYSCORE', log, '-inf', us(day_from))
else
  redis.call('ZREMRANGEBYSCORE', log, '-inf', us(minute_from))
end
-- After the trim: an entry past the longest window kept is no longer there to take back.
if mode == 'refund' and redis.call('ZREM', log, ARGV[4]) == 1 then
  local hour = us(math.floor(tonumber(string.match(ARGV[4], '^(%d+)-')) / HOUR_US) * 3600)
  if tonumber(redis.call('HGET', hours, hour) or '0') > 0 then
    redis.call('HINCRBY', hours, hour, -1)
  end
end
local day_used = redis.call('ZCARD', log)
local minute_used = redis.call('ZCOUNT', log, '(' .. us(minute_from), '+inf')
local failed = 0
if fail_limit then
  redis.call('ZREMRANGEBYSCORE', fails, '-inf', us(minute_from))
  failed = redis.call('ZCARD', fails)
end
local guard_full = fail_limit ~= nil and failed >= fail_limit
local full = minute_used >= per_minute or (daily ~= nil and day_used >= daily) or guard_full

local stamp_us, stamp_n = 0, 0
if mode == 'admit' and not full then
  stamp_n = redis.call('INCR', seq)
  stamp_us = now_us
  redis.call('ZADD', log, us(now_us), us(now_us) .. '-' .. stamp_n)
  -- Idle keys vanish once their newest entry has left the longest window they keep.
  local ttl = (daily and DAY_US or MINUTE_US) / 1000 + 1000
  redis.call('PEXPIRE', log, ttl)
  redis.call('PEXPIRE', seq, ttl)
  minute_used = minute_used + 1
  day_used = day_used + 1
  local hour = math.floor(now_us / HOUR_US) * 3600
  if redis.call('HINCRBY', hours, us(hour), 1) == 1 then
    -- A new bucket (about once an hour): drop those past the retention, keep the hash.
    for _, h in ipairs(redis.call('HKEYS', hours)) do
      if tonumber(h) < hour - KEEP then redis.call('HDEL', hours, h) end
    end
    redis.call('PEXPIRE', hours, (KEEP + 3600) * 1000)
  end
end

-- Entries are ordered by time; those at or before minute_from come first.
local before_minute = day_used - minute_used
local function nth(rank)
  local r = redis.call('ZRANGE', log, rank, rank, 'WITHSCORES')
  if r[2] then return tonumber(r[2]) end
  return nil
end
local now = now_us / 1000000
local function reset(oldest, span)
  if oldest == nil then return math.ceil(now) end
  return math.ceil(oldest / 1000000 + span)
end
local minute_reset = math.ceil(now)
if minute_used > 0 then minute_reset = reset(nth(before_minute), 60) end
local day_reset = 0
if daily then
  day_reset = math.ceil(now)
  if day_used > 0 then day_reset = reset(nth(0), 86400) end
end

local fail_reset = 0
if fail_limit then
  fail_reset = math.ceil(now)
  if failed > 0 then
    local r = redis.call('ZRANGE', fails, 0, 0, 'WITHSCORES')
    fail_reset = reset(tonumber(r[2]), 60)
  end
end

local refused = mode == 'admit' and full
local retry, exceeded = 0, 0
if refused or (mode == 'usage' and guard_full) then
  -- The same waits as SQLiteLimiter._describe, taken in its order: minute, day, failures;
  -- the longest wins, the earlier one on a tie.
  local wait
  if refused and minute_used >= per_minute then
    -- The (used - limit + 1)-th oldest entry must leave for one more to fit.
    local at = nth(before_minute + minute_used - per_minute)
    wait = 0
    if at then wait = at / 1000000 + 60 - now end
    exceeded = 1
  end
  if refused and daily and day_used >= daily then
    local at = nth(day_used - daily)
    local day_wait = 0
    if at then day_wait = at / 1000000 + 86400 - now end
    if wait == nil or day_wait > wait then exceeded, wait = 2, day_wait end
  end
  if guard_full then
    local r = redis.call('ZRANGE', fails, failed - fail_limit, failed - fail_limit, 'WITHSCORES')
    local fail_wait = 0
    if r[2] then fail_wait = tonumber(r[2]) / 1000000 + 60 - now end
    if wait == nil or fail_wait > wait then exceeded, wait = 3, fail_wait end
  end
  retry = math.max(1, math.ceil(wait - 1e-9))
end
return {(refused or (mode == 'usage' and guard_full)) and 0 or 1, minute_used, minute_reset,
        day_used, day_reset, retry, exceeded, us(stamp_us), stamp_n, failed, fail_reset}
"""

# The hour buckets of one key and the time, read only. One string, "<hour> <count> ...":
# redis-py parses a reply element by element, which cost 3 ms for 30 days of buckets.
_HOURLY_SCRIPT = """
local now_us
if ARGV[1] ~= '' then
  now_us = tonumber(ARGV[1])
else
  local t = redis.call('TIME')
  now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
return {string.format('%.0f', now_us), table.concat(redis.call('HGETALL', KEYS[1]), ' ')}
"""

# An attempt guard: the same sliding log as the minute window, under a name's digest.
_ATTEMPT_SCRIPT = """
if redis.replicate_commands then redis.replicate_commands() end
local log = KEYS[1]
local limit, window_us, record = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1'
local now_us
if ARGV[4] ~= '' then
  now_us = tonumber(ARGV[4])
else
  local t = redis.call('TIME')
  now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function us(n) return string.format('%.0f', n) end
local from = '(' .. us(now_us - window_us)
local used
if record then
  redis.call('ZREMRANGEBYSCORE', log, '-inf', us(now_us - window_us))
  used = redis.call('ZCARD', log)
else
  used = redis.call('ZCOUNT', log, from, '+inf')
end
if used < limit then
  if record then
    -- Entries leave by score only, so the count of this microsecond's tells them apart.
    local dup = redis.call('ZCOUNT', log, us(now_us), us(now_us))
    redis.call('ZADD', log, us(now_us), us(now_us) .. '-' .. dup)
    redis.call('PEXPIRE', log, math.ceil(window_us / 1000) + 1000)
    used = used + 1
  end
  return {1, used, 0}
end
-- The (used - limit + 1)-th oldest must leave for one more to fit: its time in µs.
local r = redis.call('ZRANGEBYSCORE', log, from, '+inf', 'WITHSCORES', 'LIMIT', used - limit, 1)
return {0, used, us(tonumber(r[2])), us(now_us)}
"""


def _constants(script: str) -> str:
    return script.replace("@HOUR_US@", str(HOUR_US)).replace("@HOURLY_KEEP@", str(HOURLY_KEEP))


_SCRIPT = _constants(_SCRIPT)
_EXCEEDED = {1: "minute", 2: "day", 3: "failures"}


def _at(entry: tuple[int, int]) -> int:
    return entry[0]


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
        self._script = client.register_script(_SCRIPT)
        self._hourly_script = client.register_script(_HOURLY_SCRIPT)
        self._attempt_script = client.register_script(_ATTEMPT_SCRIPT)

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

    async def stored_bytes(self, key_id: str) -> int:
        """MEMORY USAGE of one key's log, for the sizing report."""
        size = await self.client.memory_usage(self.keys(key_id)[0], samples=0)
        return int(size or 0)

    def status(self) -> str:
        """ "ok"; ResilientLimiter says "degraded" while it falls back to a MemoryLimiter."""
        return "ok"

    async def close(self) -> None:
        await self.client.aclose()


class MemoryLimiter:
    """The same exact sliding logs in this process's memory: the fallback while Redis is away.

    Its stamps carry a negative sequence number, so a ResilientLimiter can tell its entries
    from Redis's (whose counter starts at 1) and send a refund to the one that recorded it.
    """

    SWEEP_EVERY = 10_000

    def __init__(self, clock: Clock = time.time) -> None:
        self.clock = clock
        self._logs: dict[str, list[tuple[int, int]]] = {}
        self._fails: dict[str, list[tuple[int, int]]] = {}
        self._hours: dict[str, dict[int, int]] = {}
        self._attempts: dict[str, list[tuple[int, int]]] = {}
        """Attempt logs by the name's digest: (µs, same-µs number)."""
        self._attempts_until: dict[str, int] = {}
        """When each attempt log's newest entry leaves its window (µs): the sweep's guide."""
        self._n = 0
        self._calls = 0

    def _decide(
        self,
        key_id: str,
        per_minute: int,
        daily: int | None,
        record: bool,
        failures: int | None = None,
    ) -> Decision:
        now_us = int(self.clock() * 1_000_000)
        self._calls += 1
        if self._calls % self.SWEEP_EVERY == 0:
            self._sweep(now_us)
        log = self._logs.setdefault(key_id, [])
        minute_from = now_us - int(MINUTE * 1e6)
        day_from = now_us - int(DAY * 1e6)
        # Like the Redis log: without a daily quota only the last minute is kept.
        keep_from = day_from if daily is not None else minute_from
        del log[: bisect.bisect_right(log, keep_from, key=_at)]
        before_minute = bisect.bisect_right(log, minute_from, key=_at)
        minute_used, day_used = len(log) - before_minute, len(log)
        fails: list[tuple[int, int]] = []
        if failures is not None:
            fails = self._fails.get(key_id, [])
            del fails[: bisect.bisect_right(fails, minute_from, key=_at)]
        guard_full = failures is not None and len(fails) >= failures
        full = minute_used >= per_minute or (daily is not None and day_used >= daily) or guard_full
        stamp: tuple[int, int] | None = None
        if record and not full:
            self._n += 1
            stamp = (now_us, -self._n)
            bisect.insort(log, (now_us, self._n))
            minute_used += 1
            day_used += 1
            self._count_hour(key_id, hour_of_us(now_us), 1)
        if not log:
            del self._logs[key_id]

        def nth(rank: int) -> int | None:
            return log[rank][0] if 0 <= rank < len(log) else None

        now = now_us / 1e6
        minute = Window(per_minute, minute_used, reset_at(nth(before_minute) if minute_used else None, MINUTE, now))  # fmt: skip
        day = Window(daily, day_used, reset_at(nth(0), DAY, now)) if daily is not None else None
        guard = None
        if failures is not None:
            guard = Window(
                failures, len(fails), reset_at(fails[0][0] if fails else None, MINUTE, now)
            )
        refused = record and full
        if not (refused or guard_full):
            return Decision(True, minute, day, stamp=stamp, failures=guard)
        waits: dict[str, float] = {}
        if refused and minute_used >= per_minute:
            at = nth(before_minute + minute_used - per_minute)
            waits["minute"] = (at / 1e6 + MINUTE - now) if at is not None else 0.0
        if refused and daily is not None and day_used >= daily:
            at = nth(day_used - daily)
            waits["day"] = (at / 1e6 + DAY - now) if at is not None else 0.0
        if guard_full and failures is not None:
            waits["failures"] = fails[len(fails) - failures][0] / 1e6 + MINUTE - now
        exceeded = max(waits, key=lambda w: waits[w])
        retry = max(1, math.ceil(waits[exceeded] - 1e-9))
        return Decision(False, minute, day, retry_after=retry, exceeded=exceeded, failures=guard)

    def _count_hour(self, key_id: str, hour: int, change: int) -> None:
        hours = self._hours.setdefault(key_id, {})
        if hour not in hours:  # a new bucket: drop those past the retention
            for old in [h for h in hours if h < hour - HOURLY_KEEP]:
                del hours[old]
        hours[hour] = hours.get(hour, 0) + change

    def _sweep(self, now_us: int) -> None:
        """Drop the logs of keys idle for a day (their hourly counts after the retention, the
        attempt logs past their window), so a long outage cannot grow memory without end."""
        day_from = now_us - int(DAY * 1e6)
        for key_id in [k for k, log in self._logs.items() if not log or log[-1][0] <= day_from]:
            del self._logs[key_id]
        minute_from = now_us - int(MINUTE * 1e6)
        for key_id in [k for k, f in self._fails.items() if not f or f[-1][0] <= minute_from]:
            del self._fails[key_id]
        oldest = hour_of_us(now_us) - HOURLY_KEEP
        for key_id in [k for k, hours in self._hours.items() if max(hours, default=0) < oldest]:
            del self._hours[key_id]
        for digest in [d for d, until in self._attempts_until.items() if until <= now_us]:
            del self._attempts_until[digest]
            self._attempts.pop(digest, None)

    async def admit(
        self, key_id: str, per_minute: int, daily: int | None, failures: int | None = None
    ) -> Decision:
        return self._decide(key_id, per_minute, daily, record=True, failures=failures)

    async def usage(
        self, key_id: str, per_minute: int, daily: int | None, failures: int | None = None
    ) -> Decision:
        return self._decide(key_id, per_minute, daily, record=False, failures=failures)

    async def fail(self, key_id: str) -> None:
        self._n += 1
        now_us = int(self.clock() * 1_000_000)
        bisect.insort(self._fails.setdefault(key_id, []), (now_us, self._n))

    async def refund(
        self, key_id: str, stamp: tuple[int, int], per_minute: int, daily: int | None
    ) -> Decision:
        log = self._logs.get(key_id, [])
        # As in Redis: trimmed first, so an entry past the longest window kept is not there.
        keep_from = int(self.clock() * 1_000_000) - int((MINUTE if daily is None else DAY) * 1e6)
        del log[: bisect.bisect_right(log, keep_from, key=_at)]
        entry = (stamp[0], -stamp[1])
        i = bisect.bisect_left(log, entry)
        if i < len(log) and log[i] == entry:
            del log[i]
            hour = hour_of_us(stamp[0])
            hours = self._hours.get(key_id, {})
            if hours.get(hour, 0) > 0:
                hours[hour] -= 1
        return self._decide(key_id, per_minute, daily, record=False)

    async def hourly(self, key_id: str, since: float) -> dict[int, int]:
        first, last = hourly_range(since, int(self.clock() * 1_000_000))
        hours = self._hours.get(key_id, {})
        return sum_hours((hour, n) for hour, n in hours.items() if first <= hour <= last)

    async def attempt(self, name: str, limit: int, window: float, record: bool = True) -> Attempts:
        window_us = attempt_window_us(limit, window)
        digest = attempt_digest(name)
        now_us = int(self.clock() * 1_000_000)
        from_us = now_us - window_us
        log = self._attempts.get(digest, [])
        if record:
            self._calls += 1
            if self._calls % self.SWEEP_EVERY == 0:
                self._sweep(now_us)
            del log[: bisect.bisect_right(log, from_us, key=_at)]
        first = bisect.bisect_right(log, from_us, key=_at)
        used = len(log) - first
        if used < limit:
            if record:
                dup = bisect.bisect_right(log, now_us, key=_at) - bisect.bisect_left(
                    log, now_us, key=_at
                )
                bisect.insort(log, (now_us, dup))
                self._attempts[digest] = log
                self._attempts_until[digest] = max(
                    self._attempts_until.get(digest, 0), now_us + window_us
                )
                used += 1
            return Attempts(True, used, limit)
        oldest = log[first + used - limit][0]
        return Attempts(False, used, limit, retry_after_us(oldest, window_us, now_us))

    async def forget(self, name: str) -> None:
        log = self._attempts.get(attempt_digest(name))
        if log:
            log.pop()

    def status(self) -> str:
        """ "ok"; ResilientLimiter says "degraded" while it falls back to a MemoryLimiter."""
        return "ok"

    async def close(self) -> None:
        self._logs.clear()
        self._fails.clear()
        self._hours.clear()
        self._attempts.clear()
        self._attempts_until.clear()


class ResilientLimiter:
    """Redis while it answers; the per-process MemoryLimiter while it does not.

    While Redis is unreachable each process counts on its own (so N processes admit up to N
    times a key's limit), `status()` says "degraded", one warning is logged per outage, and
    Redis is tried again at most once a second. A refund goes to the limiter that recorded
    the entry; one Redis recorded but cannot take back now stays counted (the safe side).

    Hourly counts and attempt guards follow the same rule. During an outage `hourly` answers
    from this process's fallback: only the requests this process admitted while Redis was
    away, not Redis's counts. Requests admitted by a fallback are never added to Redis's
    hours, so once Redis is back its counts for the outage's hours miss them (an
    undercount, per process, of what the fallbacks admitted). An attempt guard counts per
    process during an outage (N processes allow up to N times its limit), and the attempts
    recorded then are forgotten when Redis answers again.
    """

    def __init__(self, redis: RedisLimiter, fallback: MemoryLimiter | None = None) -> None:
        self.redis = redis
        self.fallback = fallback or MemoryLimiter(redis.clock or time.time)
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
            lambda: self.fallback.admit(key_id, per_minute, daily, failures),
        )

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
            return await self.fallback.refund(key_id, stamp, per_minute, daily)
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

    async def forget(self, name: str) -> None:
        await self.outage.call(lambda: self.redis.forget(name), lambda: self.fallback.forget(name))

    async def close(self) -> None:
        await self.redis.close()
        await self.fallback.close()

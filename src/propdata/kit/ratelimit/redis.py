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

`resilient.ResilientLimiter` answers from it and falls back to an in-memory SQLiteLimiter
while Redis is unreachable.
"""

from __future__ import annotations

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
    retry_after_us,
    sum_hours,
)
from propdata.kit.redis_link import Client, connect

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
        """ "ok"; ResilientLimiter says "degraded" while it answers from its fallback."""
        return "ok"

    async def close(self) -> None:
        await self.client.aclose()

-- One decision of an API key's windows (admit, refund, usage, or a failed request), atomic
-- across every process and host that shares the Redis: trim, count, decide, record, and
-- compute Reset and Retry-After. Mirrors SQLiteLimiter._decide and _describe step by step;
-- the float arithmetic of Reset and Retry-After is written in the same order so both round
-- the same way (Lua numbers are IEEE doubles like Python floats, and microsecond times stay
-- below 2^53, so exact). The two names between at-signs below are kit.ratelimit.base's
-- constants, put in when the script is read (kit.ratelimit.redis.read_script).
-- Redis before 5 replicates scripts verbatim and would refuse writes after TIME.
if redis.replicate_commands then redis.replicate_commands() end
local log, seq, fails, hours = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local mode = ARGV[1]
local per_minute = tonumber(ARGV[2])
local daily = tonumber(ARGV[3])
local fail_limit = tonumber(ARGV[6])
local now_us = now_micros(ARGV[5])
local MINUTE_US, DAY_US, HOUR_US, KEEP = 60000000, 86400000000, @HOUR_US@, @HOURLY_KEEP@
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

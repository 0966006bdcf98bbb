-- An attempt guard: the same sliding log as the minute window, under a name's digest.
if redis.replicate_commands then redis.replicate_commands() end
local log = KEYS[1]
local limit, window_us, record = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1'
local now_us = now_micros(ARGV[4])
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

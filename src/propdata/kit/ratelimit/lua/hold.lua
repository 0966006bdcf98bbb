-- A lease on one of `limit` slots under a name: taken (or renewed) for `holder` until now +
-- ttl when the holder has one or a slot is free; slots whose lease ran out are free again.
if redis.replicate_commands then redis.replicate_commands() end
local slots = KEYS[1]
local holder, limit, ttl_us = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local now_us = now_micros(ARGV[4])
redis.call('ZREMRANGEBYSCORE', slots, '-inf', us(now_us))
if not redis.call('ZSCORE', slots, holder) and redis.call('ZCARD', slots) >= limit then
  return 0
end
redis.call('ZADD', slots, us(now_us + ttl_us), holder)
-- The set goes with its last lease (every lease of it has the same ttl).
redis.call('PEXPIRE', slots, math.ceil(ttl_us / 1000) + 1000)
return 1

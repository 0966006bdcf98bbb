-- The hour buckets of one key and the time, read only. One string, "<hour> <count> ...":
-- redis-py parses a reply element by element, which cost 3 ms for 30 days of buckets.
local now_us = now_micros(ARGV[1])
return {us(now_us), table.concat(redis.call('HGETALL', KEYS[1]), ' ')}

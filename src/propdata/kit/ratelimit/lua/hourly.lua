-- The hour buckets of one key and the time, read only. One string, "<hour> <count> ...":
-- redis-py parses a reply element by element, which cost 3 ms for 30 days of buckets.
local now_us
if ARGV[1] ~= '' then
  now_us = tonumber(ARGV[1])
else
  local t = redis.call('TIME')
  now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
return {string.format('%.0f', now_us), table.concat(redis.call('HGETALL', KEYS[1]), ' ')}

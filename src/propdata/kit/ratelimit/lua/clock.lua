-- The head of every script here, put before it when the script is read
-- (kit.ratelimit.redis.read_script). `pinned` is the caller's time in microseconds, or ''
-- for the Redis server's TIME (tests pin the time; production never does).
local function now_micros(pinned)
  if pinned ~= '' then return tonumber(pinned) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function us(n) return string.format('%.0f', n) end

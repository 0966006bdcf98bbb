"""Rate limiting: the `Limiter` interface (`base`) and its backends.

`sqlite.SQLiteLimiter` is the embedded one (a file of its own; in memory, the fallback),
`redis.RedisLimiter` the scale-out one, `resilient.ResilientLimiter` Redis with that
fallback while Redis is unreachable. Every backend gives identical decisions:
tests/kit/ratelimit/test_cases.py holds them all to one table.
"""

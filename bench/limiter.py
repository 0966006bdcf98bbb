"""Cost of the limiters per request, and the storage of a saturated Pro key.

    .venv/bin/python bench/limiter.py [--requests 20000] [--redis redis://127.0.0.1:6379/0]

Prints a Markdown table: the embedded (SQLite) limiter, then the Redis limiter (one script
per call, over a local TCP connection) unless `--redis ''`. Run it from the repository root;
it works in a temp folder and under `pd:{bench-...}` keys it deletes afterwards.

Both use a fake clock so 20,000 requests stay under the limits; for Redis that replaces
the script's TIME call, which costs the same. `admit, 8 at once`: eight admissions asked in
one turn of the event loop (SQLite makes them in one transaction), per admission. Besides the admission path: `hourly` over 30
days of hour buckets (a dashboard's read), and `attempt` (an attempt guard that records).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from propdata.kit.ratelimit.base import Limiter
from propdata.kit.ratelimit.redis import RedisLimiter
from propdata.kit.ratelimit.sqlite import SQLiteLimiter
from propdata.kit.redis_link import connect


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


async def per_request(limiter: Limiter, clock: Clock, requests: int, key: str) -> dict[str, float]:
    timings: dict[str, list[float]] = {"admit": [], "admit+refund": [], "usage": [],
                                       "admit, 8 at once": []}  # fmt: skip
    for _ in range(requests):
        clock.now += 0.05
        start = time.perf_counter()
        await limiter.admit(key, 2_000, 1_000_000)
        timings["admit"].append(time.perf_counter() - start)
    for _ in range(requests // 8):
        # Eight requests of one turn of the event loop (a worker's connections under load):
        # the time of the eight, per admission.
        clock.now += 0.4
        start = time.perf_counter()
        await asyncio.gather(*(limiter.admit(key, 2_000, 1_000_000) for _ in range(8)))
        timings["admit, 8 at once"].append((time.perf_counter() - start) / 8)
    for _ in range(requests // 4):
        clock.now += 0.05
        start = time.perf_counter()
        decision = await limiter.admit(key, 2_000, 1_000_000)
        assert decision.stamp is not None
        await limiter.refund(key, decision.stamp, 2_000, 1_000_000)
        timings["admit+refund"].append(time.perf_counter() - start)
        start = time.perf_counter()
        await limiter.usage(key, 2_000, 1_000_000)
        timings["usage"].append(time.perf_counter() - start)
    # A key with an admission in each of the last 30 days' hours, read as a dashboard would.
    hourly_key = f"{key}-hours"
    for _ in range(30 * 24):
        clock.now += 3600
        await limiter.admit(hourly_key, 2_000, 1_000_000)
    timings["hourly 30 d"] = []
    timings["attempt"] = []
    for n in range(requests // 4):
        start = time.perf_counter()
        await limiter.hourly(hourly_key, clock.now - 30 * 86_400)
        timings["hourly 30 d"].append(time.perf_counter() - start)
        clock.now += 0.05
        start = time.perf_counter()
        await limiter.attempt(f"{key}-guard-{n % 100}", 1_000_000, 900)
        timings["attempt"].append(time.perf_counter() - start)
    return {name: statistics.median(values) * 1e6 for name, values in timings.items()} | {
        f"{name} p99": sorted(values)[int(len(values) * 0.99)] * 1e6
        for name, values in timings.items()
    }


async def saturated_pro(limiter: Limiter, clock: Clock, key: str) -> tuple[int, float]:
    """Fill a Pro key's day (100,000 requests at its 500/min pace); return entries and time."""
    admitted = 0
    start = time.perf_counter()
    while True:
        clock.now += 60 / 500 + 0.0001
        decision = await limiter.admit(key, 500, 100_000)
        if not decision.allowed:
            break
        admitted += 1
    return admitted, time.perf_counter() - start


async def sqlite_figures(folder: Path, requests: int) -> tuple[dict[str, float], int, int, float]:
    clock = Clock()
    limiter = SQLiteLimiter(str(folder / "a.db"), clock=clock)
    costs = await per_request(limiter, clock, requests, "bench")
    await limiter.close()
    clock = Clock()
    limiter = SQLiteLimiter(str(folder / "b.db"), clock=clock)
    admitted, elapsed = await saturated_pro(limiter, clock, "pro")
    size = limiter.stored_bytes("pro")
    await limiter.close()
    return costs, admitted, size, elapsed


async def redis_figures(url: str, requests: int) -> tuple[dict[str, float], int, int, float]:
    keys = [f"bench-{uuid.uuid4().hex[:8]}", f"bench-{uuid.uuid4().hex[:8]}"]
    clock = Clock()
    limiter = RedisLimiter(connect(url), clock=clock)
    try:
        costs = await per_request(limiter, clock, requests, keys[0])
        clock.now = 1_800_000_000.0
        admitted, elapsed = await saturated_pro(limiter, clock, keys[1])
        size = await limiter.stored_bytes(keys[1])
    finally:
        await limiter.client.delete(
            *RedisLimiter.keys_of(keys[0]),
            *RedisLimiter.keys_of(keys[1]),
            *RedisLimiter.keys_of(f"{keys[0]}-hours"),
            *(RedisLimiter.attempt_key_of(f"{keys[0]}-guard-{n}") for n in range(100)),
        )
        await limiter.close()
    return costs, admitted, size, elapsed


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0", help="'' to skip Redis")
    args = parser.parse_args()
    runs: list[tuple[str, str, tuple[dict[str, float], int, int, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        runs.append(
            (
                "SQLite",
                "in the limiter's SQLite file",
                await sqlite_figures(Path(tmp), args.requests),
            )
        )
    if args.redis:
        runs.append(
            (
                "Redis",
                "in Redis (MEMORY USAGE of its sorted set)",
                await redis_figures(args.redis, args.requests),
            )
        )
    print(
        f"Limiter benchmark, {dt.date.today()}, `.venv/bin/python bench/limiter.py --requests {args.requests}`\n"
    )
    print("| limiter | operation | median µs | p99 µs |")
    print("|---|---|---|---|")
    for name, _, (costs, *_rest) in runs:
        for op in ("admit", "admit, 8 at once", "admit+refund", "usage", "hourly 30 d", "attempt"):
            print(f"| {name} | {op} | {costs[op]:.1f} | {costs[op + ' p99']:.1f} |")
    for name, where, (_, admitted, size, elapsed) in runs:
        print(
            f"\n{name}: a saturated Pro key's {admitted:,} entries in its daily window take {size:,} bytes"
            f" ({size / admitted:.1f} bytes each) {where};"
            f" filling it took {elapsed:.1f} s ({elapsed / admitted * 1e6:.0f} µs per admission)."
        )


if __name__ == "__main__":
    asyncio.run(main())

"""Cost of the embedded limiter per request, and the storage of a saturated Pro key.

    .venv/bin/python bench/limiter.py [--requests 20000]

Prints a Markdown table. Run it from the repository root; it works in a temp folder.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import statistics
import tempfile
import time
from pathlib import Path

from propdata.kit.limiter import SQLiteLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


async def per_request(path: Path, requests: int) -> dict[str, float]:
    clock = Clock()
    limiter = SQLiteLimiter(str(path), clock=clock)
    timings: dict[str, list[float]] = {"admit": [], "admit+refund": [], "usage": []}
    for _ in range(requests):
        clock.now += 0.05
        start = time.perf_counter()
        await limiter.admit("bench", 2_000, 1_000_000)
        timings["admit"].append(time.perf_counter() - start)
    for _ in range(requests // 4):
        clock.now += 0.05
        start = time.perf_counter()
        decision = await limiter.admit("bench", 2_000, 1_000_000)
        assert decision.stamp is not None
        await limiter.refund("bench", decision.stamp, 2_000, 1_000_000)
        timings["admit+refund"].append(time.perf_counter() - start)
        start = time.perf_counter()
        await limiter.usage("bench", 2_000, 1_000_000)
        timings["usage"].append(time.perf_counter() - start)
    await limiter.close()
    return {name: statistics.median(values) * 1e6 for name, values in timings.items()} | {
        f"{name} p99": sorted(values)[int(len(values) * 0.99)] * 1e6 for name, values in timings.items()
    }


async def saturated_pro(path: Path) -> tuple[int, int, float]:
    """Fill a Pro key's day (100,000 requests at its 500/min pace); return entries and bytes."""
    clock = Clock()
    limiter = SQLiteLimiter(str(path), clock=clock)
    admitted = 0
    start = time.perf_counter()
    while True:
        clock.now += 60 / 500 + 0.0001
        decision = await limiter.admit("pro", 500, 100_000)
        if not decision.allowed:
            break
        admitted += 1
    elapsed = time.perf_counter() - start
    size = limiter.stored_bytes("pro")
    await limiter.close()
    return admitted, size, elapsed


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        costs = await per_request(Path(tmp) / "a.db", args.requests)
        admitted, size, elapsed = await saturated_pro(Path(tmp) / "b.db")
    print(f"Limiter benchmark, {dt.date.today()}, `.venv/bin/python bench/limiter.py --requests {args.requests}`\n")
    print("| operation | median µs | p99 µs |")
    print("|---|---|---|")
    for name in ("admit", "admit+refund", "usage"):
        print(f"| {name} | {costs[name]:.1f} | {costs[name + ' p99']:.1f} |")
    print(f"\nSaturated Pro key: {admitted:,} entries in its daily window take {size:,} bytes"
          f" ({size / admitted:.1f} bytes each) in the limiter's SQLite file;"
          f" filling it took {elapsed:.1f} s ({elapsed / admitted * 1e6:.0f} µs per admission).")


if __name__ == "__main__":
    asyncio.run(main())

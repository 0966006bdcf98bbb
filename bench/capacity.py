"""The capacity model's inputs, measured: CPU per request in each tier, and two instances.

    .venv/bin/python bench/capacity.py --properties 200000 --seconds 15

Serves a scale-out store (PostgreSQL schema bench_p<N>_s11_<date>, Redis) with one
`propdata serve --workers 1` instance, then with two instances on their own ports against
the same PostgreSQL and Redis (as two hosts would be), and drives get-by-id and the
make bench search mix with wrk (cache off, one enterprise key nothing throttles). For each
run it counts, per answered request:

- the API's CPU: user+system time of the server processes (/proc/<pid>/stat);
- PostgreSQL's CPU: the backends serving the instances, found by their application_name
  (`propdata-capacity-<i>`, set in the database URL), whatever else the database serves;
- Redis's CPU: the server's own accounting of the commands it ran (INFO commandstats,
  the sum of `usec` over every command, before and after), and the commands a request costs.
  Other clients of the same Redis would add to it: run on a quiet machine.

It prints a table for docs/capacity.md: rps, µs of CPU per request in each tier, and the
rps the measured costs predict for this machine's cores (every tier sharing them), so the
two-instance run checks the model: two instances should serve what the sum of the costs
allows, no more.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_data
import bench_mix as scenarios

BENCH = Path(__file__).resolve().parent
LUA = BENCH / "wrk" / "rotate.lua"
TICKS = os.sysconf("SC_CLK_TCK")
AS_OF = dt.date(2026, 11, 21)
SEED = 11
"""Not make bench's seed 7: its schema is not this one's, so the two never clobber each other."""


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def backends(pg_url: str, prefix: str) -> list[int]:
    """Pids of the PostgreSQL backends whose application_name starts with `prefix`."""

    async def find() -> list[int]:
        import asyncpg

        conn = await asyncpg.connect(pg_url, timeout=10)
        try:
            rows = await conn.fetch(
                "SELECT pid FROM pg_stat_activity WHERE application_name LIKE $1", prefix + "%"
            )
        finally:
            await conn.close()
        return [int(r["pid"]) for r in rows]

    return asyncio.run(find())


def redis_usec(redis_url: str) -> tuple[float, int]:
    """(µs Redis spent in commands, commands run) since its start, over every command."""
    import redis

    stats = redis.Redis.from_url(redis_url).info("commandstats")
    return (
        sum(float(v["usec"]) for v in stats.values()),
        sum(int(v["calls"]) for v in stats.values()),
    )


@dataclass
class Figures:
    instances: int
    what: str
    rps: float
    api_us: float
    pg_us: float
    redis_us: float
    redis_calls: float
    p99_ms: float

    @property
    def total_us(self) -> float:
        return self.api_us + self.pg_us + self.redis_us


def drive(bases: list[str], paths: Path, seconds: float, connections: int, key: str,
          servers: list[subprocess.Popen[bytes]], pg_url: str, redis_url: str,
          what: str) -> Figures:  # fmt: skip
    """wrk against every base at once; the CPU each tier spent per answered request."""
    pg = backends(pg_url, "propdata-capacity")
    api0 = sum(cpu_seconds(s.pid) for s in servers)
    pg0 = sum(cpu_seconds(p) for p in pg)
    r0, c0 = redis_usec(redis_url)
    env = {**os.environ, "BENCH_KEY": key}

    def command(base: str) -> list[str]:
        return ["wrk", "-t1", f"-c{connections}", f"-d{round(seconds)}s", "--timeout", "30s",
                "-s", str(LUA), base, "--", str(paths)]  # fmt: skip

    runs = [
        subprocess.Popen(command(base), env=env, stdout=subprocess.PIPE, text=True)
        for base in bases
    ]
    outputs = [run.communicate()[0] for run in runs]
    api = sum(cpu_seconds(s.pid) for s in servers) - api0
    pg_used = sum(cpu_seconds(p) for p in backends(pg_url, "propdata-capacity")) - pg0
    r1, c1 = redis_usec(redis_url)
    answered = 0
    duration = 0.0
    p99 = 0.0
    for out in outputs:
        line = next(x for x in out.splitlines() if x.startswith("BENCH_JSON "))
        figures = json.loads(line.removeprefix("BENCH_JSON "))
        answered += figures["requests"] - sum(figures["errors"].values())
        duration = max(duration, figures["duration_us"] / 1e6)
        p99 = max(p99, figures["latency_us"]["p99"] / 1000)
    n = max(1, answered)
    return Figures(len(bases), what, answered / duration, api / n * 1e6, pg_used / n * 1e6,
                   (r1 - r0) / n, (c1 - c0) / n, p99)  # fmt: skip


def serve(count: int, url: str, redis_url: str) -> tuple[list[subprocess.Popen[bytes]], list[str]]:
    servers, bases = [], []
    for i in range(count):
        port = free_port()
        sep = "&" if "?" in url else "?"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROPDATA_")}
        env.update({
            "PROPDATA_DATABASE_URL": f"{url}{sep}application_name=propdata-capacity-{i}",
            "PROPDATA_REDIS_URL": redis_url, "PROPDATA_CACHE_TTL": "0",
            "PROPDATA_LOG_LEVEL": "ERROR", "PROPDATA_AS_OF": AS_OF.isoformat(),
            "PROPDATA_INDEX_DIR": str(BENCH / ".data" / f"capacity-index-{i}"),
        })  # fmt: skip
        servers.append(subprocess.Popen(
            [sys.executable, "-m", "propdata", "serve", "--port", str(port), "--workers", "1"],
            env=env,
        ))  # fmt: skip
        bases.append(f"http://127.0.0.1:{port}")
    for base in bases:
        deadline = time.monotonic() + 300
        while True:
            try:
                health = httpx.get(base + "/health", timeout=2).json()
                if health["checks"].get("searchIndex") == "ok":
                    break
            except (httpx.TransportError, ValueError, KeyError):
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"{base} did not get ready")
            time.sleep(0.2)
    return servers, bases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--properties", type=int, default=200_000)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args()

    build = asyncio.run(bench_data.ensure_postgres(
        BENCH / ".data", args.pg_url, args.properties, SEED, AS_OF))  # fmt: skip
    key = asyncio.run(bench_data.create_key(build.url))
    sample = bench_data.sample(build.url, 5_000, 2_000, SEED)
    folder = BENCH / ".data" / f"capacity-requests-p{args.properties}"
    folder.mkdir(parents=True, exist_ok=True)
    ids = folder / "ids.txt"
    ids.write_text("".join(p + "\n" for p in scenarios.id_paths(sample.ids)))
    search = folder / "search.txt"
    search.write_text(
        "".join(s.path + "\n" for s in scenarios.search_mix(sample.rows, 20_000, SEED))
    )

    rows: list[Figures] = []
    for count in (1, 2):
        servers, bases = serve(count, build.url, args.redis_url)
        try:
            for what, paths in (("get by id", ids), ("search mix", search)):
                drive(bases, paths, 3, args.connections, key, servers, args.pg_url,
                      args.redis_url, what)  # warm-up  # fmt: skip
                rows.append(drive(bases, paths, args.seconds, args.connections, key, servers,
                                  args.pg_url, args.redis_url, what))  # fmt: skip
        finally:
            for s in servers:
                s.terminate()
            for s in servers:
                s.wait(20)
    print(f"Store: {args.properties:,} properties (PostgreSQL schema of {build.url.rsplit('=', 1)[-1]}),"
          f" Redis; cache off; {args.connections} connections per instance; {args.cores} cores;"
          f" code {bench_data.code_version()}; {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC\n")  # fmt: skip
    print(
        "| instances | requests | rps | p99 ms | API µs CPU | PostgreSQL µs CPU |"
        " Redis µs (commands) | total µs | rps the costs allow on these cores |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        allowed = args.cores * 1e6 / r.total_us
        print(f"| {r.instances} | {r.what} | {r.rps:,.0f} | {r.p99_ms:.1f} | {r.api_us:,.0f} |"
              f" {r.pg_us:,.0f} | {r.redis_us:,.0f} ({r.redis_calls:.1f}) | {r.total_us:,.0f} |"
              f" {allowed:,.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()

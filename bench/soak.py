"""Soak: the service driven past every key's limit for minutes, with faults, then judged.

    .venv/bin/python bench/soak.py [--seconds 300] [--faults] [--write-docs]   # make soak
    .venv/bin/python bench/soak.py --smoke                                      # make test

Three targets run side by side, each on its own store: the embedded store behind one
`propdata serve --workers 2`, and PostgreSQL + Redis behind two such servers (the scale-out
shape: two instances of two workers sharing one database and one Redis). Each target gets
one key per plan (free, developer, pro), each driven at ten times its per-minute limit from
many connections, with a mix of cached answers, misses, searches, lookups and 404s.

With --faults, the scale-out target loses PostgreSQL (its connections cut by a proxy) for
10 s a third of the way in, and Redis (a private redis-server, killed and restarted) for
10 s two thirds in.

What is judged, from the client's own log of every request (docs/reliability.md):
- no 5xx but the 503s of a PostgreSQL outage;
- no over-admission: for every counted answer (2xx, not a cache hit), the counted answers
  that must have been decided in the 60 s after its sending (sent after it, answered before
  it + 60 s) never number more than the key's limit; during a Redis outage and the minute
  after it, docs/deploy.md allows each process its own count, so that stretch is left out;
- nothing lost or doubled: each key's counted answers equal the day's usage the service
  reports at the end (steady runs);
- workers' resident memory at the start and the end; p50 and p99 latency.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.live import Proxy, serving_process  # noqa: E402
from tests.redis_support import RedisServer  # noqa: E402

from propdata.accounts.keys import CustomLimits, keys_of  # noqa: E402
from propdata.ingest import pipeline  # noqa: E402
from propdata.kit.db import connect  # noqa: E402
from propdata.migrations.schema import migrate  # noqa: E402
from propdata.plans import BY_NAME, SELF_SERVE  # noqa: E402

AS_OF = dt.date(2026, 11, 21)
PG_URL = os.environ.get("PROPDATA_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
PLANS = {name: BY_NAME[name].per_minute for name in SELF_SERVE}
"""Plan -> per-minute limit; each key is driven at ten times it."""
PROPERTIES = 3_000
DOCS = ROOT / "docs" / "reliability.md"


@dataclass
class Call:
    key: str
    send: float
    receive: float
    status: int
    cached: bool


@dataclass
class Target:
    name: str
    env: dict[str, str]
    servers: int
    bases: list[str] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    keys: dict[str, str] = field(default_factory=dict)
    """plan -> secret"""
    calls: list[Call] = field(default_factory=list)
    memory: dict[int, tuple[int, int]] = field(default_factory=dict)
    """worker pid -> (RSS KB at start, at end)"""
    usage: dict[str, int] = field(default_factory=dict)
    """plan -> the day's usage the service reports at the end"""
    outages: list[tuple[str, float, float]] = field(default_factory=list)
    offered: float = 0.0
    """Requests the schedule asked for (ten times each limit for the run's length)."""


async def _build(url: str) -> None:
    db = await connect(url)
    try:
        await migrate(db)
        await pipeline.run(db, [pipeline.synthetic_source(PROPERTIES, 5, AS_OF)], AS_OF)
    finally:
        await db.close()


async def _keys(url: str) -> dict[str, str]:
    async with keys_of(url) as keys:
        return {plan: (await keys.create(plan, f"soak-{plan}", CustomLimits()))[1]
                for plan in PLANS}  # fmt: skip


def _workers(pid: int) -> list[int]:
    """The supervisor's worker processes (not the multiprocessing helper it starts)."""
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    workers = []
    for child in (int(p) for p in found.stdout.split()):
        with contextlib.suppress(OSError):
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                workers.append(child)
    return workers or [pid]


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _paths(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.40:
        return f"/v1/properties/syn-{rng.randint(1, 20):07d}"  # a few ids: cache hits
    if roll < 0.70:
        return f"/v1/properties/syn-{rng.randint(1, PROPERTIES):07d}"
    if roll < 0.80:
        return f"/v1/properties/missing-{rng.randint(1, 10**9)}"  # 404
    if roll < 0.90:
        state = rng.choice(["CA", "TX", "NY", "FL", "IA", "OH"])
        return f"/v1/properties?state={state}&limit=5&offset={rng.randint(0, 50)}"
    return f"/v1/markets/search?state={rng.choice(['CA', 'TX', 'IA'])}&limit=3"


IN_FLIGHT = 16
"""Requests a target has under way at once. When the service (or this process) falls behind,
the next requests wait here, not in an unbounded queue of tasks."""


async def _drive(target: Target, seconds: float, seed: int) -> None:
    """Every key at ten times its per-minute limit, spread over the target's servers."""
    # Idle connections are dropped by the client before the server's 5 s keep-alive ends:
    # otherwise a request can race the server closing the connection (a client's problem,
    # which real clients retry, and not what this measures).
    limits = httpx.Limits(max_connections=IN_FLIGHT, max_keepalive_connections=IN_FLIGHT,
                          keepalive_expiry=2.0)  # fmt: skip
    clients = [httpx.AsyncClient(base_url=b, limits=limits, timeout=30) for b in target.bases]
    start = time.monotonic()
    slots = asyncio.Semaphore(IN_FLIGHT)
    in_flight: set[asyncio.Task[None]] = set()

    async def one(plan: str, client: httpx.AsyncClient, path: str) -> None:
        try:
            sent = time.monotonic()
            try:
                answer = await client.get(
                    path, headers={"Authorization": f"Bearer {target.keys[plan]}"}
                )
                status, cached = answer.status_code, answer.headers.get("x-cache") == "HIT"
            except httpx.TransportError:
                status, cached = 599, False  # the connection failed: counted as a 5xx
            target.calls.append(Call(plan, sent, time.monotonic(), status, cached))
        finally:
            slots.release()

    async def key_loop(plan: str, limit: int, n: int) -> None:
        rng = random.Random(seed * 100 + n)
        interval = 60.0 / (10 * limit)
        next_at = start + rng.random() * interval
        while next_at < start + seconds:
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            await slots.acquire()
            if time.monotonic() >= start + seconds:
                slots.release()
                break
            client = clients[rng.randrange(len(clients))]
            task = asyncio.create_task(one(plan, client, _paths(rng)))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
            next_at += interval * (0.5 + rng.random())

    await asyncio.gather(*(key_loop(p, lim, n) for n, (p, lim) in enumerate(PLANS.items())))
    await asyncio.gather(*in_flight)
    target.offered = sum(10 * limit * seconds / 60 for limit in PLANS.values())
    for client in clients:
        await client.aclose()


def _over_admitted(calls: list[Call], limit: int, skip: list[tuple[float, float]]) -> int:
    """Counted answers that must have been decided inside one 60 s window, beyond the limit.

    Answer j was decided somewhere in [sent_j, received_j]; all the answers sent at or after
    answer i was sent and received within 60 s of that were decided in [sent_i, sent_i + 60].
    An answer that may have been decided in a `skip` stretch (under way during it) is left out.
    """
    counted = sorted(
        (c for c in calls if 200 <= c.status < 400 and not c.cached
         and not any(c.send <= b and c.receive >= a for a, b in skip)),
        key=lambda c: c.send,
    )  # fmt: skip
    worst = 0
    for i, first in enumerate(counted):
        end = first.send + 60.0
        inside = 0
        for later in counted[i:]:
            if later.send > end:
                break
            inside += later.receive <= end
        worst = max(worst, inside - limit)
    return worst


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


@contextlib.contextmanager
def _serving(target: Target) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for _ in range(target.servers):
            base, process = stack.enter_context(serving_process(target.env, workers=2))
            target.bases.append(base)
            target.processes.append(process)
        yield


def _memory(target: Target, at_end: bool) -> None:
    for process in target.processes:
        for pid in _workers(process.pid):
            start, _ = target.memory.get(pid, (0, 0))
            target.memory[pid] = (start, _rss_kb(pid)) if at_end else (_rss_kb(pid), 0)


def _final_usage(target: Target) -> None:
    for plan, secret in target.keys.items():
        answer = httpx.get(target.bases[0] + "/v1/auth/status",
                           headers={"Authorization": f"Bearer {secret}"})  # fmt: skip
        target.usage[plan] = answer.json()["data"]["usage"]["day"]["used"]


async def _faults(target: Target, seconds: float, proxy: Proxy, redis: RedisServer) -> None:
    """PostgreSQL cut for 10 s a third of the way in, Redis killed for 10 s two thirds in."""
    start = time.monotonic()
    await asyncio.sleep(seconds / 3)
    down = time.monotonic()
    await asyncio.to_thread(proxy.cut)
    await asyncio.sleep(10)
    await asyncio.to_thread(proxy.restore)
    target.outages.append(("PostgreSQL", down, time.monotonic()))
    await asyncio.sleep(max(0.0, start + seconds * 2 / 3 - time.monotonic()))
    down = time.monotonic()
    await asyncio.to_thread(redis.kill)
    await asyncio.sleep(10)
    await asyncio.to_thread(redis.start)
    target.outages.append(("Redis", down, time.monotonic()))


async def _run(targets: list[Target], seconds: float, faults: tuple[Any, ...] | None) -> None:
    jobs = [_drive(t, seconds, seed) for seed, t in enumerate(targets, 1)]
    if faults is not None:
        jobs.append(_faults(*faults))
    await asyncio.gather(*jobs)


def judge(target: Target) -> dict[str, Any]:
    statuses = Counter(c.status for c in target.calls)
    redis_gaps = [(a, b + 60.0) for what, a, b in target.outages if what == "Redis"]
    over = {plan: _over_admitted([c for c in target.calls if c.key == plan], limit, redis_gaps)
            for plan, limit in PLANS.items()}  # fmt: skip
    counted = {plan: sum(1 for c in target.calls if c.key == plan and 200 <= c.status < 400
                         and not c.cached) for plan in PLANS}  # fmt: skip
    # A 503 belongs to the outage when the request was under way during it (sent before
    # the cut and answered after it counts), or up to 5 s after it (pools reconnecting).
    pg = [(a, b + 5.0) for what, a, b in target.outages if what == "PostgreSQL"]
    unexpected_5xx = sum(
        1 for c in target.calls
        if c.status >= 500
        and not (c.status == 503 and any(c.send <= b and c.receive >= a for a, b in pg))
    )  # fmt: skip
    latencies = [c.receive - c.send for c in target.calls]
    return {
        "target": target.name,
        "requests (of offered)": f"{len(target.calls)} ({len(target.calls) / target.offered:.0%})",
        "2xx": sum(n for s, n in statuses.items() if 200 <= s < 300),
        "hits": sum(1 for c in target.calls if c.cached),
        "4xx (not 429)": sum(n for s, n in statuses.items() if 400 <= s < 500 and s != 429),
        "429": statuses[429],
        "503 in outages": sum(n for s, n in statuses.items() if s >= 500) - unexpected_5xx,
        "other 5xx": unexpected_5xx,
        "over-admitted": sum(over.values()),
        "lost or doubled": None if target.outages else sum(
            abs(counted[p] - target.usage.get(p, counted[p])) for p in PLANS),
        "p50 ms": round(_percentile(latencies, 0.50) * 1000, 1),
        "p99 ms": round(_percentile(latencies, 0.99) * 1000, 1),
        "worker RSS MB start -> end": ", ".join(
            f"{a / 1024:.0f} -> {b / 1024:.0f}" for a, b in target.memory.values()),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--faults", action="store_true", help="cut PostgreSQL, kill Redis")
    parser.add_argument("--smoke", action="store_true", help="20 s, no faults (make test)")
    parser.add_argument(
        "--write-docs", action="store_true", help="the table into docs/reliability.md"
    )
    args = parser.parse_args(argv)  # fmt: skip
    seconds = 20.0 if args.smoke else args.seconds
    folder = Path(tempfile.mkdtemp(prefix="soak-"))
    schema = "soak_" + os.urandom(4).hex()
    redis = RedisServer().start()
    proxy = Proxy(("127.0.0.1", 5432))
    proxy.restore()
    embedded_url = str(folder / "propdata.db")
    pg_url = PG_URL.replace("127.0.0.1:5432", f"127.0.0.1:{proxy.port}")
    scaleout_url = f"{pg_url}?search_path={schema}"
    subprocess.run(["psql", PG_URL, "-qc", f"CREATE SCHEMA {schema}"], check=True)
    env = {"PROPDATA_AS_OF": AS_OF.isoformat(), "PROPDATA_CACHE_TTL": "30"}
    targets = [
        Target("embedded, 1 x 2 workers", {**env, "PROPDATA_DATABASE_URL": embedded_url}, 1),
        Target("PostgreSQL + Redis, 2 x 2 workers",
               {**env, "PROPDATA_DATABASE_URL": scaleout_url, "PROPDATA_REDIS_URL": redis.url}, 2),
    ]  # fmt: skip
    try:
        for target in targets:
            url = target.env["PROPDATA_DATABASE_URL"]
            asyncio.run(_build(url))
            target.keys = asyncio.run(_keys(url))
        with contextlib.ExitStack() as stack:
            for target in targets:
                stack.enter_context(_serving(target))
            time.sleep(2.0)  # the search indexes build
            for target in targets:
                _memory(target, at_end=False)
            faults = (targets[1], seconds, proxy, redis) if args.faults else None
            started = time.monotonic()
            asyncio.run(_run(targets, seconds, faults))
            took = time.monotonic() - started
            for target in targets:
                _memory(target, at_end=True)
                _final_usage(target)
    finally:
        proxy.close()
        redis.kill()
        subprocess.run(["psql", PG_URL, "-qc", f"DROP SCHEMA IF EXISTS {schema} CASCADE"])
    results = [judge(t) for t in targets]
    table = render(results, took, args)
    print(table)
    log = folder / "calls.json"
    log.write_text(json.dumps({t.name: {"outages": t.outages, "calls": [
        (c.key, round(c.send - started, 4), round(c.receive - started, 4), c.status, c.cached)
        for c in t.calls]} for t in targets}))  # fmt: skip
    print(f"every request: {log}", file=sys.stderr)
    if args.write_docs:
        write_docs(table)
    bad = any(r["other 5xx"] or r["over-admitted"] or r["lost or doubled"] for r in results)
    return 1 if bad else 0


def render(results: list[dict[str, Any]], took: float, args: argparse.Namespace) -> str:
    head = list(results[0])
    lines = [
        "## Soak (make soak)",
        "",
        f"`{' '.join(['bench/soak.py', *sys.argv[1:]])}`, {took:.0f} s, commit"
        f" {_commit()}, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; free, developer and pro"
        " keys each driven at ten times their per-minute limit"
        + (", PostgreSQL cut for 10 s and Redis killed for 10 s on the scale-out target"
           if args.faults else "") + ".",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]  # fmt: skip
    for r in results:
        lines.append("| " + " | ".join("—" if r[h] is None else str(r[h]) for h in head) + " |")
    return "\n".join(lines) + "\n"


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True)  # fmt: skip
    return done.stdout.strip() or "unknown"


END = "<!-- end of the soak table -->"


def write_docs(table: str) -> None:
    text = DOCS.read_text() if DOCS.exists() else "# Reliability\n\n" + END + "\n"
    if "## Soak (make soak)" in text:
        before = text.split("## Soak (make soak)")[0]
        after = text.split(END, 1)[1] if END in text else ""
        text = before + table + END + after
    else:
        text = text.replace(END, table + END)
    DOCS.write_text(text)


if __name__ == "__main__":
    raise SystemExit(main())

"""Saved searches' events on the make bench store: the producer's matching, a commit's way to
its webhook, deliveries beside the search mix, the event log's pages, idle streams, an
account's streams past its cap and a long page of saved searches.

    .venv/bin/python bench/events_bench.py --properties 20000 --smoke
    .venv/bin/python bench/events_bench.py --properties 1000000      # what make bench runs

On the make bench store (bench/.data/sqlite-p{N}-s7-2026-11-21, built when missing):

1. **Matching**: `events.produce.evaluate`, the producer's pass over a claimed batch, on
   RECORDS records of the store each changed (bench/match_rate.py's changes: a price cut, a
   sale, a bedroom more, a new listing) against SEARCHES saved searches of OWNERS owners
   whose filters are the make bench search mix's (two thirds) and radius mix's (a third);
   the median of a few runs, and the matching's share (the batches and `matches` alone).
2. **Commit to first delivery**: on a copy of the store served by `propdata serve` (whose
   `propdata deliver` process runs a producer and the dispatcher), one key, one saved search
   (`status=forSale`) and one webhook endpoint at a local receiver (bench/webhooks.py's);
   `propdata data import --follow` reads a file to which one listing is appended at a time,
   a random 0.5-1.5 s after the previous one was delivered. A read-only connection polls for
   the record every 2 ms (its commit); the latency is the receiver's first POST of one of
   the record's events less that commit.
3. **Deliveries beside the search mix**: on the same server, three more endpoints of the
   same owner; events enough for 1.5 times the target rate over a wrk run are committed to
   the server's event log (as the producer commits them) and wrk drives the search mix at
   half its saturated rate (the warm-up's rate, saturated; each connection then pauses after
   an answer, the pause set by a short run), while the server's deliverer sends them. POSTs a second from the first to the
   last that arrived during the run, the search mix's p50 and p99 beside them, and the rate
   of what was left once the run ended (the dispatcher alone).
4. **Event log pages**: bench/event_log.py (`EventRepository.page` from random cursors of
   one owner's log of LOG_EVENTS events among other owners'), embedded and, with
   --scaleout, PostgreSQL.
5. **Idle streams**: bench/idle_streams.py (STREAMS idle `GET /v1/events/stream` on one
   worker: its Pss growth, and one event per owner reaching every stream).
6. **Streams of one account past its cap**: bench/stream_caps.py (1,000 streams of one
   Enterprise account asked for: 100 open, the rest 429, /health beside them).
7. **Saved searches listed**: bench/search_counts.py (500 searches of 1,000 ids each, on a
   copy of the store: the listing's and /health's latencies side by side).

`bench/run.py` runs the same (`measure`) and puts the rows in the make bench table (`rows`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import sqlite3
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import msgspec

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bench_data  # noqa: E402
import follow  # noqa: E402

OWNERS = 200
TARGET_MATCH_S = 2.0
TARGET_LAG_P50_S = 1.0
TARGET_LAG_P99_S = 5.0
TARGET_POSTS = 500.0
TARGET_SEARCH_P99_MS = 30.0
TARGET_PAGE_P99_MS = 10.0
TARGET_STREAMS_MB = 50.0
ENDPOINTS = 4
LOG_SCHEMA = "bench_events_log"
"""The PostgreSQL schema of the event log row (--scaleout)."""


@dataclass
class Sizes:
    records: int
    searches: int
    runs: int
    lags: int
    log_events: int
    log_pages: int
    streams: int
    idle: float
    caps: int
    """Event streams one account asks for (row 17)."""


def sizes(smoke: bool) -> Sizes:
    if smoke:
        return Sizes(records=2_000, searches=200, runs=3, lags=5, log_events=20_000,
                     log_pages=500, streams=50, idle=2.0, caps=200)  # fmt: skip
    return Sizes(records=10_000, searches=1_000, runs=5, lags=60, log_events=1_000_000,
                 log_pages=2_000, streams=1_000, idle=20.0, caps=1_000)  # fmt: skip


@dataclass
class Matching:
    records: int
    searches: int
    times: list[float]
    events: int
    matching_s: float
    """Seconds of the batches and `matches` alone, without making the events."""

    @property
    def median(self) -> float:
        return statistics.median(self.times)


@dataclass
class Lag:
    lags: list[float] = field(default_factory=list)
    """Seconds from each record's commit to its first POST at the receiver."""
    missed: int = 0
    """Records whose events did not reach the receiver within 30 s."""


@dataclass
class Deliveries:
    events: int
    endpoints: int
    posts: int = 0
    """POSTs received while the search mix ran."""
    seconds: float = 0.0
    """From the first POST to the last one received while the search mix ran."""
    delivered: int = 0
    """POSTs received in all, by the end of the wait after the run (60 s at most)."""
    alone: float = 0.0
    """POSTs a second after the search mix ended (from its end to the last POST)."""
    saturated: float = 0.0
    """The search mix's answers a second at saturation (the warm-up); the measured run asks
    at half that."""
    search: Any = None

    @property
    def rate(self) -> float:
        return self.posts / self.seconds if self.seconds else 0.0


@dataclass
class EventsRun:
    sizes: Sizes
    matching: Matching | None = None
    lag: Lag | None = None
    deliveries: Deliveries | None = None
    logs: dict[str, Any] = field(default_factory=dict)
    """bench/event_log.py's figures by store label."""
    streams: Any = None
    caps: Any = None
    """bench/stream_caps.py's figures."""
    counts: Any = None
    """bench/search_counts.py's figures."""


def _q(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


# -- 1. matching --------------------------------------------------------------------------


def store_rows(db_path: Path, count: int, seed: int) -> list[dict[str, Any]]:
    """`count` random rows of the store as change images hold them (every column but
    content_hash)."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        top = conn.execute("SELECT max(rowid) FROM properties").fetchone()[0] or 0
        chosen = random.Random(seed).sample(range(1, top + 1), min(count, top))
        found: list[dict[str, Any]] = []
        for start in range(0, len(chosen), 500):
            part = chosen[start : start + 500]
            marks = ", ".join("?" for _ in part)
            for row in conn.execute(f"SELECT * FROM properties WHERE rowid IN ({marks})", part):
                image = dict(row)
                image.pop("content_hash", None)
                found.append(image)
        return found
    finally:
        conn.close()


def saved_filters(reqs: Any, count: int) -> list[Any]:
    """`count` saved searches' filters: the search mix's (two thirds) and the radius mix's
    radius searches (a third), as a saved search holds them (no page, sort or fields)."""
    from propdata.saved_searches.filters import NOT_FILTERS, query_of

    radii = [s for s in reqs.radii if "radius" in s.params]
    plain = reqs.searches
    found = []
    for n in range(count):
        source = radii[(n // 3) % len(radii)] if n % 3 == 0 else plain[n % len(plain)]
        params = {k: v for k, v in source.params.items() if k not in NOT_FILTERS}
        found.append(query_of(params).filters)
    return found


def matching(db_path: Path, reqs: Any, size: Sizes, seed: int) -> Matching:
    """Row 1 (see the module's docstring)."""
    import match_rate

    from propdata.events.produce import evaluate
    from propdata.search.match import Batch, matches

    changed = match_rate.changes(store_rows(db_path, size.records, seed))
    saved = match_rate.watches(saved_filters(reqs, size.searches), OWNERS)
    times, events = [], 0
    for _ in range(size.runs):
        started = time.perf_counter()
        events = len(evaluate(saved, changed))
        times.append(time.perf_counter() - started)
    # The numpy part alone (both batches, every search both sides): the rest of a pass is
    # each event's making, so its cost follows the number of events.
    started = time.perf_counter()
    before = Batch.of([c.before or {} for c in changed])
    after = Batch.of([c.after or {} for c in changed])
    for watch in saved:
        matches(watch.filters, before)
        matches(watch.filters, after)
    alone = time.perf_counter() - started
    return Matching(len(changed), len(saved), times, events, alone)


# -- 2 and 3. a served copy -----------------------------------------------------------------


def listings(count: int, seed: int, as_of: dt.date) -> list[tuple[str, bytes]]:
    """`count` synthetic records listed for sale (ids evt-0000001...), as JSON lines."""
    from propdata.ingest import synthetic

    encode = msgspec.json.Encoder().encode
    found: list[tuple[str, bytes]] = []
    generated = synthetic.generate(count * 20 + 100, seed, as_of)
    for _, record in generated:
        if record.status != "forSale":
            continue
        pid = f"evt-{len(found) + 1:07d}"
        found.append((pid, encode(msgspec.structs.replace(record, id=pid)) + b"\n"))
        if len(found) == count:
            return found
    raise RuntimeError(f"fewer than {count} listings for sale among the generated records")


def commit_to_delivery(store: Path, stamps: Path, folder: Path, count: int, args: Any) -> Lag:
    """Row 2: `count` listings, one at a time, through `data import --follow`."""
    from harness import log

    from propdata.config import accounts_url
    from webhooks import received

    lines = listings(count + 1, args.seed + 20, args.as_of)
    feed = folder / "listings.jsonl"
    feed.write_bytes(b"")
    follower = follow.start_follower(store, feed, folder / "follower.log", args.as_of)
    data = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    accounts = sqlite3.connect(f"file:{accounts_url(str(store))}?mode=ro", uri=True)
    rng = random.Random(args.seed)
    result = Lag()
    try:
        time.sleep(3)  # its start (imports, store open) is not part of the run
        with feed.open("ab", buffering=0) as out:
            for n, (pid, line) in enumerate(lines):
                time.sleep(rng.uniform(0.5, 1.5))
                seen = len(received(stamps))
                top = accounts.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0]
                out.write(line)
                deadline = time.monotonic() + 30
                while not data.execute("SELECT 1 FROM properties WHERE id = ?", (pid,)).fetchone():
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{pid} was not committed within 30 s; see {folder}")
                    time.sleep(0.002)
                committed = time.time()
                lag = None
                while lag is None and time.monotonic() < deadline:
                    time.sleep(0.005)
                    ids = {e for (e,) in accounts.execute(
                        "SELECT id FROM events WHERE seq > ?", (top,))}  # fmt: skip
                    got = [t for t, e in received(stamps)[seen:] if e in ids]
                    lag = min(got) - committed if got else None
                if n == 0:
                    continue  # the first one wakes everything up: not counted
                if lag is None:
                    result.missed += 1
                else:
                    result.lags.append(lag)
    finally:
        follow.stop_follower(follower)
        data.close()
        accounts.close()
    log(f"commit to first delivery: {len(result.lags)} records, p50"
        f" {_q(result.lags, 0.5):.3f} s, p99 {_q(result.lags, 0.99):.3f} s"
        f"{f', {result.missed} missed' if result.missed else ''}")  # fmt: skip
    return result


async def _commit_events(url: str, owner: str, search_id: str, count: int) -> None:
    """`count` events of `owner` in the event log, as the producer commits them."""
    from propdata.events.produce import new_id
    from propdata.events.repository import EventRepository, NewEvent
    from propdata.kit.clock import iso_ms
    from propdata.kit.db import connect

    db = await connect(url, private=True)
    try:
        for start in range(0, count, 1_000):
            now = iso_ms(time.time())
            rows = []
            for n in range(start, min(count, start + 1_000)):
                event_id = new_id()
                body = msgspec.json.encode({"id": event_id, "type": "property.listed",
                                            "timestamp": now, "sequence": 0,
                                            "data": {"searchId": search_id, "n": n}})  # fmt: skip
                rows.append(NewEvent(event_id, owner, "property.listed", search_id, None, now,
                                     body.decode()))  # fmt: skip
            async with db.transaction():
                await EventRepository(db).insert_events(rows)
    finally:
        await db.close()


def _half_rate_delay(server: Any, reqs: Any, args: Any, key: str, rate: float) -> int:
    """The pause after each answer (ms) at which wrk's connections ask about `rate` a second:
    one short run at the pause that ignores the answers' own time, then the pause less that
    time (rate = connections / (pause + answer time))."""
    import harness

    first = round(args.connections * 1000 / rate)
    server.wait_idle()
    probe = harness.wrk(server.base, reqs.search, max(2.0, args.warmup), args, key,
                        delay_ms=first)  # fmt: skip
    answer_ms = args.connections * 1000 / max(probe.rps, 1.0) - first
    return max(1, round(args.connections * 1000 / rate - answer_ms))


def deliveries(server: Any, store: Path, stamps: Path, owner: str, search_id: str, key: str,
               reqs: Any, args: Any) -> Deliveries:  # fmt: skip
    """Row 3: the server's dispatcher delivering while wrk drives the search mix."""
    import harness
    from harness import log

    from propdata.config import accounts_url
    from webhooks import received

    events = int(TARGET_POSTS * args.duration * 1.5 / ENDPOINTS) + 1
    result = Deliveries(events, ENDPOINTS)
    server.wait_idle()
    warm = harness.wrk(server.base, reqs.search, args.warmup, args, key)
    result.saturated = warm.rps
    delay_ms = _half_rate_delay(server, reqs, args, key, warm.rps / 2)
    server.wait_idle()
    seen = len(received(stamps))
    asyncio.run(_commit_events(accounts_url(str(store)), owner, search_id, events))
    started = time.time()
    load = harness.wrk(
        server.base, reqs.search, args.duration, args, key, server=server, delay_ms=delay_ms
    )
    ended = time.time()
    load.warmup_requests = warm.requests
    result.search = load
    during = [t for t, _ in received(stamps)[seen:] if started <= t <= ended]
    if during:
        result.posts, result.seconds = len(during), during[-1] - during[0]
    deadline = time.monotonic() + 60
    while len(received(stamps)) - seen < events * ENDPOINTS and time.monotonic() < deadline:
        time.sleep(0.2)
    got = received(stamps)[seen:]
    result.delivered = len(got)
    after = [t for t, _ in got if t > ended]
    if len(after) >= 50:
        result.alone = len(after) / (after[-1] - ended)
    log(f"deliveries beside the search mix at half its {warm.rps:,.0f} rps: {result.rate:,.0f} POSTs/s ({result.posts:,} in"
        f" {result.seconds:.1f} s; {result.delivered:,} of {events * ENDPOINTS:,} in all, at"
        f" {result.alone:,.0f} POSTs/s once the mix ended); search mix {load.rps:,.0f} rps, p99"
        f" {load.ms('p99'):.2f} ms")  # fmt: skip
    return result


def served(base_store: Path, reqs: Any, args: Any, logs: Path, size: Sizes,
           result: EventsRun) -> None:  # fmt: skip
    """Rows 2 and 3 on a copy of `base_store`, with their own server and receiver."""
    import harness

    import webhooks
    from propdata.accounts.keys import keys_of
    from propdata.accounts.owners import owner_of

    folder = args.folder / "events"
    store = follow.scratch_store(base_store, folder)
    key = asyncio.run(bench_data.create_key(str(store)))

    async def owner() -> str:
        async with keys_of(str(store)) as keys:
            return owner_of(await keys.find(key))

    stamps = folder / "received.txt"
    receiver, port = webhooks.start_receiver(stamps)
    env = {"PROPDATA_DATABASE_URL": str(store),
           "PROPDATA_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32"}  # fmt: skip
    try:
        with (harness.propdata_server("propdata-events", env, 0, args, logs) as server,
              httpx.Client(base_url=server.base, timeout=30,
                           headers={"Authorization": f"Bearer {key}"}) as client):  # fmt: skip
            made = client.post("/v1/searches", json={"name": "bench listings",
                                                     "filters": {"status": "forSale"}})  # fmt: skip
            made.raise_for_status()
            search_id = made.json()["data"]["id"]
            for n in range(ENDPOINTS):
                hook = client.post("/v1/webhooks", json={"url": f"http://127.0.0.1:{port}/h{n}"})
                hook.raise_for_status()
                if n == 0:  # row 2 has one endpoint; row 3 all of them
                    result.lag = commit_to_delivery(store, stamps, folder, size.lags, args)
            result.deliveries = deliveries(server, store, stamps, asyncio.run(owner()),
                                           search_id, key, reqs, args)  # fmt: skip
    finally:
        receiver.kill()
        receiver.join()


# -- 4 and 5 ----------------------------------------------------------------------------------


def event_logs(args: Any, size: Sizes) -> dict[str, Any]:
    """Row 4 on the embedded store, and on PostgreSQL with --scaleout."""
    import event_log
    from harness import PG_URL, log, scaleout_available

    urls = {"embedded": str(args.folder / f"events-log-{size.log_events}.db")}
    if args.scaleout and not scaleout_available():
        asyncio.run(_schema(PG_URL, f"CREATE SCHEMA IF NOT EXISTS {LOG_SCHEMA}"))
        urls["scale-out"] = f"{PG_URL}?search_path={LOG_SCHEMA}"
    found = {}
    try:
        for label, url in urls.items():
            figures = asyncio.run(event_log.measure(url, size.log_events, size.log_pages))
            log(f"event log ({label}): filled in {figures.fill_s:.1f} s; {size.log_pages:,} pages,"
                f" p50 {figures.ms(0.5):.2f} ms, p99 {figures.ms(0.99):.2f} ms")  # fmt: skip
            found[label] = figures
    finally:
        if "scale-out" in urls and args.smoke:
            asyncio.run(_schema(PG_URL, f"DROP SCHEMA IF EXISTS {LOG_SCHEMA} CASCADE"))
    return found


async def _schema(url: str, statement: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


def measure(db_path: Path, reqs: Any, args: Any, logs: Path) -> EventsRun:
    """Every events figure; `reqs` and `args` are bench/run.py's (request lists, wrk
    settings, --smoke, --scaleout)."""
    import idle_streams
    import search_counts
    import stream_caps
    from harness import log

    size = sizes(args.smoke)
    result = EventsRun(size)
    result.matching = matching(db_path, reqs, size, args.seed)
    log(f"matching {result.matching.records:,} changed records against"
        f" {result.matching.searches:,} saved searches: median {result.matching.median:.2f} s"
        f" of {size.runs} ({result.matching.events:,} events)")  # fmt: skip
    served(db_path, reqs, args, logs, size, result)
    result.logs = event_logs(args, size)
    result.streams = idle_streams.measure(size.streams, size.idle, lambda line: log(line.strip()))
    result.caps = stream_caps.measure(size.caps, say=lambda line: log(line.strip()))
    result.counts = search_counts.measure_store(db_path, args.seed, args.as_of,
                                                lambda line: log(line.strip()))  # fmt: skip
    return result


def rows(result: EventsRun) -> list[Any]:
    """The make bench table's rows of `result`."""
    from harness import Row

    out: list[Any] = []
    m = result.matching
    if m is not None:
        out.append(Row(
            f"12. events: {m.records:,} changed records against {m.searches:,} saved searches",
            "embedded", result=f"matching {m.matching_s:.2f} s; the producer's whole pass"
            f" (matching, then making the {m.events:,} events it found) median {m.median:.2f} s"
            f" of {len(m.times)} runs (fastest {min(m.times):.2f} s); {OWNERS} owners, a third"
            " radius",
            target=f"matching ≤ {TARGET_MATCH_S:g} s", met=m.matching_s <= TARGET_MATCH_S,
        ))  # fmt: skip
    lag = result.lag
    if lag is not None:
        p50, p99 = _q(lag.lags, 0.5), _q(lag.lags, 0.99)
        out.append(Row(
            "13. events: commit to first delivery attempt, idle", "embedded",
            p50_ms=p50 * 1000, p99_ms=p99 * 1000,
            result=f"{len(lag.lags)} listings through `data import --follow`, a random"
            f" 0.5-1.5 s apart; max {max(lag.lags, default=float('nan')):.2f} s"
            f"{f'; {lag.missed} not delivered within 30 s' if lag.missed else ''}",
            target=f"p50 ≤ {TARGET_LAG_P50_S:g} s, p99 ≤ {TARGET_LAG_P99_S:g} s",
            met=bool(lag.lags) and not lag.missed and p50 <= TARGET_LAG_P50_S
            and p99 <= TARGET_LAG_P99_S,
        ))  # fmt: skip
    d = result.deliveries
    if d is not None and d.search is not None:
        p99 = d.search.ms("p99")
        out.append(Row(
            "14. webhook deliveries beside the search mix at half its saturated rate",
            "embedded", d.search.rps, d.search.ms("p50"), p99,
            result=f"{d.rate:,.0f} POSTs/s ({d.posts:,} in {d.seconds:.1f} s to {d.endpoints}"
            f" endpoints), {d.alone:,.0f} POSTs/s once the mix ended ({d.delivered:,} of"
            f" {d.events * d.endpoints:,} delivered in all); rps, p50 and p99 are the search"
            f" mix's, asked at half of its {d.saturated:,.0f} rps saturated",
            target=f"≥ {TARGET_POSTS:,.0f} POSTs/s, search p99 ≤ {TARGET_SEARCH_P99_MS:g} ms",
            met=d.rate >= TARGET_POSTS and p99 <= TARGET_SEARCH_P99_MS,
            errors=d.search.failed,
        ))  # fmt: skip
    for label, figures in result.logs.items():
        out.append(Row(
            f"15. event log page by cursor, {figures.events:,} events of one owner", label,
            p50_ms=figures.ms(0.5), p99_ms=figures.ms(0.99),
            result=f"{len(figures.times):,} pages of {figures.limit} from random cursors"
            f" (up to page {figures.events // figures.limit:,}); log filled in"
            f" {figures.fill_s:.1f} s (0 when kept from an earlier run)",
            target=f"p99 ≤ {TARGET_PAGE_P99_MS:g} ms", met=figures.ms(0.99) <= TARGET_PAGE_P99_MS,
        ))  # fmt: skip
    s = result.streams
    if s is not None:
        grew = s.grew_mb()
        out.append(Row(
            f"16. {s.streams:,} idle event streams on one worker", "embedded",
            result=f"Pss {grew:+.1f} MB, Rss {s.grew_mb('Rss'):+.1f} MB over {s.idle_s:g} s"
            f" idle ({s.idle_cpu_s:.2f} CPU s); one event per owner reached every stream in"
            f" {s.reached_s:.2f} s",
            target=f"≤ {TARGET_STREAMS_MB:g} MB more", met=grew <= TARGET_STREAMS_MB,
        ))  # fmt: skip
    if result.caps is not None:
        import stream_caps

        out += stream_caps.rows(result.caps)
    if result.counts is not None:
        import search_counts

        out += search_counts.rows(result.counts)
    return out


def main(argv: list[str] | None = None) -> int:
    import harness

    p = harness.script_parser(__doc__)
    p.add_argument("--properties", type=int, default=1_000_000)
    p.add_argument("--smoke", action="store_true", help="small sizes (seconds)")
    p.add_argument("--scaleout", action="store_true", help="the event log on PostgreSQL too")
    p.add_argument("--duration", type=float, help="seconds of wrk, row 3 (default 20; smoke 2)")
    p.add_argument("--warmup", type=float, help="seconds of warm-up (default 5; smoke 1)")
    args = harness.served_args(p, argv)
    args.duration = args.duration or (2.0 if args.smoke else 20.0)
    args.warmup = args.warmup if args.warmup is not None else (1.0 if args.smoke else 5.0)
    args.searches, args.cursor_page = (300 if args.smoke else 40_000), 10_000
    return harness.served_run(
        "events_bench.py", "events", argv, args, measure, rows, judged=not args.smoke
    )


if __name__ == "__main__":
    sys.exit(main())

"""Webhook deliveries: throughput to a local receiver, and latency from an event's commit to
its first delivery attempt on an idle service.

    .venv/bin/python bench/webhooks.py [--store sqlite|postgresql] [--events 5000]
        [--endpoints 4] [--latency-events 200]

Throughput: `--events` events are committed for one owner with `--endpoints` endpoints, all
pointing at a receiver in a process of its own (a bare asyncio HTTP/1.1 server answering 200,
so it costs the dispatcher's cores little); one dispatcher (`Dispatcher.run`, as a server
process runs it) delivers them, and POSTs a second is the deliveries over the seconds from
the first to the last one received. On a shared machine that rate is the machine's, so the
dispatcher's own CPU seconds are printed too: POSTs a CPU second is what one idle core
sustains whatever else runs.

Latency: on the same store, idle, events are committed one at a time as the producer commits
them (`EventRepository.insert_events` in a transaction, then `notify("events")` on the
store's wake-ups), a random 0.5-1.5 s apart; each one's latency is the time from its commit
to the receiver getting its POST. p50 and p99 are printed. This is the dispatcher's share of
the contract's "from a commit to the first delivery attempt"; the producer's share (a load's
commit to its events' commit) is measured beside the producer.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from propdata.accounts.owners import owner_of  # noqa: E402
from propdata.accounts.schemas import ApiKey  # noqa: E402
from propdata.events.repository import EventRepository, NewEvent  # noqa: E402
from propdata.kit.db import Database, connect  # noqa: E402
from propdata.kit.wakeup import open_wakeups  # noqa: E402
from propdata.migrations.schema import migrate_accounts  # noqa: E402
from propdata.webhooks.addresses import Gate  # noqa: E402
from propdata.webhooks.dispatcher import Dispatcher  # noqa: E402
from propdata.webhooks.schemas import NewEndpoint, iso  # noqa: E402
from propdata.webhooks.service import WebhookService  # noqa: E402

PG_URL = os.environ.get("PROPDATA_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
KEY = ApiKey(id="key_bench", name="bench", prefix="pmd_live_bnch", plan="enterprise",
             status="active", per_minute=1, daily=None, default_page_size=10,
             max_page_size=100, saved_searches=10_000, webhook_endpoints=100,
             events_per_day=None, created_at="2026-11-25T00:00:00Z")  # fmt: skip
OWNER = owner_of(KEY)


def receiver(port_out: multiprocessing.connection.Connection, stamps: str) -> None:
    """A bare HTTP/1.1 receiver: answers 200 to every POST and appends `<time> <webhook-id>`
    lines to the file `stamps`."""

    out = open(stamps, "a", buffering=1)  # noqa: SIM115 (open for the process's life)

    async def serve() -> None:
        async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while True:
                    head = await reader.readuntil(b"\r\n\r\n")
                    length, event = 0, ""
                    for line in head.split(b"\r\n"):
                        name, _, value = line.partition(b":")
                        if name.lower() == b"content-length":
                            length = int(value)
                        elif name.lower() == b"webhook-id":
                            event = value.strip().decode()
                    await reader.readexactly(length)
                    out.write(f"{time.time():.6f} {event}\n")
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                writer.close()

        server = await asyncio.start_server(one, "127.0.0.1", 0, backlog=1024)
        port_out.send(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    asyncio.run(serve())


def start_receiver(stamps: Path) -> tuple[multiprocessing.process.BaseProcess, int]:
    """`receiver` in a process of its own (spawned: the caller may hold threads), and its port."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=receiver, args=(child, str(stamps)), daemon=True)
    process.start()
    port: int = parent.recv()
    return process, port


def received(stamps: Path) -> list[tuple[float, str]]:
    """`(time, webhook-id)` of every POST the receiver has got so far, in order."""
    lines = stamps.read_text().split("\n") if stamps.exists() else []
    return [(float(t), e) for t, _, e in (line.partition(" ") for line in lines if line)]


async def _store(kind: str, folder: Path) -> Database:
    if kind == "sqlite":
        db = await connect(str(folder / "bench-accounts.db"))
    else:
        import asyncpg

        schema = f"bench_w{os.getpid()}"
        conn = await asyncpg.connect(PG_URL)
        await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}")
        await conn.close()
        db = await connect(f"{PG_URL}?search_path={schema}")
    await migrate_accounts(db)
    return db


async def _commit(db: Database, count: int, made: list[int]) -> list[str]:
    rows = []
    for _ in range(count):
        made[0] += 1
        event_id = f"evt_bench{made[0]:012d}"
        now = iso(time.time())
        body = msgspec.json.encode({"id": event_id, "type": "property.listed", "timestamp": now,
                                    "sequence": 0, "data": {"n": made[0]}}).decode()  # fmt: skip
        rows.append(NewEvent(event_id, OWNER, "property.listed", "srch_b", None, now, body))
    async with db.transaction():
        await EventRepository(db).insert_events(rows)
    return [row.id for row in rows]


async def main(args: argparse.Namespace) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-webhooks-"))
    stamps = folder / "received.txt"
    process, port = start_receiver(stamps)
    db = await _store(args.store, folder)
    wakeups = open_wakeups(db, None)
    gate = Gate(allowed=(ipaddress.ip_network("127.0.0.1/32"),))
    service = WebhookService(db, gate, wakeups)
    for n in range(args.endpoints):
        await service.create(KEY, NewEndpoint(url=f"http://127.0.0.1:{port}/hook{n}"))
    dispatcher = Dispatcher(db, gate, wakeups)
    made = [0]

    # Throughput: the events are committed first, then delivered as fast as they go.
    for start in range(0, args.events, 1000):
        await _commit(db, min(1000, args.events - start), made)
    want = args.events * args.endpoints
    cpu = time.process_time()
    task = asyncio.create_task(dispatcher.run())
    while len(received(stamps)) < want:  # noqa: ASYNC110 (another process writes the file)
        await asyncio.sleep(0.2)
    cpu = time.process_time() - cpu
    got = received(stamps)
    seconds = got[-1][0] - got[0][0]
    print(f"throughput ({args.store}): {len(got)} POSTs in {seconds:.2f} s ="
          f" {len(got) / seconds:,.0f} POSTs/s ({args.endpoints} endpoints, one dispatcher);"
          f" the dispatcher's process used {cpu:.2f} CPU s: {len(got) / cpu:,.0f} POSTs a"
          f" CPU second (the rate one idle core sustains; load average"
          f" {os.getloadavg()[0]:.1f})")  # fmt: skip

    # Latency: one event at a time on an idle service.
    lags: list[float] = []
    for _ in range(args.latency_events):
        await asyncio.sleep(random.uniform(0.5, 1.5))
        before = len(received(stamps))
        (event_id,) = await _commit(db, 1, made)
        committed = time.time()
        await wakeups.notify("events")
        while len(received(stamps)) < before + args.endpoints:  # noqa: ASYNC110 (as above)
            await asyncio.sleep(0.002)
        first = min(t for t, e in received(stamps)[before:] if e == event_id)
        lags.append(first - committed)
    lags.sort()
    p50 = statistics.median(lags)
    p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))]
    print(f"commit -> first delivery ({args.store}, {len(lags)} events, idle): "
          f"p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max {lags[-1] * 1000:.0f} ms")  # fmt: skip

    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await wakeups.close()
    await db.close()
    process.kill()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--endpoints", type=int, default=4)
    parser.add_argument("--latency-events", type=int, default=100)
    asyncio.run(main(parser.parse_args()))

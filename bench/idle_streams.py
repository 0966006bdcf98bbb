"""What idle event streams cost one worker: memory, CPU, and whether events still arrive.

    .venv/bin/python bench/idle_streams.py --streams 1000 --idle 20

Serves an empty SQLite store with `propdata serve --workers 1` (PROPDATA_MAX_CONNECTIONS
raised to twice the streams: they take half a worker's connections at most), makes one key per stream (each its own owner), and warms the
worker up with a few streams opened and closed. Then it opens --streams streams of
`GET /v1/events/stream` at once and leaves them idle for --idle seconds. Printed:

- the worker's Rss and Pss (/proc/<pid>/smaps_rollup) before the streams, with them all
  open and idle, and after they are closed;
- the worker's CPU seconds (user + system) over the idle period: the shared reader's ticks
  and the keep-alive comments, nothing per stream but the comment;
- the time from inserting one event per owner (one transaction) until every stream has
  received its own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from propdata.accounts.keys import CustomLimits, keys_of
from propdata.accounts.owners import owner_of
from propdata.config import accounts_url
from propdata.events.repository import EventRepository, NewEvent
from propdata.kit.db import connect
from propdata.migrations.schema import migrate, migrate_accounts

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import harness  # noqa: E402


def _memory_kb(pid: int) -> dict[str, int]:
    found: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("Rss", "Pss", "Anonymous"):
            found[name] = int(rest.split()[0])
    return found


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _show(label: str, kb: dict[str, int]) -> str:
    return (f"{label:<28} Rss {kb['Rss'] / 1024:7.1f} MB  Pss {kb['Pss'] / 1024:7.1f} MB"
            f"  anonymous {kb['Anonymous'] / 1024:7.1f} MB")  # fmt: skip


@dataclass
class StreamFigures:
    """What one run measured (memory in KB, from smaps_rollup)."""

    streams: int
    idle_s: float
    before: dict[str, int] = field(default_factory=dict)
    during: dict[str, int] = field(default_factory=dict)
    after: dict[str, int] = field(default_factory=dict)
    idle_cpu_s: float = 0.0
    reached_s: float = 0.0
    """Seconds from one event per owner's commit until every stream had its own."""

    def grew_mb(self, which: str = "Pss") -> float:
        return (self.during[which] - self.before[which]) / 1024


class Stream:
    """One open stream on a socket of its own (no HTTP client's per-connection weight)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int, secret: str) -> Stream:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            f"GET /v1/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {secret}\r\nAccept: text/event-stream\r\n\r\n".encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head[:200]
        return cls(reader, writer)

    async def next_event(self) -> bytes:
        while True:
            line = await self.reader.readline()
            if not line:
                raise ConnectionError("stream ended")
            if b"event: " in line:
                return line

    def close(self) -> None:
        self.writer.close()


async def _prepare(folder: Path, count: int) -> tuple[str, list[tuple[str, str]]]:
    url = str(folder / "propdata.db")
    db = await connect(url)
    await migrate(db)
    await db.close()
    made: list[tuple[str, str]] = []
    async with keys_of(url) as keys:
        for _ in range(count):
            key, secret = await keys.create("enterprise", None, CustomLimits(per_minute=100_000))
            made.append((owner_of(key), secret))
    return url, made


async def _produce(url: str, owners: list[str]) -> None:
    db = await connect(accounts_url(url), private=True)
    await migrate_accounts(db)
    stamp = time.time_ns()
    events = [
        NewEvent(f"evt_bench{stamp}_{n}", owner, "property.listed", "srch_bench", None,
                 "2026-11-26T00:00:00.000Z", '{"type":"property.listed"}')
        for n, owner in enumerate(owners)
    ]  # fmt: skip
    async with db.transaction():
        await EventRepository(db).insert_events(events)
    await db.close()


def _serve(url: str, streams: int) -> tuple[subprocess.Popen[bytes], int]:
    # Streams take at most half a worker's connections.
    limit = str(2 * streams + 100)
    return harness.serve_one({"PROPDATA_DATABASE_URL": url, "PROPDATA_MAX_CONNECTIONS": limit})


async def _bench(idle: float, url: str, keys: list[tuple[str, str]], pid: int, port: int,
                 say: Callable[[str], None]) -> StreamFigures:  # fmt: skip
    found = StreamFigures(len(keys), idle)
    # Warm up: the stream's code paths, the thread pool, the key cache.
    warm = await asyncio.gather(*(Stream.open(port, secret) for _, secret in keys[:20]))
    await asyncio.sleep(1)
    for stream in warm:
        stream.close()
    await asyncio.sleep(2)
    before = found.before = _memory_kb(pid)
    say(_show("before", before))

    started = time.monotonic()
    streams: list[Stream] = []
    for start in range(0, len(keys), 100):  # 100 at a time: the listen backlog
        streams += await asyncio.gather(
            *(Stream.open(port, secret) for _, secret in keys[start : start + 100])
        )
    say(f"opened {len(streams)} streams in {time.monotonic() - started:.1f} s")
    await asyncio.sleep(2)
    cpu = _cpu_seconds(pid)
    await asyncio.sleep(idle)
    idle_cpu = found.idle_cpu_s = _cpu_seconds(pid) - cpu
    during = found.during = _memory_kb(pid)
    say(_show(f"{len(streams)} streams, idle", during))
    say(f"worker CPU over {idle:.0f} s idle: {idle_cpu:.2f} s"
        f" ({100 * idle_cpu / idle:.1f} % of a core)")  # fmt: skip

    produced = time.monotonic()
    await _produce(url, [owner for owner, _ in keys])
    await asyncio.wait_for(asyncio.gather(*(s.next_event() for s in streams)), 60)
    found.reached_s = time.monotonic() - produced
    say(f"one event per owner reached all {len(streams)} streams in {found.reached_s:.2f} s")

    for stream in streams:
        stream.close()
    await asyncio.sleep(3)
    found.after = _memory_kb(pid)
    say(_show("after closing them", found.after))
    more = found.grew_mb()
    say(f"Pss with {len(streams)} idle streams: {more:+.1f} MB"
        f" ({more * 1024 / len(streams):.1f} KB a stream)")  # fmt: skip
    return found


def measure(streams: int, idle: float, say: Callable[[str], None] = print) -> StreamFigures:
    """The whole run on an empty store of its own; `say` reports each step."""
    with tempfile.TemporaryDirectory(prefix="propdata-streams-") as folder:
        url, keys = asyncio.run(_prepare(Path(folder), streams))
        server, port = _serve(url, streams)
        try:
            return asyncio.run(_bench(idle, url, keys, server.pid, port, say))
        finally:
            server.terminate()
            server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--idle", type=float, default=20.0, help="seconds left idle")
    args = parser.parse_args()
    measure(args.streams, args.idle, lambda line: print(line, flush=True))


if __name__ == "__main__":
    main()

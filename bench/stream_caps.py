"""One account asking for 1,000 event streams: its plan's open, the rest refused at once
(429), while /health answers beside them.

    .venv/bin/python bench/stream_caps.py --streams 1000 --at-once 10

Serves an empty SQLite store with `propdata serve --workers 1` (PROPDATA_MAX_CONNECTIONS at
its default, 500: streams may hold 250 of them) and makes one Enterprise key (100 open
streams). A probe asks `GET /health` on a connection of its own every 5 ms for the whole
run; meanwhile --streams `GET /v1/events/stream` of the key are asked for, each on a socket
of its own, --at-once at a time (each answer starts the next ask, as a client's pool of
connections would), those answered 200 held open. Printed: how
many opened and how many were refused (by status), how long until every one was answered,
and /health's p50, p99 and maximum while they were asked for and once they all stood.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from propdata.accounts.keys import CustomLimits, keys_of
from propdata.kit.db import connect
from propdata.migrations.schema import migrate
from propdata.plans import ENTERPRISE

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import harness  # noqa: E402

TARGET_HEALTH_P99_MS = 20.0
PROBE_EVERY = 0.005
"""Seconds between two /health probes."""


@dataclass
class CapFigures:
    """What one run measured."""

    asked: int
    at_once: int
    """Streams asked for at a time (each answer starts the next ask)."""
    opened: int = 0
    refused: Counter[int] = field(default_factory=Counter)
    answered_s: float = 0.0
    """Seconds until every stream asked for had its answer."""
    during_ms: list[float] = field(default_factory=list)
    """/health's latencies while the streams were asked for."""
    after_ms: list[float] = field(default_factory=list)
    """/health's latencies with the streams open."""


async def _prepare(folder: Path) -> tuple[str, str]:
    url = str(folder / "propdata.db")
    db = await connect(url)
    await migrate(db)
    await db.close()
    async with keys_of(url) as keys:
        _, secret = await keys.create("enterprise", None, CustomLimits(per_minute=1_000_000))
    return url, secret


def _serve(url: str) -> tuple[subprocess.Popen[bytes], int]:
    return harness.serve_one({"PROPDATA_DATABASE_URL": url})


async def _ask(port: int, secret: str) -> tuple[int, asyncio.StreamWriter | None]:
    """One stream asked for on a socket of its own: its status, and the socket when open."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"GET /v1/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {secret}\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if status == 200:
        return status, writer
    writer.close()
    return status, None


async def _bench(
    port: int, secret: str, streams: int, at_once: int, say: Callable[[str], None]
) -> CapFigures:
    found = CapFigures(streams, at_once)
    stop = asyncio.Event()
    probe = asyncio.create_task(
        harness.probe_health(f"http://127.0.0.1:{port}", found.during_ms, stop, PROBE_EVERY)
    )
    await asyncio.sleep(0.5)  # the probe's own warm-up
    found.during_ms.clear()
    held: list[asyncio.StreamWriter] = []
    started = time.monotonic()
    turns = asyncio.Semaphore(at_once)

    async def one() -> None:
        async with turns:
            status, writer = await _ask(port, secret)
        if writer is not None:
            held.append(writer)
        else:
            found.refused[status] += 1

    await asyncio.gather(*(one() for _ in range(streams)))
    found.answered_s = time.monotonic() - started
    found.opened = len(held)
    stop.set()
    await probe
    stop = asyncio.Event()
    probe = asyncio.create_task(
        harness.probe_health(f"http://127.0.0.1:{port}", found.after_ms, stop, PROBE_EVERY)
    )
    await asyncio.sleep(2)
    stop.set()
    await probe
    for writer in held:
        writer.close()
    refused = ", ".join(f"{n:,} answered {status}" for status, n in sorted(found.refused.items()))
    say(f"{streams:,} streams of one Enterprise account asked for, {at_once} at a time:"
        f" {found.opened:,} open, {refused}; all answered in {found.answered_s:.2f} s")  # fmt: skip
    for label, values in (("while asked for", found.during_ms), ("with them open", found.after_ms)):
        say(f"/health {label}: p50 {harness.quantile(values, 0.5):.1f} ms, p99"
            f" {harness.quantile(values, 0.99):.1f} ms, max {max(values):.1f} ms"
            f" ({len(values):,} probes)")  # fmt: skip
    return found


def measure(streams: int, at_once: int = 10, say: Callable[[str], None] = print) -> CapFigures:
    """The whole run on an empty store of its own; `say` reports each step."""
    with tempfile.TemporaryDirectory(prefix="propdata-stream-caps-") as folder:
        url, secret = asyncio.run(_prepare(Path(folder)))
        server, port = _serve(url)
        try:
            return asyncio.run(_bench(port, secret, streams, at_once, say))
        finally:
            server.terminate()
            server.wait(30)


def rows(found: CapFigures) -> list[Any]:
    """The make bench table's row of `found`."""
    from harness import Row

    p99 = harness.quantile(found.during_ms + found.after_ms, 0.99)
    cap = ENTERPRISE.event_streams
    refused = sum(found.refused.values())
    return [Row(
        f"17. {found.asked:,} event streams of one account, {found.at_once} asked at a time",
        "embedded",
        p50_ms=harness.quantile(found.during_ms + found.after_ms, 0.5), p99_ms=p99,
        result=f"{found.opened:,} open (the Enterprise cap), {refused:,} refused"
        f" ({', '.join(f'{n:,} {s}' for s, n in sorted(found.refused.items()))}) in"
        f" {found.answered_s:.2f} s; p50 and p99 are /health's beside them",
        target=f"{cap} open, the rest 429; /health p99 ≤ {TARGET_HEALTH_P99_MS:g} ms",
        met=found.opened == cap and set(found.refused) == {429} and p99 <= TARGET_HEALTH_P99_MS,
    )]  # fmt: skip


def main() -> None:
    parser = harness.script_parser(__doc__)
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--at-once", type=int, default=10, help="streams asked for at a time")
    args = parser.parse_args()
    found = measure(args.streams, args.at_once, lambda line: print(line, flush=True))
    print(harness.table(rows(found), judged=True))


if __name__ == "__main__":
    main()

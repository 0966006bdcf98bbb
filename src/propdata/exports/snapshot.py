"""Making a snapshot of one data version: its property files by state, its market files
and its manifest, written into a draft folder renamed into place (`exports.service`).

    manifest = await export(db, Path("var/exports"), "parquet")
    ExportService(Path("var/exports")).manifests()[0].id == manifest.id

Run by `propdata data export` (which the periodic exporter starts as a child process), never
by a server: its files are written with pyarrow, 25 MB of libraries and 6 MB of heap that no
request needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import secrets
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa

from propdata.exports.files import PropertyTable, Table, Writer, described
from propdata.exports.repository import SnapshotRepository
from propdata.exports.schemas import SUFFIX, ExportFile, Format, Manifest
from propdata.exports.service import DRAFT, MANIFEST, clear_drafts
from propdata.feed.service import cursor_at
from propdata.kit import memory
from propdata.kit.db import Database, ReadSnapshot, Row
from propdata.kit.pacing import Pace, Pacer
from propdata.markets.repository import HistoryRow, SnapshotRow
from propdata.markets.schemas import HistoryEntry, Market
from propdata.markets.service import market_of

PART_ROWS = 250_000
"""Records a property file holds at most (a state's records past it go on in part-1, ...)."""

PACE = Pace(quiet_cores=0.25, share=0.08, floor_cores=0.05)
"""How an export at idle priority gives way between its batches (`kit.pacing`). Idle
priority alone leaves searches served beside it twice their p99 alone: the export runs in
every gap a worker leaves and its streaming through the store evicts the workers' index
from the caches the cores share, so the tail grows with the export's share of the CPU, not
with the CPU it takes from the workers. So while other processes use a quarter of a core or
more it holds itself to 8 % of the cores they leave, and to a twentieth of a core at the
least, which bounds its time under load to twenty times its CPU time; below a quarter of a
core (daemons, an idle server) it does not pause, and an export on a quiet machine takes as
long as unpaced (docs/measurements.md, "Bulk exports": half the cores left gave a p99
beside of 40-46 ms, 8 % 24-27 ms, 12.7-19 ms alone)."""

Progress = Callable[[int, int], None]
"""Called with (records written, records in the snapshot) as an export goes on."""

PROPERTIES = PropertyTable()
MARKETS = Table(Market)
MARKET_HISTORY = Table(HistoryEntry, lead=[("zipCode", pa.string())])
_encode = msgspec.json.Encoder().encode


def yield_cpu() -> str:
    """Run this process, and the threads it starts from now on, at idle CPU priority: it
    gets a core only when no other process of its session wants it, so searches served
    beside an export keep their speed. Linux's SCHED_IDLE where there is one, else the
    lowest nice value. Returns what it got: "idle", "nice 19" or "unchanged".

    Called first by `propdata data export` (which the periodic exporter runs too), never
    by a server: an idle thread holding a server's interpreter lock would stall the
    requests waiting for it.
    """
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        return "idle"
    try:
        os.nice(19 - os.nice(0))
    except OSError:
        return "unchanged"
    return "nice 19"


def new_id(now: dt.datetime) -> str:
    return now.strftime("%Y%m%dT%H%M%S") + f"{now.microsecond // 1000:03d}Z-{secrets.token_hex(3)}"


async def export(
    db: Database,
    root: Path,
    fmt: Format = "parquet",
    *,
    progress: Progress | None = None,
    now: dt.datetime | None = None,
    pacer: Pacer | None = None,
) -> Manifest:
    """Write a snapshot of the store's current data version under `root` and return its
    manifest; every read is of one read snapshot, whatever loads commit meanwhile. With a
    `pacer` it gives way to other work between its batches (`PACE`)."""
    created = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    ident = new_id(created)
    draft = await asyncio.to_thread(_draft, root, ident, created)
    try:
        # Nothing an export makes forms a cycle, and the collector would walk a batch's
        # tens of thousands of unpacked history entries again and again (most of the time
        # spent unpacking them).
        with memory.no_cycle_collection():
            async with db.read_snapshot() as snapshot:
                manifest = await _write(snapshot, draft, fmt, ident, created, progress, pacer)
        await asyncio.to_thread(_publish, draft, root / ident, manifest)
    except BaseException:
        shutil.rmtree(draft, ignore_errors=True)
        raise
    return manifest


def _draft(root: Path, ident: str, now: dt.datetime) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    clear_drafts(root, now)
    draft = root / f"{DRAFT}{ident}"
    draft.mkdir()
    return draft


def _publish(draft: Path, target: Path, manifest: Manifest) -> None:
    """Write the manifest, flush it, and rename the draft into place."""
    (draft / MANIFEST).write_bytes(msgspec.json.format(_encode(manifest)))
    described(draft, draft / MANIFEST, 0)
    os.replace(draft, target)
    _sync_folder(target.parent)


async def _write(
    snapshot: ReadSnapshot,
    draft: Path,
    fmt: Format,
    ident: str,
    created: dt.datetime,
    progress: Progress | None,
    pacer: Pacer | None,
) -> Manifest:
    repo = SnapshotRepository(snapshot)
    if pacer is not None and (server := await repo.server_process()) is not None:
        # PostgreSQL's reads for this export are its work, not other work to give way to
        # (counted where the server runs on this machine; a remote one's CPU is not here).
        pacer.count_as_own(server, "postgres")
    position = await repo.position()
    states = await repo.states()
    total = sum(n for _, n in states)
    done = 0
    if progress is not None:
        progress(0, total)
    suffix = SUFFIX[fmt]
    parts = _Parts(draft, fmt)
    writing: asyncio.Future[None] | None = None
    try:
        for state, _ in states:
            async for rows in _ahead(repo.properties(state)):
                table = PROPERTIES.rows(rows, fmt)
                if writing is not None:
                    await writing
                # Written on a thread (Parquet's encoding and compression let go of the
                # GIL) while the next batch's columns are made here.
                writing = asyncio.ensure_future(asyncio.to_thread(parts.add, state, table))
                done += table.num_rows
                # A draft is stale, and any export removes it, when its folder has not
                # changed for STALE_DRAFT: a long export's must show it is alive.
                os.utime(draft)
                if progress is not None:
                    progress(done, total)
                if pacer is not None:
                    await pacer.between()
        if writing is not None:
            await writing
        parts.close()
    except BaseException:
        if writing is not None and not writing.done():
            with contextlib.suppress(Exception):
                await writing
        parts.abandon()
        raise
    files = parts.files
    files.append(await _markets(repo, draft / f"markets{suffix}", fmt))
    files.append(await _market_history(repo, draft / f"market_history{suffix}", fmt))
    return Manifest(
        id=ident,
        created_at=created.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        data_version=position.data_version,
        format=fmt,
        feed_cursor=cursor_at(position.feed_seq, position.store_id),
        files=files,
        rows=done,
    )


class _Parts:
    """The property files of a snapshot as they are written: a state's records go to
    `properties/state=XX/part-N`, a new part every PART_ROWS records."""

    def __init__(self, draft: Path, fmt: Format) -> None:
        self.draft, self.fmt = draft, fmt
        self.files: list[ExportFile] = []
        self._state: str | None = None
        self._out: Writer | None = None
        self._part = 0

    def add(self, state: str, table: pa.Table) -> None:
        if state != self._state:
            self._finish()
            self._state, self._part = state, 0
        start = 0
        while start < table.num_rows:
            if self._out is None:
                name = f"part-{self._part}{SUFFIX[self.fmt]}"
                self._out = PROPERTIES.writer(
                    self.draft / "properties" / f"state={state}" / name, self.fmt
                )
            piece = table.slice(start, PART_ROWS - self._out.rows)
            self._out.write(piece)
            start += piece.num_rows
            if self._out.rows >= PART_ROWS:
                self._finish()
                self._part += 1

    def _finish(self) -> None:
        if self._out is not None:
            self._out.close()
            self.files.append(described(self.draft, self._out.path, self._out.rows))
            self._out = None

    def close(self) -> None:
        """Finish the last part (its file described)."""
        self._finish()

    def abandon(self) -> None:
        """Close the open file after a failure (the draft goes with it)."""
        if self._out is not None:
            with contextlib.suppress(Exception):
                self._out.close()
            self._out = None


async def _markets(repo: SnapshotRepository, path: Path, fmt: Format) -> ExportFile:
    with MARKETS.writer(path, fmt) as out:
        async for rows in repo.markets():
            batch = [market_of(SnapshotRow._make(r)) for r in rows]
            out.write(MARKETS.batch(batch, fmt))
        if not out.rows:
            out.write(MARKETS.batch([], fmt))
    return described(path.parent, path, out.rows)


async def _market_history(repo: SnapshotRepository, path: Path, fmt: Format) -> ExportFile:
    with MARKET_HISTORY.writer(path, fmt) as out:
        async for rows in repo.market_history():
            batch: list[dict[str, Any]] = []
            for r in rows:
                h = HistoryRow._make(r[1:])
                entry: dict[str, Any] = msgspec.to_builtins(HistoryEntry(
                    month=h.month, median_list_price=h.median_list_price,
                    median_sold_price=h.median_sold_price, active_listings=h.active_listings,
                    sold_count=h.sold_count, median_days_on_market=h.median_days_on_market,
                    average_price_per_sqft=h.average_price_per_sqft,
                ))  # fmt: skip
                entry["zipCode"] = r[0]
                batch.append(entry)
            out.write(MARKET_HISTORY.batch(batch, fmt))
        if not out.rows:
            out.write(MARKET_HISTORY.batch([], fmt))
    return described(path.parent, path, out.rows)


async def _ahead(batches: AsyncIterator[list[Row]]) -> AsyncIterator[list[Row]]:
    """The batches of a stream, the next one read (on SQLite's thread, or PostgreSQL's
    socket) while the caller turns this one into records: the read and the work overlap."""
    source = aiter(batches)
    following = asyncio.ensure_future(anext(source))
    try:
        while True:
            try:
                batch = await following
            except StopAsyncIteration:
                return
            following = asyncio.ensure_future(anext(source))
            await asyncio.sleep(0)  # let the read start before the caller's work holds the loop
            yield batch
            # Not kept while the next is awaited: the stream's end (StopAsyncIteration, its
            # traceback holding this frame) makes a cycle, freed only by the cycle collector,
            # which the export pauses.
            del batch
    finally:
        if not following.done():
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await following


def _sync_folder(folder: Path) -> None:
    """Flush a folder's entries (a rename into it) to the disk."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

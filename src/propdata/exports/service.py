"""Export decisions: making a snapshot of one data version, listing the snapshots, finding
a file of one, who may download them, pruning, and the periodic exporter's turns.

    manifest = await export(db, Path("var/exports"), "parquet")
    ExportService(Path("var/exports")).manifests()[0].id == manifest.id

A snapshot is written into a draft folder (`.draft-<id>`) and renamed into place with its
`manifest.json` inside: a listing sees it whole or not at all, and an export killed half-way
leaves only a draft, which no listing shows and the next export clears away.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import re
import secrets
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa

from propdata.errors import NotFound, PlanLimitReached
from propdata.exports.files import SUFFIX, PropertyTable, Table, Writer, described
from propdata.exports.repository import LeaseRepository, SnapshotRepository
from propdata.exports.schemas import ExportFile, Format, Manifest
from propdata.feed.service import cursor_at
from propdata.kit import memory
from propdata.kit.db import Database, ReadSnapshot, Row, StoreUnavailable
from propdata.kit.loops import task_health
from propdata.kit.pacing import Pace, Pacer
from propdata.markets.repository import HistoryRow, SnapshotRow
from propdata.markets.schemas import HistoryEntry, Market
from propdata.markets.service import market_of
from propdata.plans import BY_NAME, first_with

MANIFEST = "manifest.json"
DRAFT = ".draft-"
GONE = ".gone-"
ID = re.compile(r"^[0-9]{8}T[0-9]{9}Z-[0-9a-f]{6}$")
"""A snapshot's id: when it was made (UTC, to the millisecond) and six random hex digits;
also its folder's name."""
PART_ROWS = 250_000
"""Records a property file holds at most (a state's records past it go on in part-1, ...)."""
STALE_DRAFT = dt.timedelta(hours=6)
"""A draft older than this was left by an export that died; the next export removes it."""
LEASE = dt.timedelta(hours=1)
"""How long the periodic exporter's turn lasts before another process may take it."""
PACE = Pace(quiet_cores=0.25, share=0.5, floor_cores=0.1)
"""How an export at idle priority gives way between its batches (`kit.pacing`). Idle
priority alone leaves searches served beside it twice their p99 alone: the export runs in
every gap a worker leaves and its streaming through the store evicts the workers' index
from the caches the cores share. So while other processes use a quarter of a core or more
it holds itself to half the cores they leave, and to a tenth of a core at the least, which
bounds its time under load to ten times its CPU time; below a quarter of a core (daemons, an
idle server) it does not pause, and an export on a quiet machine takes as long as unpaced."""

Progress = Callable[[int, int], None]
"""Called with (records written, records in the snapshot) as an export goes on."""

PROPERTIES = PropertyTable()
MARKETS = Table(Market)
MARKET_HISTORY = Table(HistoryEntry, lead=[("zipCode", pa.string())])
_encode = msgspec.json.Encoder().encode
log = logging.getLogger("propdata")


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


def clear_drafts(root: Path, now: dt.datetime) -> None:
    """Remove the drafts of exports that died (older than STALE_DRAFT) and pruned folders."""
    for entry in root.iterdir() if root.is_dir() else ():
        if entry.name.startswith(GONE):
            shutil.rmtree(entry, ignore_errors=True)
        elif entry.name.startswith(DRAFT):
            with contextlib.suppress(FileNotFoundError):
                age = now.timestamp() - entry.stat().st_mtime
                if age > STALE_DRAFT.total_seconds():
                    shutil.rmtree(entry, ignore_errors=True)


def prune(root: Path, keep: int) -> list[str]:
    """Remove all but the newest `keep` snapshots; the ids removed. Each is renamed out of
    the listing first, so no reader finds half of one."""
    gone = [m.id for m in ExportService(root).manifests()[keep:]]
    for ident in gone:
        target = root / f"{GONE}{ident}"
        with contextlib.suppress(FileNotFoundError):
            os.replace(root / ident, target)
            shutil.rmtree(target, ignore_errors=True)
    return gone


def refusal(plan: str, holder: str = "this key") -> PlanLimitReached | None:
    """Why `holder` (a key, or a portal account: its highest plan) on `plan` may not list
    or download exports (403 naming the cheapest plan that may), or None when it may."""
    if BY_NAME[plan].exports:
        return None
    first = first_with("exports")
    return PlanLimitReached(
        f"Bulk exports come with the {first.title} and Enterprise plans; {holder} is on the"
        f" {BY_NAME[plan].title} plan. Change a key's plan to {first.title} to download them.",
        raised_by=first.name,
    )


def may_export(plan: str) -> None:
    """Raise `refusal(plan)`, if any."""
    refused = refusal(plan)
    if refused is not None:
        raise refused


class ExportService:
    """The snapshots under one folder, as the API and the portal list and serve them."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def manifests(self) -> list[Manifest]:
        """Every whole snapshot, newest first."""
        found: list[Manifest] = []
        for entry in self.root.iterdir() if self.root.is_dir() else ():
            if ID.match(entry.name):
                with contextlib.suppress(FileNotFoundError, msgspec.DecodeError):
                    found.append(_read(entry / MANIFEST))
        found.sort(key=lambda m: (m.created_at, m.id), reverse=True)
        return found

    def manifest(self, ident: str) -> Manifest:
        if ID.match(ident):
            with contextlib.suppress(FileNotFoundError, msgspec.DecodeError):
                return _read(self.root / ident / MANIFEST)
        raise NotFound(f"No export with id '{ident[:40]}'; GET /v1/exports lists them.")

    def file(self, ident: str, name: str) -> tuple[Path, ExportFile, Format]:
        """The file `name` of snapshot `ident`: only names its manifest lists are served."""
        manifest = self.manifest(ident)
        for listed in manifest.files:
            if listed.name == name:
                folder = (self.root / ident).resolve()
                path = (folder / name).resolve()
                if path.is_relative_to(folder) and path.is_file():
                    return path, listed, manifest.format
        raise NotFound(
            f"Export '{ident}' has no file '{name[:100]}'; its manifest lists its files."
        )


_manifest = msgspec.json.Decoder(Manifest)


def _read(path: Path) -> Manifest:
    return _manifest.decode(path.read_bytes())


class Exporter:
    """The periodic exporter: every `every` seconds one process of all the hosts sharing
    the store (the one that takes the lease) makes a snapshot in a child process
    (`propdata data export`), then prunes to `keep`. Start, stop, health."""

    def __init__(
        self,
        db: Database,
        root: Path,
        every: float,
        keep: int,
        env: dict[str, str],
        clock: Callable[[], dt.datetime] | None = None,
    ) -> None:
        self.db, self.root, self.every, self.keep = db, root, every, keep
        self._env = env
        self._clock = clock or (lambda: dt.datetime.now(dt.UTC))
        self._task: asyncio.Task[None] | None = None
        self.last_error: str | None = None
        self.made = 0

    name = "exporter"
    """Its name among the worker's loops (`kit.loops`)."""

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="propdata-exporter")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def health(self) -> str:
        """Its state: "ok", "stopped", or "failing: ..." when the last turn failed
        (`last_error` says why; it may name paths, so `/health` does not)."""
        return task_health(self._task, None if self.last_error is None else "export failed")

    async def turn(self) -> bool:
        """Make a snapshot if this process takes the lease now; True when it made one."""
        lease = LeaseRepository(self.db)
        now = self._clock()
        async with self.db.transaction():
            if not await lease.take(_iso(now), _iso(now + LEASE)):
                return False
        with tempfile.TemporaryFile() as said:
            child = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "propdata", "data", "export", "--out", str(self.root),
                env={**os.environ, **self._env}, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL, stderr=said,
            )  # fmt: skip
            try:
                code = await child.wait()
            except asyncio.CancelledError:  # the server stops: so does its export
                child.kill()
                await asyncio.shield(child.wait())
                raise
            if code != 0:
                said.seek(0)
                text = said.read()[-2000:].decode(errors="replace")
                raise RuntimeError(f"propdata data export failed ({code}): {text}")
        async with self.db.transaction():
            await lease.hold_until(_iso(self._clock() + dt.timedelta(seconds=self.every)))
        gone = prune(self.root, self.keep)
        self.made += 1
        log.info("export made; %d older snapshots pruned", len(gone))
        return True

    async def _run(self) -> None:
        while True:
            try:
                await self.turn()
                self.last_error = None
            except (StoreUnavailable, OSError, RuntimeError) as exc:
                self.last_error = str(exc)
                log.warning("periodic export failed: %s", exc)
            await asyncio.sleep(min(self.every, 60.0))


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat(timespec="seconds")

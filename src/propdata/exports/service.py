"""Exports as a server sees them: listing the snapshots, finding a file of one, who may
download them, pruning, and the periodic exporter's turns (each in a child process).

    ExportService(Path("var/exports")).manifests()[0].id

A snapshot is written into a draft folder (`.draft-<id>`) and renamed into place with its
`manifest.json` inside: a listing sees it whole or not at all, and an export killed half-way
leaves only a draft, which no listing shows and the next export clears away. Making one is
`exports.snapshot`'s: it needs pyarrow, which a serving process never imports.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import msgspec

from propdata.errors import NotFound, PlanLimitReached
from propdata.exports.repository import LeaseRepository
from propdata.exports.schemas import ExportFile, Format, Manifest
from propdata.kit.db import Database, StoreUnavailable
from propdata.kit.loops import task_health
from propdata.plans import BY_NAME, first_with

MANIFEST = "manifest.json"
DRAFT = ".draft-"
GONE = ".gone-"
ID = re.compile(r"^[0-9]{8}T[0-9]{9}Z-[0-9a-f]{6}$")
"""A snapshot's id: when it was made (UTC, to the millisecond) and six random hex digits;
also its folder's name."""
STALE_DRAFT = dt.timedelta(hours=6)
"""A draft older than this was left by an export that died; the next export removes it."""
LEASE = dt.timedelta(minutes=10)
"""How long the periodic exporter's turn lasts unless renewed: its holder renews it every
third of it while its export runs, however long that takes (a paced export of a large store
can take hours on a busy machine), so a holder that dies blocks the others this long at most."""

log = logging.getLogger("propdata")


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
        renew_every: float = LEASE.total_seconds() / 3,
    ) -> None:
        self.db, self.root, self.every, self.keep = db, root, every, keep
        self._env = env
        self._clock = clock or (lambda: dt.datetime.now(dt.UTC))
        self._renew_every = renew_every
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
        held = _iso(now + LEASE)
        async with self.db.transaction():
            if not await lease.take(_iso(now), held):
                return False
        with tempfile.TemporaryFile() as said:
            child = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "propdata", "data", "export", "--out", str(self.root),
                env={**os.environ, **self._env}, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL, stderr=said,
            )  # fmt: skip
            try:
                code = await self._hold(lease, held, child)
            except BaseException:  # the server stops, or the lease was lost: so does the export
                if child.returncode is None:
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

    async def _hold(
        self, lease: LeaseRepository, held: str, child: asyncio.subprocess.Process
    ) -> int:
        """Wait for the export, renewing the lease every `renew_every` seconds; its exit code.
        A renewal that finds the lease no longer ours (another process took it after it
        lapsed: this one stalled past LEASE) raises, and the caller stops the export. One
        the store refuses is tried again at the next tick, while the lease still runs."""
        waiting = asyncio.ensure_future(child.wait())
        try:
            while True:
                done, _ = await asyncio.wait({waiting}, timeout=self._renew_every)
                if done:
                    return waiting.result()
                renewed = _iso(self._clock() + LEASE)
                try:
                    async with self.db.transaction():
                        if not await lease.renew(held, renewed):
                            raise RuntimeError(
                                "the export lease was taken by another process while this"
                                " one held it (it could not renew it in time); export stopped"
                            )
                    held = renewed
                except StoreUnavailable as exc:
                    log.warning("could not renew the export lease: %s", exc)
        finally:
            waiting.cancel()

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

"""Periodic exports: one process of all those sharing a store makes each snapshot (the
store's lease), at most every PROPDATA_EXPORT_EVERY, keeping PROPDATA_EXPORT_KEEP. Both
stores."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

from propdata.app import export_env
from propdata.config import ConfigError, load_settings
from propdata.exports.repository import LeaseRepository
from propdata.exports.service import LEASE, Exporter, ExportService
from tests.conftest import Fresh, settings_for
from tests.live import until

WAIT = 60.0


class Clock:
    def __init__(self) -> None:
        self.now = dt.datetime(2026, 11, 21, 6, 0, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.now


async def test_one_process_of_two_makes_each_export_and_old_ones_go(
    fresh: Fresh, tmp_path: Path
) -> None:
    tmp_path = tmp_path / "exports"
    settings = settings_for(fresh.store, export_dir=str(tmp_path))
    clock = Clock()
    dbs = [await fresh.db(), await fresh.db()]
    try:
        hosts = [Exporter(db, tmp_path, 3600, 2, export_env(settings), clock) for db in dbs]
        made = await asyncio.gather(*(host.turn() for host in hosts))
        assert sorted(made) == [False, True]  # the lease gave the turn to one of them
        assert not any(await asyncio.gather(*(host.turn() for host in hosts)))  # not yet due
        listed = ExportService(tmp_path).manifests()
        assert len(listed) == 1 and listed[0].rows == 42
        for _ in range(2):
            clock.now += dt.timedelta(hours=1, seconds=1)
            assert sum(await asyncio.gather(*(host.turn() for host in hosts))) == 1
        kept = ExportService(tmp_path).manifests()
        assert len(kept) == 2 and listed[0].id not in {m.id for m in kept}
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(m.id for m in kept)
    finally:
        for db in dbs:
            await db.close()


async def test_a_server_with_export_every_makes_snapshots(fresh: Fresh, tmp_path: Path) -> None:
    tmp_path = tmp_path / "exports"
    await fresh(export_dir=str(tmp_path), export_every=3600.0, export_keep=1)
    await until(ExportService(tmp_path).manifests, "a snapshot made", WAIT)


def test_the_settings_read_durations_and_bounds() -> None:
    assert load_settings({"PROPDATA_EXPORT_EVERY": "24h"}).export_every == 86_400
    assert load_settings({"PROPDATA_EXPORT_EVERY": "90m"}).export_every == 5_400
    assert load_settings({"PROPDATA_EXPORT_EVERY": "3600"}).export_every == 3_600
    assert load_settings({}).export_every is None
    assert load_settings({}).export_keep == 3 and load_settings({}).export_dir == "var/exports"
    for bad in ({"PROPDATA_EXPORT_EVERY": "daily"}, {"PROPDATA_EXPORT_EVERY": "5s"},
                {"PROPDATA_EXPORT_KEEP": "0"}):  # fmt: skip
        try:
            load_settings(bad)
        except ConfigError as exc:
            assert next(iter(bad)) in str(exc)
        else:
            raise AssertionError(bad)


async def test_the_holder_renews_its_lease_while_its_export_runs(
    fresh: Fresh, tmp_path: Path
) -> None:
    tmp_path = tmp_path / "exports"
    settings = settings_for(fresh.store, export_dir=str(tmp_path))
    clock = Clock()
    dbs = [await fresh.db(), await fresh.db()]
    try:
        holder, other = (
            Exporter(db, tmp_path, 3600, 2, export_env(settings), clock, renew_every=0.02)
            for db in dbs
        )
        turn = asyncio.ensure_future(holder.turn())
        lease = LeaseRepository(dbs[1])
        await until(lease.until, "the lease taken")
        clock.now += LEASE + dt.timedelta(minutes=1)  # the first term has run out...
        renewed = (clock.now + LEASE).isoformat(timespec="seconds")
        await until(lambda: _is(lease, renewed), "the lease renewed while the export runs")
        assert not await other.turn()  # ...but its holder renewed it: the turn stays its own
        assert await turn and len(ExportService(tmp_path).manifests()) == 1
    finally:
        for db in dbs:
            await db.close()


async def test_a_holder_that_lost_its_lease_stops_its_export(fresh: Fresh, tmp_path: Path) -> None:
    tmp_path = tmp_path / "exports"
    settings = settings_for(fresh.store, export_dir=str(tmp_path))
    clock = Clock()
    dbs = [await fresh.db(), await fresh.db()]
    try:
        holder = Exporter(dbs[0], tmp_path, 3600, 2, export_env(settings), clock, renew_every=0.02)
        turn = asyncio.ensure_future(holder.turn())
        lease = LeaseRepository(dbs[1])
        await until(lease.until, "the lease taken")
        async with dbs[1].transaction():  # as another host does once a stalled holder's lapses
            await lease.hold_until("2026-11-21T06:30:00+00:00")
        try:
            await turn
        except RuntimeError as exc:
            assert "export lease was taken by another process" in str(exc)
        else:
            raise AssertionError("the export went on without its lease")
        assert ExportService(tmp_path).manifests() == []
        assert await lease.until() == "2026-11-21T06:30:00+00:00"  # the other's, untouched
    finally:
        for db in dbs:
            await db.close()


async def _is(lease: LeaseRepository, until: str) -> bool:
    return await lease.until() == until

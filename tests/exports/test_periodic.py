"""Periodic exports: one process of all those sharing a store makes each snapshot (the
store's lease), at most every PROPDATA_EXPORT_EVERY, keeping PROPDATA_EXPORT_KEEP. Both
stores."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from propdata.app import export_env
from propdata.config import ConfigError, load_settings
from propdata.exports.repository import LeaseRepository
from propdata.exports.service import LEASE, Exporter, ExportService
from propdata.kit.db import Database
from tests.conftest import Fresh, settings_for
from tests.live import until

WAIT = 60.0


class Clock:
    def __init__(self) -> None:
        self.now = dt.datetime(2026, 11, 21, 6, 0, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.now


@dataclass
class Hosts:
    """Two processes' exporters on one store, with the clock they share."""

    root: Path
    clock: Clock
    dbs: list[Database]
    exporters: list[Exporter]


@contextlib.asynccontextmanager
async def two_hosts(fresh: Fresh, tmp_path: Path, **options: Any) -> AsyncIterator[Hosts]:
    """Exporters every hour keeping 2, as two hosts run them (`options`: Exporter's)."""
    root = tmp_path / "exports"
    env = export_env(settings_for(fresh.store, export_dir=str(root)))
    clock = Clock()
    dbs = [await fresh.db(), await fresh.db()]
    try:
        yield Hosts(root, clock, dbs, [Exporter(db, root, 3600, 2, env, clock, **options)
                                       for db in dbs])  # fmt: skip
    finally:
        for db in dbs:
            await db.close()


async def test_one_process_of_two_makes_each_export_and_old_ones_go(
    fresh: Fresh, tmp_path: Path
) -> None:
    async with two_hosts(fresh, tmp_path) as two:
        hosts, root = two.exporters, two.root
        made = await asyncio.gather(*(host.turn() for host in hosts))
        assert sorted(made) == [False, True]  # the lease gave the turn to one of them
        assert not any(await asyncio.gather(*(host.turn() for host in hosts)))  # not yet due
        listed = ExportService(root).manifests()
        assert len(listed) == 1 and listed[0].rows == 42
        for _ in range(2):
            two.clock.now += dt.timedelta(hours=1, seconds=1)
            assert sum(await asyncio.gather(*(host.turn() for host in hosts))) == 1
        kept = ExportService(root).manifests()
        assert len(kept) == 2 and listed[0].id not in {m.id for m in kept}
        assert sorted(p.name for p in root.iterdir()) == sorted(m.id for m in kept)


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
    async with two_hosts(fresh, tmp_path, renew_every=0.02) as two:
        holder, other = two.exporters
        turn = asyncio.ensure_future(holder.turn())
        lease = LeaseRepository(two.dbs[1])
        await until(lease.until, "the lease taken")
        two.clock.now += LEASE + dt.timedelta(minutes=1)  # the first term has run out...
        renewed = (two.clock.now + LEASE).isoformat(timespec="seconds")
        await until(lambda: _is(lease, renewed), "the lease renewed while the export runs")
        assert not await other.turn()  # ...but its holder renewed it: the turn stays its own
        assert await turn and len(ExportService(two.root).manifests()) == 1


async def test_a_holder_that_lost_its_lease_stops_its_export(fresh: Fresh, tmp_path: Path) -> None:
    async with two_hosts(fresh, tmp_path, renew_every=0.02) as two:
        turn = asyncio.ensure_future(two.exporters[0].turn())
        lease = LeaseRepository(two.dbs[1])
        await until(lease.until, "the lease taken")
        async with two.dbs[1].transaction():  # as another host does once a stalled holder's lapses
            await lease.hold_until("2026-11-21T06:30:00+00:00")
        with pytest.raises(RuntimeError, match="export lease was taken by another process"):
            await turn
        assert ExportService(two.root).manifests() == []
        assert await lease.until() == "2026-11-21T06:30:00+00:00"  # the other's, untouched


async def _is(lease: LeaseRepository, until: str) -> bool:
    return await lease.until() == until

"""A load and its rebuild are one promise: a load that dies between its commit
and its rebuild is reported, and the next start or data command finishes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from typer.testing import CliRunner

from propdata.cli import app as cli
from propdata.ingest import pipeline, synthetic
from propdata.ingest.loader import load
from propdata.kit.db import connect
from propdata.migrations.schema import migrate
from propdata.properties.repository import PropertyRepository
from tests.conftest import scratch_db
from tests.factories import AS_OF
from tests.live import run_apart, running_server


async def _store_with_an_interrupted_load(path: Path) -> None:
    """A store built by the pipeline, then a second load that committed and died."""
    db = await connect(str(path))
    try:
        await migrate(db)
        first = pipeline.synthetic_source(300, 1, AS_OF)
        await pipeline.run(db, [first], AS_OF)
        assert await PropertyRepository(db).rebuild_pending() is None
        # New homes arriving without estimates of their own (as a plain CSV import).
        items = (
            (n, msgspec.structs.replace(r, value_estimate=None, rent_estimate=None))
            for n, r in synthetic.generate(400, 2, AS_OF)
        )
        await load(db, items, origin="synthetic", as_of=AS_OF, replace_origin=True)
    finally:
        await db.close()


async def _pending_and_unvalued(path: Path) -> tuple[str | None, int]:
    db = await connect(str(path))
    try:
        pending = await PropertyRepository(db).rebuild_pending()
        row = await db.fetch_one(
            "SELECT count(*) FROM properties WHERE value_value IS NULL AND living_area > 0"
            " AND property_type <> 'land'"
        )
        return pending, int(row[0]) if row else 0
    finally:
        await db.close()


def _env(path: Path) -> dict[str, str]:
    return {"PROPDATA_DATABASE_URL": str(path), "PROPDATA_AS_OF": AS_OF.isoformat()}


def test_an_interrupted_load_is_reported_then_finished_by_a_command(tmp_path: Path) -> None:
    path = tmp_path / "propdata.db"
    run_apart(_store_with_an_interrupted_load(path))
    pending, unvalued = run_apart(_pending_and_unvalued(path))
    assert pending is not None and unvalued > 100  # the 400 new homes have no estimates
    status = CliRunner().invoke(cli, ["data", "status"], env=_env(path))
    assert status.exit_code == 1 and "rebuild: pending" in status.stdout
    rebuilt = CliRunner().invoke(cli, ["data", "rebuild"], env=_env(path))
    assert rebuilt.exit_code == 0, rebuilt.stderr
    pending, unvalued = run_apart(_pending_and_unvalued(path))
    assert pending is None and unvalued < 40  # thin ZIP codes stay unvalued by design
    status = CliRunner().invoke(cli, ["data", "status"], env=_env(path))
    assert status.exit_code == 0 and "rebuild: done" in status.stdout


@pytest.mark.slow
def test_health_says_so_and_serve_finishes_it_before_serving(tmp_path: Path) -> None:
    path = tmp_path / "propdata.db"
    run_apart(_store_with_an_interrupted_load(path))
    from litestar.testing import TestClient

    from propdata.app import create_app
    from propdata.config import Settings

    with TestClient(create_app(Settings(database_url=str(path), as_of=AS_OF))) as client:
        health = client.get("/health").json()
    assert health["status"] == "degraded" and health["checks"]["rebuild"] == "degraded: pending"
    with running_server(_env(path)) as base:  # `propdata serve`
        health = httpx.get(base + "/health").json()
    assert health["status"] == "ok" and "rebuild" not in health["checks"]
    assert run_apart(_pending_and_unvalued(path))[0] is None


async def _mark_then_race(path: Path) -> tuple[bool, bool]:
    db = await connect(str(path))
    try:
        await migrate(db)
        repo = PropertyRepository(db)
        await repo.mark_rebuild_pending()
        seen = await repo.rebuild_pending()
        assert seen is not None
        await repo.bump_data_version()  # another load commits while the rebuild runs
        await repo.mark_rebuild_pending()
        stale = await repo.clear_rebuild_pending(seen)
        fresh = await repo.clear_rebuild_pending(str(await repo.rebuild_pending()))
        return stale, fresh
    finally:
        await db.close()


def test_a_load_during_a_rebuild_keeps_its_own_mark(tmp_path: Path) -> None:
    stale, fresh = run_apart(_mark_then_race(tmp_path / "propdata.db"))
    assert not stale and fresh


@pytest.mark.slow
def test_a_load_killed_halfway_leaves_the_old_data_whole(tmp_path: Path) -> None:
    """kill -9 in the middle of `propdata data generate`: one transaction, so nothing of
    it is stored, and no rebuild is left pending."""
    path = tmp_path / "propdata.db"
    env = {**os.environ, **_env(path)}
    done = subprocess.run([sys.executable, "-m", "propdata", "data", "generate", "--properties",
                           "500"], env=env, capture_output=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    loading = subprocess.Popen(
        [sys.executable, "-m", "propdata", "data", "generate", "--properties", "200000",
         "--seed", "9"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wal = path.with_name(path.name + "-wal")
    deadline = time.monotonic() + 120
    while not wal.exists() or wal.stat().st_size < 4_000_000:  # the load is writing
        assert time.monotonic() < deadline and loading.poll() is None, "the load ended first"
        time.sleep(0.05)
    os.kill(loading.pid, signal.SIGKILL)
    loading.wait(10)
    status = CliRunner().invoke(cli, ["data", "status"], env=_env(path))
    assert status.exit_code == 0, status.stdout
    assert "properties: 500" in status.stdout and "rebuild: done" in status.stdout


async def _rebuilt_tables(backend: str, folder: Path, apart: bool) -> Any:
    """Estimates, comparables and market statistics after a rebuild of the same records."""
    with pytest.MonkeyPatch.context() as mp:
        return await _rebuild_with(backend, folder, apart, mp)


async def _rebuild_with(backend: str, folder: Path, apart: bool, mp: pytest.MonkeyPatch) -> Any:
    mp.setattr(pipeline, "APART_FROM", 1 if apart else 10**9)
    if apart:  # the statistics must come from the child (a spawned process: not patched)

        async def not_here(*args: Any) -> Any:
            raise AssertionError("computed in the parent")

        mp.setattr(pipeline.market_builder, "compute", not_here)
    async with scratch_db(backend, folder) as db:
        await load(db, synthetic.generate(600, 4, AS_OF), origin="synthetic", as_of=AS_OF)
        before = await PropertyRepository(db).data_version()
        outcome = await pipeline.rebuild(db, AS_OF)
        assert await PropertyRepository(db).data_version() == before + 2
        assert await PropertyRepository(db).rebuild_pending() is None
        tables = {
            "estimates": await db.fetch_all(
                "SELECT id, value_value, value_low, value_high, value_as_of, rent_value,"
                " rent_as_of FROM properties ORDER BY id"
            ),
            "comparables": await db.fetch_all(
                "SELECT * FROM valuation_comparables ORDER BY property_id"
            ),
            "snapshots": await db.fetch_all("SELECT * FROM market_snapshots ORDER BY zip_code"),
            "history": await db.fetch_all("SELECT * FROM market_history ORDER BY zip_code, month"),
        }
        return outcome.estimates, outcome.markets, tables


async def test_estimates_and_statistics_side_by_side_store_the_same(
    backend: str, tmp_path: Path
) -> None:
    apart = await _rebuilt_tables(backend, tmp_path / "apart", True)
    plain = await _rebuilt_tables(backend, tmp_path / "plain", False)
    assert apart == plain
    assert apart[1] and apart[2]["history"]

"""`propdata data backup|restore` on a live embedded store, while requests run."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from propdata.accounts.keys import keys_of
from propdata.cli import app as cli
from propdata.ingest import pipeline
from propdata.kit.db import connect
from propdata.migrations.schema import migrate
from propdata.properties.repository import PropertyRepository
from tests.conftest import create_key, new_store
from tests.factories import AS_OF
from tests.live import run_apart, running_server


async def _build(path: Path, count: int, seed: int) -> None:
    db = await connect(str(path))
    try:
        await migrate(db)
        await pipeline.run(db, [pipeline.synthetic_source(count, seed, AS_OF)], AS_OF)
    finally:
        await db.close()


async def _count_and_version(path: Path) -> tuple[int, int]:
    db = await connect(str(path))
    try:
        repo = PropertyRepository(db)
        return await repo.count(), await repo.data_version()
    finally:
        await db.close()


async def _key_works(path: Path, secret: str) -> bool:
    async with keys_of(str(path)) as keys:
        return (await keys.authenticate(f"Bearer {secret}")).plan == "enterprise"


@pytest.mark.slow
def test_backup_and_restore_while_requests_run(tmp_path: Path) -> None:
    live = tmp_path / "live" / "propdata.db"
    run_apart(_build(live, 1_500, 1))
    store = run_apart(new_store("embedded", live.parent))
    secret = run_apart(create_key(store, "enterprise", per_minute=1_000_000))
    env = {"PROPDATA_DATABASE_URL": str(live), "PROPDATA_AS_OF": AS_OF.isoformat()}
    statuses: Counter[int] = Counter()
    stop = threading.Event()

    def traffic(base: str) -> None:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {secret}"}) as c:
            n = 0
            while not stop.is_set():
                path = f"/v1/properties/syn-{n % 1_500 + 1:07d}" if n % 2 else "/v1/properties"
                statuses[c.get(path, params={"limit": 5} if n % 2 == 0 else None).status_code] += 1
                n += 1

    backup = tmp_path / "backups" / "monday.db"
    with running_server({**env, "PROPDATA_CACHE_TTL": "0"}, workers=2) as base:
        worker = threading.Thread(target=traffic, args=(base,))
        worker.start()
        try:
            made = CliRunner().invoke(cli, ["data", "backup", str(backup)], env=env)
            assert made.exit_code == 0, made.stderr
            assert run_apart(_count_and_version(backup))[0] == 1_500
            assert run_apart(_key_works(backup, secret))  # the keys came along
            # A later load, then the backup restored under the running server.
            generated = CliRunner().invoke(
                cli, ["data", "generate", "--properties", "700", "--seed", "2"], env=env
            )
            assert generated.exit_code == 0, generated.stderr
            count, version_before = run_apart(_count_and_version(live))
            assert count == 700
            restored = CliRunner().invoke(cli, ["data", "restore", str(backup)], env=env)
            assert restored.exit_code == 0, restored.stderr
            count, version = run_apart(_count_and_version(live))
            assert count == 1_500 and version > version_before
            answer = httpx.get(base + "/v1/properties?limit=1",
                               headers={"Authorization": f"Bearer {secret}"})  # fmt: skip
            assert answer.json()["meta"]["total"] == 1_500
        finally:
            stop.set()
            worker.join()
    assert statuses[200] > 20 and set(statuses) <= {200, 503}, statuses
    assert statuses[503] == 0, statuses


def test_a_file_that_is_not_a_store_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    env = {"PROPDATA_DATABASE_URL": str(tmp_path / "live.db")}
    refused = CliRunner().invoke(cli, ["data", "restore", str(junk)], env=env)
    assert refused.exit_code == 2 and "error" in refused.stderr
    assert not (tmp_path / "live.db").exists()

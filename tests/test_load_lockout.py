"""Operators keep control during a data load (contract.md, "Abuse and bad input").

A load holds the SQLite data file's write lock for minutes. Before keys had their own file
and migrations knew when they had nothing to do, `propdata keys create|revoke` and a
server start waited 30 s for that lock and failed with `database is locked`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient
from typer.testing import CliRunner

from propdata.app import HeadAsGet, create_app
from propdata.cli import app as cli
from tests.conftest import build_store, create_key, new_store, settings_for


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Path]:
    """A built embedded store whose data file's write lock is held, as a load holds it."""
    from tests.conftest import run

    store = run(new_store("embedded", tmp_path))
    run(build_store(store))
    load = sqlite3.connect(store.url, isolation_level=None)
    load.execute("BEGIN IMMEDIATE")
    load.execute("UPDATE meta SET value = value WHERE key = 'data_version'")
    try:
        yield Path(store.url)
    finally:
        load.execute("ROLLBACK")
        load.close()


def test_keys_are_made_changed_and_revoked_during_a_load(held: Path) -> None:
    env = {"PROPDATA_DATABASE_URL": str(held)}
    made = CliRunner().invoke(cli, ["keys", "create", "--plan", "free"], env=env)
    assert made.exit_code == 0, made.stderr
    secret = made.stdout.strip().splitlines()[-1]
    changed = CliRunner().invoke(cli, ["keys", "plan", "-", "pro"], env=env, input=secret)
    assert changed.exit_code == 0, changed.stderr
    revoked = CliRunner().invoke(cli, ["keys", "revoke", "-"], env=env, input=secret)
    assert revoked.exit_code == 0, revoked.stderr
    listed = CliRunner().invoke(cli, ["keys", "list"], env=env)
    assert listed.exit_code == 0 and "revoked" in listed.stdout


async def test_a_server_starts_and_answers_during_a_load(held: Path) -> None:
    store = await new_store("embedded", held.parent)  # the store whose lock is held
    secret = await create_key(store, "developer")
    app = HeadAsGet(create_app(settings_for(store, cache_ttl=0)))
    async with AsyncTestClient(app=app) as client:  # type: ignore[arg-type]
        health = await client.get("/health")
        assert health.status_code == 200
        answer = await client.get(
            "/v1/properties/t-000", headers={"Authorization": f"Bearer {secret}"}
        )
        assert answer.status_code == 200, answer.text

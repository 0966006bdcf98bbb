"""An export is one data version: its `feedCursor` continues into the change feed with no
change missed or seen twice, and loads committing while it runs (`data import --follow`)
do not reach it. Both stores."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import duckdb

from propdata.exports.schemas import Manifest
from propdata.exports.snapshot import export
from propdata.ingest.loader import load
from propdata.properties.repository import PropertyRepository
from tests.conftest import Fresh, open_db
from tests.factories import AS_OF, record
from tests.ingest.test_follow import WAIT, count, followers, line
from tests.live import until

__all__ = ["followers"]


def exported_ids(root: Path, manifest: Manifest) -> list[str]:
    where = root / manifest.id
    rows = duckdb.sql(f"SELECT id FROM read_parquet('{where}/properties/*/*.parquet')").fetchall()
    return [r[0] for r in rows]


async def changes_since(client: Any, auth: dict[str, str], since: str) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    while True:
        answer = await client.get(f"/v1/properties/changes?since={since}&limit=100",
                                  headers=auth)  # fmt: skip
        assert answer.status_code == 200, answer.text
        body = answer.json()
        seen += body["data"]
        since = body["meta"]["nextCursor"]
        if not body["data"]:
            return seen


async def totals(client: Any, auth: dict[str, str], states: set[str]) -> dict[str, int]:
    found = {}
    for state in sorted(states):
        answer = await client.get(f"/v1/properties?state={state}&limit=1", headers=auth)
        found[state] = answer.json()["meta"]["total"]
    return found


async def test_the_feed_cursor_continues_where_the_snapshot_ends(
    fresh: Fresh, tmp_path: Path
) -> None:
    client, _, make_key = await fresh()
    auth = {"Authorization": f"Bearer {await make_key('enterprise')}"}
    db = await fresh.db()
    try:
        manifest = await export(db, tmp_path, "parquet")
        held = set(exported_ids(tmp_path, manifest))
        report = await load(
            db,
            enumerate(
                [
                    record("after-1"),
                    record("after-2", list_price=1),
                    record(sorted(held)[0], list_price=123_456),
                ],
                1,
            ),
            origin="import",
            as_of=AS_OF,
        )
        assert not report.rejects
    finally:
        await db.close()
    after = await changes_since(client, auth, manifest.feed_cursor)
    created = {c["id"] for c in after if c["changeType"] == "created"}
    assert created == {"after-1", "after-2"}
    assert not created & held  # nothing the snapshot holds comes again as created
    assert {c["id"] for c in after if c["changeType"] == "updated"} == {sorted(held)[0]}


async def test_an_export_while_a_follower_loads_is_one_version(
    fresh: Fresh, tmp_path: Path, followers: Any
) -> None:
    client, _, make_key = await fresh()
    auth = {"Authorization": f"Bearer {await make_key('enterprise')}"}
    source = tmp_path / "feed.jsonl"
    states = ["IA", "NY", "TX", "CA"]
    source.write_bytes(b"".join(line(f"first-{n}", address={
        "street_address": f"{n} Oak St", "city": "Ames", "state": "IA", "zip_code": "50010",
    }) for n in range(5)))  # fmt: skip
    follower = followers(fresh.store, str(source))
    await until(lambda: _at_least(fresh, 47), "the first lines committed")

    started, go = threading.Event(), threading.Event()
    outcome: dict[str, Any] = {}

    def paused(done: int, total: int) -> None:
        if not started.is_set():  # inside the snapshot, before any record is read
            started.set()
            go.wait(WAIT)

    async def exporting() -> None:
        db = await open_db(fresh.store)
        try:
            outcome["manifest"] = await export(db, tmp_path / "exports", progress=paused)
        finally:
            await db.close()

    thread = threading.Thread(target=lambda: asyncio.run(exporting()))
    thread.start()
    try:
        await until(lambda: _true(started.is_set()), "the export started")
        db = await open_db(fresh.store)
        try:
            before = await PropertyRepository(db).data_version()
        finally:
            await db.close()
        with source.open("ab") as f:
            for n in range(12):
                state = states[n % 4]
                f.write(line(f"during-{n}", address={
                    "street_address": f"{n} Elm St", "city": "Town", "state": state,
                    "county": None, "fips_code": None, "zip_code": {"IA": "50010", "NY": "10001", "TX": "77002", "CA": "94103"}[state],
                }))  # fmt: skip
        await until(lambda: _at_least(fresh, 59), "the later lines committed")
    finally:
        go.set()
        await asyncio.to_thread(thread.join, WAIT)
    assert follower.stop() == 0, follower.stderr
    manifest: Manifest = outcome["manifest"]
    db = await open_db(fresh.store)
    try:
        later = await PropertyRepository(db).data_version()
    finally:
        await db.close()
    # The version it started at (a rebuild may still have followed the first lines then),
    # not the later one the lines written while it ran made.
    assert manifest.data_version <= before < later

    held = exported_ids(tmp_path / "exports", manifest)
    assert len(held) == len(set(held)) == manifest.rows == 47
    after = await changes_since(client, auth, manifest.feed_cursor)
    created = {c["id"] for c in after if c["changeType"] == "created"}
    assert created == {f"during-{n}" for n in range(12)}
    assert not created & set(held)
    now = await totals(client, auth, set(states))
    where = tmp_path / "exports" / manifest.id
    per_state = dict(duckdb.sql(
        f"SELECT state, count(*) FROM read_parquet('{where}/properties/*/*.parquet',"
        " hive_partitioning = true) GROUP BY state"
    ).fetchall())  # fmt: skip
    for state in states:  # the snapshot's count and what came after it: today's total
        assert per_state.get(state, 0) + 3 == now[state], state


async def _at_least(fresh: Fresh, n: int) -> bool:
    return await count(fresh.store) >= n


async def _true(value: bool) -> bool:
    return value

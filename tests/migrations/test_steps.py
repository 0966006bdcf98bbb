"""The schema steps of the data and accounts stores, on SQLite and PostgreSQL.

Each step runs once and is recorded; what a landed step runs never changes; a store at any step
upgrades to the last and ends exactly like a new one, tables, indexes, triggers and functions
alike; a fresh store has the layout `migrations/schema.sql` shows; migrating a current store
changes nothing; the change feed and the change images watch every column they should.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from propdata.config import accounts_url
from propdata.events.repository import EventRepository, NewEvent
from propdata.kit.db import Database, connect
from propdata.kit.steps import upgrade
from propdata.migrations import layout as layouts
from propdata.migrations import steps as step_modules
from propdata.migrations.schema import ACCOUNTS, DATA, STEPS, migrate, migrate_accounts, steps_of
from propdata.webhooks.repository import WebhookRepository
from tests.conftest import PG_URL, Store, build_store, drop_store, new_store, open_db, scratch_db
from tests.factories import record


@dataclass
class Stores:
    data: Database
    accounts: Database
    shared: bool
    """PostgreSQL: both are one database (one record of steps, one `meta`)."""


@pytest.fixture
async def stores(backend: str, tmp_path: Path) -> AsyncIterator[Stores]:
    store = await new_store(backend, tmp_path)
    data = await connect(store.url)
    accounts = await connect(accounts_url(store.url))
    yield Stores(data, accounts, accounts_url(store.url) == store.url)
    await data.close()
    await accounts.close()
    await drop_store(store)


async def recorded(db: Database) -> list[tuple[int, str]]:
    rows = await db.fetch_all("SELECT version, name FROM schema_steps ORDER BY version")
    return [(int(v), str(n)) for v, n in rows]


async def layout(db: Database) -> str:
    """Every table, column, index, trigger and function of the store, as text."""
    return await layouts.dump(db)


async def meta(db: Database) -> dict[str, str]:
    return {str(k): str(v) for k, v in await db.fetch_all("SELECT key, value FROM meta")}


async def migrate_both(stores: Stores) -> None:
    await migrate(stores.data)
    await migrate_accounts(stores.accounts)


LANDED = {
    1: "8c88d82dfc6b",
    2: "417a6e07ec97",
    3: "50e38029a564",
    4: "14bb1521003b",
    5: "0e7cd59f9736",
    6: "132987f0c8b0",
    7: "8b5d89ac3c97",
    8: "edaaf2bea394",
    9: "71c8f7a23bb1",
    10: "5ab79bf53a6e",
    11: "30406a5cfd4a",
    12: "74a8853e8043",
    13: "9846713aa872",
    14: "cd2feaf84193",
    15: "e7089fa88990",
    16: "7b04fc1d537d",
    17: "33f7babbdbd0",
    18: "d40f67f4fb34",
    19: "17a1f9e89319",
    20: "331fdb682f6f",
    21: "93b4103857b8",
    22: "fed79e74649d",
}
"""The sha256 of what each landed step runs (its first 12 hex digits, `runs`). A landed step
never changes: a store that ran it will not run it again, so a changed step makes stores that
differ. A change of the layout is a new step."""


def runs(module: ModuleType) -> str:
    """What a step runs: its statements of each dialect (written out, or made by the frozen
    pieces of `steps.base` it calls) and the code of a step that runs code of its own."""
    statements = [list(getattr(module, name, ())) for name in ("SQLITE", "POSTGRESQL")]
    apply = getattr(module, "_apply", None)
    code = inspect.getsource(apply) if apply else ""
    return hashlib.sha256((json.dumps(statements) + code).encode()).hexdigest()[:12]


def test_a_landed_step_never_changes() -> None:
    held = {module.STEP.version: runs(module) for module in step_modules.MODULES}
    assert {v: held[v] for v in LANDED} == LANDED


async def test_a_fresh_store_has_the_layout_schema_sql_shows(backend: str) -> None:
    """`make schema` wrote migrations/schema.sql from fresh stores; `make check` also
    compares the whole file."""
    shown = layouts.sections(layouts.SCHEMA_SQL.read_text())
    if backend == "embedded":
        fresh = await layouts.fresh_layouts(None)
    else:
        fresh = {layouts.POSTGRESQL: (await layouts.fresh_layouts(PG_URL))[layouts.POSTGRESQL]}
    for name, text in fresh.items():
        assert shown[name] == text, f"{name}: run `make schema` (or add a step)"


def test_the_steps_are_numbered_one_after_another() -> None:
    assert [step.version for _, step in STEPS] == list(range(1, len(STEPS) + 1))
    assert {part for part, _ in STEPS} == {DATA, ACCOUNTS}
    assert len({step.name for _, step in STEPS}) == len(STEPS)


async def test_each_step_runs_once_and_is_recorded(stores: Stores) -> None:
    await migrate_both(stores)
    data_steps = [(s.version, s.name) for s in steps_of(DATA)]
    account_steps = [(s.version, s.name) for s in steps_of(ACCOUNTS)]
    if stores.shared:
        assert await recorded(stores.data) == sorted(data_steps + account_steps)
    else:
        assert await recorded(stores.data) == data_steps
        assert await recorded(stores.accounts) == account_steps
    assert await upgrade(stores.data, steps_of(DATA)) == []
    assert await upgrade(stores.accounts, steps_of(ACCOUNTS)) == []


async def test_migrating_a_current_store_changes_nothing(stores: Stores) -> None:
    await migrate_both(stores)
    before = [await layout(stores.data), await meta(stores.data), await recorded(stores.data),
              await layout(stores.accounts), await meta(stores.accounts)]  # fmt: skip
    assert {"data_version", "store_id", "cursor_secret"} <= set(before[1])
    assert "portal_secret" in before[4]
    await migrate_both(stores)
    await migrate_both(stores)
    after = [await layout(stores.data), await meta(stores.data), await recorded(stores.data),
             await layout(stores.accounts), await meta(stores.accounts)]  # fmt: skip
    assert after == before


@pytest.mark.parametrize("part", [DATA, ACCOUNTS])
async def test_a_store_at_every_step_upgrades_to_the_last(
    backend: str, tmp_path: Path, part: str
) -> None:
    steps = steps_of(part)
    migrator = migrate if part == DATA else migrate_accounts
    ends = []
    for reached in range(len(steps) + 1):
        async with scratch_db(
            backend, tmp_path / f"{part}-{reached}", lambda s: connect(s.url)
        ) as db:
            assert await upgrade(db, steps[:reached]) == [s.version for s in steps[:reached]]
            await migrator(db)
            assert [v for v, _ in await recorded(db)] == [s.version for s in steps]
            ends.append(await layout(db))
    assert all(end == ends[0] for end in ends)


async def test_a_store_made_before_steps_were_recorded_records_them_unchanged(
    stores: Stores,
) -> None:
    """The layout of steps 1 and 2 with the fingerprints that layout kept in `meta`, and
    no record of steps: it records every step, keeps its data and its ids, and loses only
    the fingerprints."""
    for db, part in ((stores.data, DATA), (stores.accounts, ACCOUNTS)):
        async with db.transaction():
            await steps_of(part)[0].apply(db)
            await db.execute(
                "INSERT INTO meta (key, value) VALUES (?, 'f00d') ON CONFLICT (key) DO NOTHING",
                (f"schema:{part}",),
            )
    await stores.accounts.execute(
        "INSERT INTO meta (key, value) VALUES ('keys_moved', '0') ON CONFLICT (key) DO NOTHING"
    )
    await stores.data.execute(
        "INSERT INTO market_history (zip_code, month, active_listings, sold_count)"
        " VALUES ('02139', '2026-10', 12, 3)"
    )
    ids = await meta(stores.data), await meta(stores.accounts)
    await migrate_both(stores)
    for db, before in zip((stores.data, stores.accounts), ids, strict=True):
        assert await meta(db) == {
            k: v for k, v in before.items() if not k.startswith("schema:") and k != "keys_moved"
        }
    steps = {s.version for s in steps_of(DATA) + steps_of(ACCOUNTS)}
    held = {v for v, _ in await recorded(stores.data) + await recorded(stores.accounts)}
    assert held == steps
    assert await stores.data.fetch_all("SELECT zip_code, sold_count FROM market_history") == [
        ("02139", 3)
    ]


async def test_the_feed_watches_every_column_of_a_property_but_the_derived_keys(
    stores: Stores,
) -> None:
    await migrate(stores.data)
    if stores.data.dialect == "postgresql":
        row = await stores.data.fetch_one(
            "SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c"
            " ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND t.tgname = 'feed_updated'"
        )
    else:
        row = await stores.data.fetch_one(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'feed_updated'"
        )
    assert row is not None
    trigger = str(row[0])
    _, columns = await layouts.columns(stores.data, "properties")
    watched = {c for c in columns if f"old.{c} is" in trigger.lower()}
    assert watched == set(columns) - {"street_key", "city_key"}


@pytest.mark.parametrize("table", ["properties", "market_snapshots"])
async def test_the_change_images_watch_every_column(stores: Stores, table: str) -> None:
    """What the event producer compares sees every column, so a step that adds one makes
    the images anew: SQLite's image names each column but the content hash; PostgreSQL's
    image is the whole row, and its change test compares each column but the key and, of a
    property, the address keys."""
    await migrate(stores.data)
    key, others = await layouts.columns(stores.data, table)
    every = {*key, *others}
    images = "property_images" if table == "properties" else "market_images"
    if stores.data.dialect == "postgresql":
        row = await stores.data.fetch_one(
            "SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE n.nspname = current_schema() AND p.proname = ?",
            (f"propdata_{images}",),
        )
        assert row is not None
        watched = {c for c in others if re.search(rf"\bo\.{c}\b", str(row[0]))}
        watched |= set(key)  # the images join on it
        unwatched = {"street_key", "city_key"} if table == "properties" else set()
    else:
        row = await stores.data.fetch_one(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?",
            (f"{images}_updated",),
        )
        assert row is not None
        watched = {c for c in every if f"'{c}', NEW.{c}" in str(row[0])}
        unwatched = {"content_hash"}
    assert watched == every - unwatched


async def test_a_store_made_before_removals_were_told_apart_writes_them_once_upgraded(
    stores: Stores,
) -> None:
    """A store stopped before the step that tells removals apart wrote a removal as
    `updated`; that row stays, and once upgraded a removal is `removed`."""
    db = stores.data
    (removals,) = [s for s in steps_of(DATA) if "removal" in s.name]
    assert await upgrade(db, [s for s in steps_of(DATA) if s.version < removals.version])
    # Written as a load of the time wrote them (today's loader writes today's columns):
    # a new record, then the one before it removed.
    for pid, gone in (("d-1", None), ("d-2", "d-1"), ("d-3", "d-2")):
        if pid == "d-3":
            await migrate(db)
        if gone is not None:
            await db.execute("DELETE FROM properties WHERE id = ?", (gone,))
        await db.execute(
            "INSERT INTO properties (id, origin, status, city, city_key, state, zip_code,"
            " last_updated, content_hash) VALUES (?, 'demo', 'forSale', 'Ames', 'AMES', 'IA',"
            " '50010', '2026-10-01T12:00:00Z', 'h')",
            (pid,),
        )
    rows = await db.fetch_all("SELECT property_id, change_type FROM property_changes ORDER BY seq")
    assert [tuple(row) for row in rows] == [
        ("d-1", "created"),
        ("d-1", "updated"),
        ("d-2", "created"),
        ("d-2", "removed"),
        ("d-3", "created"),
    ]


async def test_the_city_key_step_recomputes_stored_keys(backend: str, tmp_path: Path) -> None:
    address = {"street_address": "18 Market St", "city": "Saint Paul", "state": "MN",
               "zip_code": "55101", "county": None, "fips_code": None}  # fmt: skip

    async def built(store: Store) -> Database:
        await build_store(store, [record("p-1", address=address), record("p-2")])
        return await open_db(store)

    async with scratch_db(backend, tmp_path, built) as db:
        step = next(s for s in steps_of(DATA) if s.name.startswith("city keys"))
        # A store keyed by the rule the step replaces: "Saint" kept as it was written.
        for table in ("properties", "market_snapshots"):
            await db.execute(
                f"UPDATE {table} SET city_key = 'SAINT PAUL' WHERE city = 'Saint Paul'"
            )
        await db.execute("DELETE FROM schema_steps WHERE version = ?", [step.version])
        version = (await meta(db))["data_version"]
        await migrate(db)
        for table in ("properties", "market_snapshots"):
            keys = await db.fetch_all(f"SELECT DISTINCT city, city_key FROM {table} ORDER BY 1")
            assert [tuple(k) for k in keys] == [("Ames", "AMES"), ("Saint Paul", "ST PAUL")]
        assert int((await meta(db))["data_version"]) == int(version) + 1
        await db.execute("DELETE FROM schema_steps WHERE version = ?", [step.version])
        await migrate(db)  # nothing to change: the data version stays
        assert int((await meta(db))["data_version"]) == int(version) + 1


async def test_a_store_at_step_15_with_events_and_deliveries_upgrades(
    backend: str, tmp_path: Path
) -> None:
    """Events written when every owner's shared one numbering get their owner's sequence (in
    their JSON too; a test event none, and 0); each delivery's last attempt becomes an attempt
    row; the duplicate pending deliveries a replay queued merge into one; the numbering goes
    on where each owner's stopped."""
    async with scratch_db(backend, tmp_path, lambda store: connect(accounts_url(store.url))) as db:
        await upgrade(db, [s for s in steps_of(ACCOUNTS) if s.version <= 15])
        events = [  # row, owner, type, endpoint (a test event's)
            (1, "acct:a", "property.listed", None), (2, "acct:b", "property.listed", None),
            (3, "acct:a", "search.entered", None), (4, "acct:a", "webhook.test", "wh_1"),
            (5, "acct:a", "property.priceChanged", None),
        ]  # fmt: skip
        for seq, owner, kind, endpoint in events:
            body = (f'{{"id":"evt_{seq}","type":"{kind}","timestamp":"2026-11-20T00:00:00.000Z",'
                    f'"sequence":{seq},"data":{{"searchId":"srch_1","sequence":{seq}}}}}')  # fmt: skip
            await db.execute(
                "INSERT INTO events (seq, id, owner, type, search_id, endpoint_id, created_at,"
                " body) VALUES (?, ?, ?, ?, ?, ?, '2026-11-20T00:00:00.000Z', ?)",
                (seq, f"evt_{seq}", owner, kind, None if endpoint else "srch_1", endpoint, body),
            )
        if db.dialect == "postgresql":  # as step 15's code numbered them: the identity's
            await db.execute("SELECT setval(pg_get_serial_sequence('events', 'seq'), 5)")
        await db.execute(
            "INSERT INTO webhook_endpoints (id, owner, url, status, secret, cursor_seq,"
            " created_at) VALUES ('wh_1', 'acct:a', 'https://example.com/h', 'enabled',"
            " 'whsec_x', 5, '2026-11-20T00:00:00.000Z')"
        )
        deliveries = [  # row, state, attempt, response, error, attempted at
            (1, "succeeded", 1, 200, None, "2026-11-20T00:00:01.000Z"),
            (3, "pending", 2, 500, "http_status", "2026-11-20T00:05:00.000Z"),
            (3, "pending", 0, None, None, None),  # queued again by a replay
            (5, "pending", 0, None, None, None),
        ]
        for seq, state, attempt, status, error, at in deliveries:
            await db.execute(
                "INSERT INTO webhook_deliveries (endpoint_id, event_seq, event_id, type, state,"
                " attempt, next_attempt_at, response_status, error, duration_ms, attempted_at,"
                " made_at) VALUES ('wh_1', ?, ?, 'property.listed', ?, ?, 1.0, ?, ?, ?, ?, 1.0)",
                (seq, f"evt_{seq}", state, attempt, status, error, 12 if at else None, at),
            )
        await migrate_accounts(db)

        rows = await db.fetch_all("SELECT seq, sequence, body FROM events ORDER BY seq")
        assert [(r[0], r[1]) for r in rows] == [(1, 1), (2, 1), (3, 2), (4, None), (5, 3)]
        assert [json.loads(r[2])["sequence"] for r in rows] == [1, 1, 2, 0, 3]
        assert [json.loads(r[2])["data"]["sequence"] for r in rows] == [1, 2, 3, 4, 5]
        counters = await db.fetch_all("SELECT owner, sequence FROM event_sequences ORDER BY 1")
        assert [tuple(r) for r in counters] == [("acct:a", 3), ("acct:b", 1)]
        async with db.transaction():
            new = NewEvent("evt_6", "acct:a", "property.listed", "srch_1", None,
                           "2026-11-21T00:00:00.000Z", "{}")  # fmt: skip
            (made,) = await EventRepository(db).insert_events([new])
        assert made.sequence == 4

        total, listed = await WebhookRepository(db).deliveries("wh_1", 10, 0)
        shown = [(d.event_id, d.attempt, d.status, d.response_status, d.error) for d in listed]
        assert total == 4
        assert sorted(shown) == [
            ("evt_1", 1, "succeeded", 200, None),
            ("evt_3", 2, "failed", 500, "http_status"),
            ("evt_3", 3, "pending", None, None),
            ("evt_5", 1, "pending", None, None),
        ]
        attempted = await db.fetch_all("SELECT event_id, at FROM webhook_attempts ORDER BY at")
        assert [(r[0], round(float(r[1]))) for r in attempted] == [
            ("evt_1", 1_795_132_801), ("evt_3", 1_795_133_100),
        ]  # fmt: skip

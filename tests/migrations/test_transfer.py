"""`propdata data copy`: an embedded store moves to PostgreSQL with nothing lost."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from propdata.accounts.keys import CustomLimits, KeyService, keys_of
from propdata.app import open_stores
from propdata.cli import app
from propdata.events.repository import (
    EventRepository,
    ImageRepository,
    NewEvent,
    ProducerRepository,
)
from propdata.kit.db import Database
from propdata.migrations import layout
from propdata.migrations.schema import COPIED_ACCOUNTS, COPIED_DATA, LEFT_BEHIND
from propdata.migrations.transfer import TransferError, copy_stores
from propdata.saved_searches.repository import SavedSearchRepository, SavedSearchRow, WatchedRecords
from propdata.valuation.repository import ModelRow, ValuationRepository
from propdata.webhooks.repository import WebhookRepository
from propdata.webhooks.schemas import EndpointRow
from tests.conftest import build_store, drop_store, new_store, settings_for
from tests.factories import import_records, record

OWNER = "key:k-moving"
WHEN = "2026-11-21T00:00:00.000Z"


def new_event(n: int) -> NewEvent:
    return NewEvent(f"evt_{n}", OWNER, "property.listed", "srch_ames", None, WHEN, "{}")


async def watched(accounts: Database, events: int) -> list[int]:
    """A saved search, its events, a webhook endpoint and its deliveries; the events' numbers."""
    hooks = WebhookRepository(accounts)
    async with accounts.transaction():
        await SavedSearchRepository(accounts).insert(
            SavedSearchRow("srch_ames", OWNER, "ames", '{"city": "Ames"}', "[]", WHEN)
        )
        numbers = [
            made.seq
            for made in await EventRepository(accounts).insert_events(
                [new_event(n) for n in range(events)]
            )
        ]
        await hooks.insert(EndpointRow("wh_1", OWNER, "https://example.com/hook", None, None,
                                       "staging", "enabled", None, "whsec_c2VjcmV0", None, None,
                                       numbers[-1], WHEN, None))  # fmt: skip
        await hooks.insert_deliveries(
            [("wh_1", seq, f"evt_{n}", "property.listed", 1.5) for n, seq in enumerate(numbers)]
        )
        await ProducerRepository(accounts).count_produced(29_000_000, {OWNER: events})
    return numbers


async def test_copy_to_postgresql_is_exact_and_verified(tmp_path: Path) -> None:
    source_store = await new_store("embedded", tmp_path)
    await build_store(source_store)
    target_store = await new_store("scaleout", tmp_path)
    async with keys_of(source_store.url) as keys:  # the embedded accounts file
        _, secret = await keys.create("pro", "moving", CustomLimits())
    source = await open_stores(settings_for(source_store))
    target = await open_stores(settings_for(target_store))
    assert source[0] is not source[1] and target[0] is target[1]
    try:
        comparable = '[["t-001", "2025-01-02", 250000, 0.4, 0.3]]'  # as a rebuild stores them
        async with source[0].transaction():
            await ValuationRepository(source[0]).write_comparables([("t-000", comparable)])
            model = ModelRow("value", 3, "2026-11-21", 42, 30, 0)
            await ValuationRepository(source[0]).replace_models(
                [(model, b"\x00header")], [("value", "50010", ["t-000"], b"\x01\x02")]
            )
        numbers = await watched(source[1], 3)
        reports = await copy_stores(source, target)
        by_table = {r.table: r for r in reports}
        assert all(r.equal for r in reports), reports
        assert set(by_table) == {*COPIED_DATA, *COPIED_ACCOUNTS}, "every table is copied"
        held = set(await layout.tables(source[0])) | set(await layout.tables(source[1]))
        held |= set(await layout.tables(target[0]))
        assert held == {*COPIED_DATA, *COPIED_ACCOUNTS, *LEFT_BEHIND}, (
            "each table of a store is copied or left behind on purpose"
        )
        for table in ("saved_searches", "events", "event_sequences", "webhook_endpoints",
                      "webhook_deliveries", "event_counts", "valuation_models",
                      "valuation_training", "zip_places", "valuation_comparables",
                      "market_history"):  # fmt: skip
            assert by_table[table].target_rows > 0, table
        assert by_table["properties"].target_rows == 42
        assert by_table["property_histories"].target_rows == 42
        # the key works against the copy: same hash, same plan
        moved = await KeyService(target[1]).authenticate(f"Bearer {secret}")
        assert moved.plan == "pro" and moved.name == "moving"
        # events keep their numbers and each owner's sequence (clients' cursors hold), and
        # new ones come after them
        events = EventRepository(target[1])
        listed = await events.page(OWNER, 0, 10)
        assert [(row.seq, row.sequence) for row in listed] == [
            (seq, n) for n, seq in enumerate(numbers, 1)
        ]
        async with target[1].transaction():
            (after,) = await events.insert_events([new_event(9)])
        assert after.seq > numbers[-1] and after.sequence == len(numbers) + 1
        hooks = WebhookRepository(target[1])
        async with target[1].transaction():
            await hooks.insert_deliveries([("wh_1", after.seq, "evt_9", "property.listed", 1.5)])
        endpoint = await hooks.get(OWNER, "wh_1")
        assert endpoint is not None and endpoint.secret == "whsec_c2VjcmV0"
        with pytest.raises(TransferError, match="already holds"):
            await copy_stores(source, target)
    finally:
        for db in (*source, target[0]):
            await db.close()
        await drop_store(target_store)


def test_the_command_turns_pending_changes_into_events_before_it_copies(tmp_path: Path) -> None:
    """The change images stay behind, so `data copy` first lets the producer read them: a
    saved search's events of the last load are in the copy."""
    source_store = asyncio.run(new_store("embedded", tmp_path))
    target_store = asyncio.run(new_store("scaleout", tmp_path))

    async def watch_and_load() -> None:
        data, accounts = await open_stores(settings_for(source_store))
        try:
            await SavedSearchRepository(accounts).insert(
                SavedSearchRow("srch_ames", OWNER, "ames", '{"city": "Ames"}', "[]", WHEN)
            )
            await WatchedRecords(data).set_watching(True)
            await import_records(data, [record("p-1")])
            assert await ImageRepository(data).pending()
        finally:
            for db in {id(d): d for d in (data, accounts)}.values():
                await db.close()

    async def copied_events() -> list[str]:
        data, _ = await open_stores(settings_for(target_store))
        try:
            return [row.type for row in await EventRepository(data).page(OWNER, 0, 10)]
        finally:
            await data.close()

    try:
        asyncio.run(watch_and_load())
        env = {"PROPDATA_DATABASE_URL": source_store.url, "PROPDATA_AS_OF": "2026-11-21"}
        result = CliRunner().invoke(app, ["data", "copy", "--to", target_store.url], env=env)
        assert result.exit_code == 0, result.stderr
        assert "produced for saved searches before the copy" in " ".join(result.stderr.split())
        assert asyncio.run(copied_events()) == ["search.entered", "property.listed"]
    finally:
        asyncio.run(drop_store(target_store))

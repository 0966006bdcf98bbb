"""The event log's statements and cursors, on both stores."""

from __future__ import annotations

import pytest

from propdata.errors import InvalidParameter
from propdata.events import cursor
from propdata.events.repository import EventRepository, NewEvent
from propdata.kit.db import Database
from propdata.migrations.schema import migrate_accounts


def _event(n: int, owner: str, type_: str = "search.entered", **kw: str | None) -> NewEvent:
    return NewEvent(
        id=f"evt_{n:026d}", owner=owner, type=type_, search_id=kw.get("search_id", "srch_a"),
        endpoint_id=kw.get("endpoint_id"), created_at=f"2026-11-25T00:00:{n % 60:02d}.000Z",
        body="{}",
    )  # fmt: skip


async def test_events_are_numbered_in_order_and_paged_per_owner(empty_db: Database) -> None:
    await migrate_accounts(empty_db)
    repo = EventRepository(empty_db)
    async with empty_db.transaction():
        numbers = await repo.insert_events(
            [_event(1, "acct:a"), _event(2, "acct:b"), _event(3, "acct:a", "property.listed")]
        )
    assert numbers == sorted(numbers) and len(set(numbers)) == 3
    page = await repo.page("acct:a", 0, 10)
    assert [r.id for r in page] == [f"evt_{1:026d}", f"evt_{3:026d}"]
    assert [r.id for r in await repo.page("acct:a", page[0].seq, 10)] == [f"evt_{3:026d}"]
    assert [r.type for r in await repo.page("acct:a", 0, 10, types=["property.listed"])] == [
        "property.listed"
    ]
    assert await repo.page("acct:a", 0, 10, search_id="srch_other") == []
    assert await repo.last() == numbers[-1]


async def test_test_events_are_not_listed(empty_db: Database) -> None:
    await migrate_accounts(empty_db)
    repo = EventRepository(empty_db)
    async with empty_db.transaction():
        await repo.insert_events([_event(1, "key:k", "webhook.test", search_id=None,
                                         endpoint_id="wh_1")])  # fmt: skip
    assert await repo.page("key:k", 0, 10) == []


def test_a_cursor_round_trips_and_anything_else_names_the_parameter() -> None:
    assert cursor.decode(cursor.encode(41), "since") == 41
    assert cursor.decode(cursor.encode(0), "since") == 0
    for bad in ("", "abc", "ZTE6LTE", cursor.encode(1) + "x", "f1:1"):
        with pytest.raises(InvalidParameter) as caught:
            cursor.decode(bad, "since")
        assert caught.value.parameter == "since"

"""The event log's statements and cursors, on both stores."""

from __future__ import annotations

import base64
import json

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
    rows = [n.seq for n in numbers]
    assert rows == sorted(rows) and len(set(rows)) == 3
    assert [n.sequence for n in numbers] == [1, 1, 2]  # each owner's own, from 1
    page = await repo.page("acct:a", 0, 10)
    assert [r.id for r in page] == [f"evt_{1:026d}", f"evt_{3:026d}"]
    assert [json.loads(r.body)["sequence"] for r in page] == [1, 2]
    assert [r.id for r in await repo.page("acct:a", 1, 10)] == [f"evt_{3:026d}"]
    assert [r.type for r in await repo.page("acct:a", 0, 10, types=["property.listed"])] == [
        "property.listed"
    ]
    assert await repo.page("acct:a", 0, 10, search_id="srch_other") == []
    assert await repo.last() == rows[-1]
    assert (await repo.last_sequence("acct:a"), await repo.last_sequence("acct:new")) == (2, 0)


async def test_each_owner_s_sequence_has_no_gap_and_goes_on_after_pruning(
    empty_db: Database,
) -> None:
    """Another owner's events, a test event and a prune take no number from an owner: its
    receivers see 1, 2, 3, ... and know what they missed."""
    await migrate_accounts(empty_db)
    repo = EventRepository(empty_db)
    for n in range(6):
        async with empty_db.transaction():
            await repo.insert_events([
                _event(10 * n, "acct:a"), _event(10 * n + 1, "acct:noisy"),
                _event(10 * n + 2, "acct:noisy"),
                _event(10 * n + 3, "acct:a", "webhook.test", search_id=None, endpoint_id="wh_1"),
            ])  # fmt: skip
    assert [r.sequence for r in await repo.page("acct:a", 0, 100)] == [1, 2, 3, 4, 5, 6]
    async with empty_db.transaction():
        await repo.prune("2026-11-26T00:00:00.000Z")  # every event but the newest row
    async with empty_db.transaction():
        (made,) = await repo.insert_events([_event(99, "acct:a")])
    assert made.sequence == 7
    (listed,) = await repo.page("acct:a", 6, 10)
    assert json.loads(listed.body)["sequence"] == 7


async def test_a_cursor_of_the_log_s_rows_resumes_at_the_owner_s_place(empty_db: Database) -> None:
    """A cursor handed out when every owner's events shared one numbering (`e1:<row>`) still
    resumes right: after the owner's last event at or before that row."""
    await migrate_accounts(empty_db)
    repo = EventRepository(empty_db)
    async with empty_db.transaction():
        made = await repo.insert_events(
            [_event(1, "acct:a"), _event(2, "acct:b"), _event(3, "acct:a"), _event(4, "acct:b")]
        )
    old = base64.urlsafe_b64encode(f"e1:{made[1].seq}".encode()).decode().rstrip("=")
    place = cursor.decode(old, "since")
    assert place == cursor.Place(made[1].seq, row=True)
    assert await repo.after("acct:a", place) == 1  # a's event 1 came before b's row
    assert await repo.after("acct:b", place) == 1
    assert await repo.after("acct:a", cursor.decode(cursor.encode(2), "since")) == 2


async def test_test_events_are_not_listed(empty_db: Database) -> None:
    await migrate_accounts(empty_db)
    repo = EventRepository(empty_db)
    async with empty_db.transaction():
        (made,) = await repo.insert_events([_event(1, "key:k", "webhook.test", search_id=None,
                                                   endpoint_id="wh_1")])  # fmt: skip
    assert made.sequence is None
    assert await repo.page("key:k", 0, 10) == []
    assert await repo.last_sequence("key:k") == 0


def test_a_cursor_round_trips_and_anything_else_names_the_parameter() -> None:
    assert cursor.decode(cursor.encode(41), "since") == cursor.Place(41)
    assert cursor.decode(cursor.encode(0), "since") == cursor.Place(0)
    assert base64.urlsafe_b64decode(cursor.encode(41) + "==") == b"e2:41"
    for bad in ("", "abc", "ZTE6LTE", cursor.encode(1) + "x", "f1:1"):
        with pytest.raises(InvalidParameter) as caught:
            cursor.decode(bad, "since")
        assert caught.value.parameter == "since"

"""Event decisions: the event log's pages."""

from __future__ import annotations

import msgspec

from propdata.accounts.owners import owner_of
from propdata.accounts.schemas import ApiKey
from propdata.errors import InvalidParameter
from propdata.events import cursor
from propdata.events.repository import EventRepository
from propdata.events.schemas import EVENT_TYPES, EventsMeta, RawEventsResponse
from propdata.kit.db import Database


class EventService:
    def __init__(self, accounts: Database) -> None:
        self.repo = EventRepository(accounts)

    async def page(
        self, key: ApiKey, since: str | None, types: str | None, search_id: str | None, limit: int
    ) -> RawEventsResponse:
        """The owner's events after `since`, oldest first, as they were stored."""
        owner = owner_of(key)
        after = 0 if since is None else await self.repo.after(owner, cursor.decode(since, "since"))
        wanted = _types(types)
        rows = await self.repo.page(owner, after, limit, wanted, search_id)
        last = rows[-1].sequence if rows else max(after, await self.repo.last_sequence(owner))
        assert last is not None  # listed events all have one
        raw = b"[" + b",".join(row.body.encode() for row in rows) + b"]"
        return RawEventsResponse(
            meta=EventsMeta(limit=limit, next_cursor=cursor.encode(last)), data=msgspec.Raw(raw)
        )


def _types(raw: str | None) -> list[str]:
    if raw is None:
        return []
    wanted = [t.strip() for t in raw.split(",")]
    for name in wanted:
        if name not in EVENT_TYPES:
            raise InvalidParameter(
                "types",
                f"Unknown event type '{name}' in 'types'; expected a comma-separated list of:"
                f" {', '.join(EVENT_TYPES)}.",
            )
    return list(dict.fromkeys(wanted))

"""Change feed decisions: its cursors, its pages, and how long changes are kept."""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime as dt
import logging
from collections.abc import Callable

from propdata.errors import InvalidParameter
from propdata.feed.repository import FeedRepository
from propdata.feed.schemas import ChangesMeta, ChangesResponse, PropertyChange
from propdata.kit.db import Database, StoreUnavailable

KEPT_DAYS = 30
"""Days every change is kept; older ones go once a later change of the same property
supersedes them (a property's newest change is kept for ever)."""
PRUNE_EVERY = 600.0
"""Seconds between a server's checks whether today's pruning is done."""
SINCE = "since"
_VERSION = "f1"

log = logging.getLogger("propdata")


class FeedService:
    def __init__(self, db: Database) -> None:
        self.repo = FeedRepository(db)
        self._store: str | None = None

    async def _store_tag(self) -> str:
        """What ties a cursor to this store (the start of its id): another store's is a 400."""
        if self._store is None:
            self._store = (await self.repo.store_id())[:12]
        return self._store

    async def changes(self, since: str | None, limit: int) -> ChangesResponse:
        """The changes after cursor `since` (from the oldest kept without it), `limit` of them."""
        store = await self._store_tag()
        after = 0 if since is None else _position(since, store)
        rows = await self.repo.page(after, limit)
        last = rows[-1].seq if rows else after
        return ChangesResponse(
            meta=ChangesMeta(limit=limit, next_cursor=_cursor(last, store)),
            data=[
                PropertyChange(id=r.property_id, change_type=r.change_type,  # type: ignore[arg-type]
                               last_updated=r.last_updated)
                for r in rows
            ],
        )  # fmt: skip

    async def prune(self, today: dt.date) -> int | None:
        """Today's pruning, done by one process of all: the number of changes removed, or
        None when another process has pruned today already."""
        before = (today - dt.timedelta(days=KEPT_DAYS)).isoformat()
        async with self.repo.db.transaction():
            if not await self.repo.take_pruning_turn(today.isoformat()):
                return None
            return await self.repo.prune(before)

    async def keep_pruned(self, today: Callable[[], dt.date], every: float = PRUNE_EVERY) -> None:
        """Prune now, then check again every `every` seconds (a server's task)."""
        while True:
            try:
                removed = await self.prune(today())
                if removed:
                    log.info("change feed: %d superseded changes over %d days old removed",
                             removed, KEPT_DAYS)  # fmt: skip
            except StoreUnavailable as exc:
                log.warning("pruning the change feed waits for the store: %s", exc)
            await asyncio.sleep(every)


def cursor_at(seq: int, store_id: str) -> str:
    """The feed's cursor of the position after change `seq` of the store `store_id` (an
    export's `feedCursor`): following it gives the changes numbered above `seq`."""
    return _cursor(seq, store_id[:12])


def _cursor(seq: int, store: str) -> str:
    raw = f"{_VERSION}:{seq}:{store}".encode("ascii")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _position(cursor: str, store: str) -> int:
    """The change number a cursor of this store stands for; a 400 naming `since` otherwise."""
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True)
        version, seq, owner = raw.decode("ascii").split(":")
    except (ValueError, binascii.Error, UnicodeDecodeError):
        version, seq, owner = "", "", ""
    if version != _VERSION or not seq.isdigit() or len(seq) > 18:
        raise InvalidParameter(
            SINCE, f"'{SINCE}' is not a cursor of this feed: pass meta.nextCursor as it came."
        )
    if owner != store:
        raise InvalidParameter(
            SINCE, f"'{SINCE}' is a cursor of another store: start again without '{SINCE}'."
        )
    return int(seq)

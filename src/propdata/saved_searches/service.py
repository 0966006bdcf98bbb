"""Saved-search decisions: what a body may hold, an owner's limit, and match counts."""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import msgspec

from propdata.accounts.keys import KeyService
from propdata.accounts.owners import owner_of, plan_limit
from propdata.accounts.schemas import ApiKey
from propdata.api import body as bodies
from propdata.api.schemas import PageMeta
from propdata.errors import InvalidParameter, NotFound, PlanLimitReached
from propdata.kit.clock import iso_ms
from propdata.kit.db import Database
from propdata.plans import Plan
from propdata.properties.schemas import PROPERTY_ID
from propdata.saved_searches import filters
from propdata.saved_searches.counts import Counted, MatchCounts, Stored
from propdata.saved_searches.repository import (
    SavedSearchRepository,
    SavedSearchRow,
    WatchedRecords,
)
from propdata.saved_searches.schemas import (
    MAX_IDS,
    MAX_NAME,
    RawSavedSearch,
    RawSavedSearchList,
    SavedSearch,
    SavedSearchList,
)
from propdata.search.service import SearchService

S = TypeVar("S", bound=Stored)

FIELDS = ("name", "filters", "propertyIds")
"""What a saved search's body takes."""
_ID = re.compile(PROPERTY_ID)


def searches_refusal(plan: Plan, held: int) -> PlanLimitReached | None:
    """Why an owner on `plan` holding `held` saved searches may not save another, or None."""
    if held >= plan.saved_searches:
        return plan_limit(plan, "saved_searches", "saved search", "saved searches")
    return None


class SavedSearchService:
    def __init__(
        self,
        accounts: Database,
        data: Database,
        keys: KeyService,
        search: SearchService,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.repo = SavedSearchRepository(accounts)
        self.accounts = accounts
        self.images = WatchedRecords(data)
        self.keys = keys
        self.search = search
        self.clock = clock
        self.counts = MatchCounts(self.images, search)

    async def create(self, key: ApiKey, body: Mapping[str, Any]) -> SavedSearch:
        """Save a search for the key's owner; 403 past the owner's plan."""
        name, wanted, ids = _checked(body, partial=False)
        owner = owner_of(key)
        row = SavedSearchRow(
            id="srch_" + secrets.token_hex(12), owner=owner, name=name or "",
            filters=json.dumps(wanted or {}), property_ids=json.dumps(ids or []),
            created_at=iso_ms(self.clock()),
        )  # fmt: skip
        plan = await self.keys.plan_of(key)
        async with self.accounts.transaction():
            refusal = searches_refusal(plan, await self.repo.count(owner))
            if refusal is not None:
                raise refusal
            await self.repo.insert(row)
        if not await self.images.watching():
            await self.images.set_watching(True)
        return await self._wire(row)

    async def refusal(self, key: ApiKey) -> PlanLimitReached | None:
        """Why the key's owner may not save another search (its plan's limit, naming the
        plan that raises it), or None: what `create` would answer."""
        plan = await self.keys.plan_of(key)
        return searches_refusal(plan, await self.repo.count(owner_of(key)))

    async def page(self, key: ApiKey, limit: int, offset: int) -> SavedSearchList:
        """A page of the owner's searches, oldest first, with their match counts."""
        meta, rows, counted = await self._page(self.repo.page, key, limit, offset)
        return SavedSearchList(meta=meta, data=[_wire(row, counted[row.id]) for row in rows])

    async def raw_page(self, key: ApiKey, limit: int, offset: int) -> RawSavedSearchList:
        """`page` with each search's filters and ids as stored (the API's answer)."""
        meta, rows, counted = await self._page(self.repo.raw_page, key, limit, offset)
        return RawSavedSearchList(
            meta=meta,
            data=[
                RawSavedSearch(
                    id=row.id, name=row.name, filters=msgspec.Raw(row.filters),
                    property_ids=msgspec.Raw(row.property_ids),
                    created_at=row.created_at, match_count=counted[row.id].total,
                    data_version=counted[row.id].version,
                )
                for row in rows
            ],
        )  # fmt: skip

    async def _page(
        self,
        read: Callable[[str, int, int], Awaitable[list[S]]],
        key: ApiKey,
        limit: int,
        offset: int,
    ) -> tuple[PageMeta, list[S], dict[str, Counted]]:
        """The page's meta, the owner's searches on it as `read` gives them, their counts."""
        owner = owner_of(key)
        rows = await read(owner, limit, offset)
        meta = PageMeta(total=await self.repo.count(owner), limit=limit, offset=offset)
        return meta, rows, await self.counts.of(rows)

    async def get(self, key: ApiKey, search_id: str) -> SavedSearch:
        return await self._wire(await self._row(key, search_id))

    async def update(self, key: ApiKey, search_id: str, body: Mapping[str, Any]) -> SavedSearch:
        """Change any of a search's name, filters and property ids."""
        name, wanted, ids = _checked(body, partial=True)
        row = await self._row(key, search_id)
        row = row._replace(
            name=row.name if name is None else name,
            filters=row.filters if wanted is None else json.dumps(wanted),
            property_ids=row.property_ids if ids is None else json.dumps(ids),
        )
        if not json.loads(row.filters) and not json.loads(row.property_ids):
            raise _empty("filters" if wanted is not None else "propertyIds")
        async with self.accounts.transaction():
            await self.repo.update(row)
        return await self._wire(row)

    async def delete(self, key: ApiKey, search_id: str) -> None:
        async with self.accounts.transaction():
            if not await self.repo.delete(owner_of(key), search_id):
                raise _missing(search_id)
        self.counts.forget(search_id)
        if not await self.repo.count() and await self.images.watching():
            await self.images.set_watching(False)

    async def _row(self, key: ApiKey, search_id: str) -> SavedSearchRow:
        row = await self.repo.get(owner_of(key), search_id)
        if row is None:
            raise _missing(search_id)
        return row

    async def _wire(self, row: SavedSearchRow) -> SavedSearch:
        (counted,) = (await self.counts.of([row])).values()
        return _wire(row, counted)


def _wire(row: SavedSearchRow, counted: Counted) -> SavedSearch:
    return SavedSearch(
        id=row.id, name=row.name, filters=json.loads(row.filters),
        property_ids=json.loads(row.property_ids), created_at=row.created_at,
        match_count=counted.total, data_version=counted.version,
    )  # fmt: skip


def _checked(
    body: Mapping[str, Any], *, partial: bool
) -> tuple[str | None, dict[str, Any] | None, list[str] | None]:
    """A saved search's body checked field by field: (name, filters, ids), None for each one
    absent (a PATCH's); a 400 naming the field otherwise. The API's body was checked as it
    was read (`api.body.document`); the portal's form is checked here by the same rules."""
    bodies.check_text(body, "")
    bodies.unknown(body, FIELDS)
    name = wanted = ids = None
    if "name" in body:
        name = bodies.value(body, "name", str).strip()
        if not 1 <= len(name) <= MAX_NAME:
            raise InvalidParameter("name", f"'name' must hold 1 to {MAX_NAME} characters.")
    elif not partial:
        raise InvalidParameter("name", "'name' is required: 1 to 100 characters.")
    if "filters" in body:
        wanted = filters.check(bodies.value(body, "filters", dict))
    if "propertyIds" in body:
        given = bodies.value(body, "propertyIds", list)
        if len(given) > MAX_IDS:
            raise InvalidParameter(
                "propertyIds", f"'propertyIds' may hold at most {MAX_IDS:,} property ids."
            )
        for value in given:
            if not isinstance(value, str) or not _ID.fullmatch(value):
                raise InvalidParameter(
                    "propertyIds", "'propertyIds' must hold property ids (strings of 1 to 64"
                    " letters, digits, '.', '_' or '-')."
                )  # fmt: skip
        ids = list(dict.fromkeys(given))
    if not partial and not wanted and not ids:
        raise _empty("filters")
    if partial and name is None and wanted is None and ids is None:
        raise InvalidParameter("body", f"Send any of {', '.join(FIELDS)}.")
    return name, wanted, ids


def _empty(parameter: str) -> InvalidParameter:
    return InvalidParameter(
        parameter, "A saved search needs filters, propertyIds or both (a record must pass both)."
    )


def _missing(search_id: str) -> NotFound:
    return NotFound(f"No saved search with id '{search_id}'.")

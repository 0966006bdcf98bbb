"""Every SQL statement of the valuations: paged reads of homes and priced events, the writes.

Plain portable SQL with `?` placeholders (keyset pages on the primary keys), so SQLite and
PostgreSQL run the same statements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from propdata.kit.db import Database, Row
from propdata.properties.repository import unpack_events

HOME_COLUMNS = (
    "id", "zip_code", "state", "latitude", "longitude", "living_area", "lot_size", "bedrooms",
    "bathrooms", "year_built", "property_type",
)  # fmt: skip
"""What `home_page` reads of each property, in this order."""


class EstimateRow(NamedTuple):
    """A property's stored estimates (the columns of the same names)."""

    value_value: int | None
    value_low: int | None
    value_high: int | None
    value_as_of: str | None
    rent_value: int | None
    rent_low: int | None
    rent_high: int | None
    rent_as_of: str | None


class AddressRow(NamedTuple):
    id: str
    street_address: str | None
    city: str
    state: str
    zip_code: str


ESTIMATE_UPDATE = (
    "UPDATE properties SET value_value = ?, value_low = ?, value_high = ?, value_as_of = ?,"
    " rent_value = ?, rent_low = ?, rent_high = ?, rent_as_of = ? WHERE id = ?"
)
SALE = "sold"
RENTAL = "listedForRent"
EVENT_COLUMNS = ("property_id", "seq", "date", "event", "price", "source")
"""What `priced_events` can give of an event (seq 0 is a property's newest event)."""
_USUAL = ("property_id", "date", "event", "price")
_PRICED = frozenset({SALE, RENTAL})
_IN_LIST = 500


class ValuationRepository:
    """The statements of `valuation.rebuild` and `valuation.service`."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def home_page(self, before: str | None, limit: int) -> list[Row]:
        """HOME_COLUMNS of the next `limit` properties in descending id order.

        `before` is the lowest id of the previous page; descending pages let
        `priced_events` read the event primary key in the same order, as markets do.
        """
        where, params = ("", []) if before is None else (" WHERE id < ?", [before])
        return await self.db.fetch_all(
            f"SELECT {', '.join(HOME_COLUMNS)} FROM properties{where} ORDER BY id DESC LIMIT ?",
            [*params, limit],
        )

    async def priced_events(
        self, columns: Sequence[str], low_id: str, high_id: str, until: str
    ) -> list[Row]:
        """`columns` (of EVENT_COLUMNS) of the sales and rentals of low_id..high_id, as
        tuples in that order.

        Only events with a price, dated on or before `until`. One primary key range read of
        `property_histories`, each packed history unpacked here.
        """
        rows = await self.db.fetch_all(
            "SELECT property_id, price_history FROM property_histories"
            " WHERE property_id >= ? AND property_id <= ?",
            (low_id, high_id),
        )
        kinds = _PRICED
        if tuple(columns) == _USUAL:
            return [
                (pid, date, event, price)
                for pid, text in rows
                for date, event, price, _ in unpack_events(text)
                if event in kinds and price is not None and date <= until
            ]
        at = [EVENT_COLUMNS.index(c) for c in columns]
        return [
            tuple((pid, seq, *e)[i] for i in at)
            for pid, text in rows
            for seq, e in enumerate(unpack_events(text))
            if e[1] in kinds and e[2] is not None and e[0] <= until
        ]

    async def write_estimates(self, rows: Sequence[Sequence[Any]]) -> None:
        """(value, low, high, as_of, rent, low, high, as_of, id) rows; inside a transaction."""
        await self.db.executemany(ESTIMATE_UPDATE, rows)

    async def clear_comparables(self) -> None:
        await self.db.execute("DELETE FROM valuation_comparables")

    async def write_comparables(self, rows: Sequence[Sequence[Any]]) -> None:
        """(property_id, JSON list of comparables) rows; inside a transaction."""
        await self.db.copy_into("valuation_comparables", ("property_id", "comparables"), rows)

    async def estimates(self, property_id: str) -> EstimateRow | None:
        """The stored estimates of one property; None when there is no such property."""
        row = await self.db.fetch_one(
            f"SELECT {', '.join(EstimateRow._fields)} FROM properties WHERE id = ?", (property_id,)
        )
        return None if row is None else EstimateRow._make(row)

    async def comparables(self, property_id: str) -> str | None:
        """The stored comparables (JSON) of one property; None when it has none."""
        row = await self.db.fetch_one(
            "SELECT comparables FROM valuation_comparables WHERE property_id = ?", (property_id,)
        )
        return None if row is None else str(row[0])

    async def addresses(self, ids: Sequence[str]) -> dict[str, AddressRow]:
        """The addresses of the given properties, by id (ids not stored are absent)."""
        found: dict[str, AddressRow] = {}
        for at in range(0, len(ids), _IN_LIST):
            chunk = list(ids[at : at + _IN_LIST])
            rows = await self.db.fetch_all(
                f"SELECT {', '.join(AddressRow._fields)} FROM properties"
                f" WHERE id IN ({', '.join('?' for _ in chunk)})",
                chunk,
            )
            found.update({row[0]: AddressRow._make(row) for row in rows})
        return found

"""Every SQL statement of the valuations: paged reads of homes and priced events, the writes.

Plain portable SQL with `?` placeholders (keyset pages on the primary keys), so SQLite and
PostgreSQL run the same statements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from propdata.kit.db import Database, Row, in_lists
from propdata.properties.repository import unpack_events

HOME_COLUMNS = (
    "id", "zip_code", "state", "latitude", "longitude", "living_area", "lot_size", "bedrooms",
    "bathrooms", "year_built", "property_type", "stories", "garage_spaces",
    "basement_finished_area", "fireplaces", "overall_quality", "overall_condition",
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


class ModelRow(NamedTuple):
    """A stored model's bookkeeping (`valuation_models` but the model itself)."""

    kind: str
    version: int
    as_of: str
    properties: int
    """Properties in the store when it was fitted."""
    learnt: int
    """Sales (or rentals) it learnt from."""
    changed: int
    """Records loads inserted, updated or removed since it was fitted."""


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
        for part, marks in in_lists(ids):
            rows = await self.db.fetch_all(
                f"SELECT {', '.join(AddressRow._fields)} FROM properties WHERE id IN ({marks})",
                part,
            )
            found.update({row[0]: AddressRow._make(row) for row in rows})
        return found

    async def homes(self, ids: Sequence[str]) -> list[Row]:
        """HOME_COLUMNS of the given properties (ids not stored are absent), in id order."""
        found: list[Row] = []
        for part, marks in in_lists(ids):
            found += await self.db.fetch_all(
                f"SELECT {', '.join(HOME_COLUMNS)} FROM properties WHERE id IN ({marks})", part
            )
        return sorted(found, key=lambda row: str(row[0]))

    async def clear_comparables_of(self, ids: Sequence[str]) -> None:
        """Drop the comparables of the given properties; inside a transaction."""
        for part, marks in in_lists(ids):
            await self.db.execute(
                f"DELETE FROM valuation_comparables WHERE property_id IN ({marks})", part
            )

    async def clear_orphan_comparables(self) -> None:
        """Drop the comparables of properties no longer stored; inside a transaction."""
        await self.db.execute(
            "DELETE FROM valuation_comparables WHERE NOT EXISTS"
            " (SELECT 1 FROM properties WHERE id = valuation_comparables.property_id)"
        )

    # -- the stored models (valuation.stored) --------------------------------------------

    async def models(self) -> list[ModelRow]:
        """The stored models' bookkeeping, by kind."""
        rows = await self.db.fetch_all(
            f"SELECT {', '.join(ModelRow._fields)} FROM valuation_models ORDER BY kind"
        )
        return [ModelRow._make(row) for row in rows]

    async def model_version(self) -> int:
        """The stored models' version (0 before the first full rebuild)."""
        row = await self.db.fetch_one("SELECT max(version) FROM valuation_models")
        return int(row[0]) if row and row[0] is not None else 0

    async def model(self, kind: str) -> bytes | None:
        """The stored header of one model (`stored.encode`); None when none is stored."""
        row = await self.db.fetch_one("SELECT model FROM valuation_models WHERE kind = ?", (kind,))
        return None if row is None else bytes(row[0])

    async def training(
        self, kind: str, zip_codes: Sequence[str] | None
    ) -> list[tuple[str, list[str], bytes]]:
        """The stored training blocks (market, property ids, sales) of one model: of the
        given markets, or all of them; in market order."""
        if zip_codes is None:
            rows = await self.db.fetch_all(
                "SELECT zip_code, ids, sales FROM valuation_training WHERE kind = ?"
                " ORDER BY zip_code",
                (kind,),
            )
        else:
            rows = []
            for part, marks in in_lists(zip_codes):
                rows += await self.db.fetch_all(
                    "SELECT zip_code, ids, sales FROM valuation_training WHERE kind = ?"
                    f" AND zip_code IN ({marks})",
                    [kind, *part],
                )
            rows.sort(key=lambda row: str(row[0]))
        return [(str(z), str(ids).split("\n"), bytes(sales)) for z, ids, sales in rows]

    async def replace_models(
        self,
        models: Sequence[tuple[ModelRow, bytes]],
        blocks: Sequence[tuple[str, str, Sequence[str], bytes]],
    ) -> None:
        """Swap the stored models for these (row, header) and their training blocks (kind,
        market, property ids, sales); inside a transaction."""
        await self.db.execute("DELETE FROM valuation_models")
        await self.db.execute("DELETE FROM valuation_training")
        await self.db.executemany(
            f"INSERT INTO valuation_models ({', '.join(ModelRow._fields)}, model)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(*row, header) for row, header in models],
        )
        await self.db.copy_into(
            "valuation_training", ("kind", "zip_code", "ids", "sales"),
            [(kind, zip_code, "\n".join(ids), sales) for kind, zip_code, ids, sales in blocks],
        )  # fmt: skip

    async def count_changes(self, records: int) -> None:
        """Add `records` changed records to every stored model's count; inside a transaction."""
        await self.db.execute("UPDATE valuation_models SET changed = changed + ?", (records,))

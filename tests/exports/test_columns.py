"""The property files' columns made straight from stored rows (`PropertyTable.rows`) are
those of the wire records (`full_record`, encoded to JSON and parsed by Arrow), to the byte
of the written file: for records with every field filled, with every optional field null,
and the test catalogue between them. Both stores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from propdata.exports.repository import SnapshotRepository
from propdata.exports.schemas import SUFFIX, Format
from propdata.exports.snapshot import PROPERTIES
from propdata.ingest.loader import load
from propdata.kit.db import Database, Row
from propdata.properties.repository import PropertyRow
from propdata.properties.service import full_record
from tests.factories import AS_OF, ASSESSED, catalogue, event, record

WIDTH = len(PropertyRow._fields)
REQUIRED = {"id", "status", "address_city", "address_state", "address_zipCode", "lastUpdated"}
"""The columns a record always has; every other may be null (the histories: empty)."""


def filled() -> Any:
    """Every field set, the derived ones by its history (a home sold, then delisted from a
    later listing, now listed again with a price change)."""
    return record(
        "x-filled", list_price=240_000, days_on_market=40,
        price_history=[
            event("2026-06-01", "priceChange", 240_000),
            event("2026-03-01", "listedForSale", 250_000, "agent"),
            event("2025-09-01", "delisted", None),
            event("2024-01-01", "listedForSale", 230_000),
            event("2019-05-01", "sold", 180_000, "publicRecord"),
        ],
        **ASSESSED,
    )  # fmt: skip


def bare() -> Any:
    """Every optional field null, no history."""
    return record(
        "x-bare", status="offMarket", list_price=None,
        address={"street_address": None, "county": None, "fips_code": None},
        bedrooms_total=None, bathrooms_total=None, living_area=None, lot_size=None,
        year_built=None, property_type=None, price_history=[], tax_history=[], scores=None,
        coordinates=None, listing_type=None, rent_estimate=None, value_estimate=None,
        stories=None,
    )  # fmt: skip


async def stored_rows(db: Database) -> list[Row]:
    async with db.read_snapshot() as snapshot:
        repo = SnapshotRepository(snapshot)
        return [
            row
            for state, _ in await repo.states()
            async for batch in repo.properties(state)
            for row in batch
        ]


def written(tmp_path: Path, name: str, table: Any, fmt: Format) -> bytes:
    path = tmp_path / f"{name}{SUFFIX[fmt]}"
    with PROPERTIES.writer(path, fmt) as out:
        out.write(table)
    return path.read_bytes()


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
async def test_the_columns_made_from_rows_are_the_wire_records(
    empty_db: Database, tmp_path: Path, fmt: Format
) -> None:
    items = [*catalogue(), filled(), bare()]
    report = await load(empty_db, enumerate(items, 1), origin="import", as_of=AS_OF)
    assert not report.rejects, report.rejects
    rows = await stored_rows(empty_db)
    assert len(rows) == len(items)
    records = [full_record(PropertyRow._make(r[:WIDTH]), r[WIDTH], r[-1]) for r in rows]

    made = PROPERTIES.rows(rows, fmt)
    wire = PROPERTIES.batch(records, fmt)

    assert made.schema == wire.schema
    for name in wire.column_names:
        assert made.column(name).to_pylist() == wire.column(name).to_pylist(), name
    assert made.equals(wire)
    assert written(tmp_path, "rows", made, fmt) == written(tmp_path, "records", wire, fmt)
    # The two records at the ends: nothing null in one, all that may be null in the other.
    by_id = {row["id"]: row for row in wire.to_pylist()}
    full, empty = by_id["x-filled"], by_id["x-bare"]
    assert [name for name, value in full.items() if value in (None, [], "[]")] == []
    assert {n for n, v in empty.items() if v not in (None, [], "[]")} == REQUIRED


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_no_rows_make_the_empty_table(fmt: Format) -> None:
    made = PROPERTIES.rows([], fmt)
    assert made.equals(PROPERTIES.batch([], fmt))

"""Fuzzing the import path and the address keys (hypothesis): no exception escapes.

Whatever a file holds, `read_file` either refuses the whole file at once with ValueError
(unsupported type, unusable header) or yields one record or one reject per row, and `load`
stores what is valid and reports the rest; it never raises. The address keys take any text.
"""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import io
import json
import os
import string
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from propdata.ingest.loader import Reject, Removal, load
from propdata.ingest.readers import API_COLUMNS, read_file
from propdata.kit.addresses import city_key, street_key
from propdata.kit.db import SQLiteDatabase
from propdata.migrations.schema import migrate
from propdata.properties.schemas import PropertyDetail

pytestmark = pytest.mark.slow

AS_OF = dt.date(2026, 11, 21)
EXAMPLES = int(os.environ.get("PROPDATA_FUZZ_EXAMPLES", "120"))
"""Cases per test: 120 in `make test`, thousands in `make fuzz`."""
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
                derandomize=True, database=None)  # fmt: skip
RESO_COLUMNS = (
    "ListingKey", "StandardStatus", "UnparsedAddress", "City", "StateOrProvince", "PostalCode",
    "ListPrice", "CountyOrParish", "BedroomsTotal", "BathroomsTotalDecimal", "LivingArea",
    "LotSizeSquareFeet", "YearBuilt", "PropertyType", "PropertySubType", "StoriesTotal",
    "DaysOnMarket", "OriginalListPrice", "CloseDate", "ClosePrice", "Latitude", "Longitude",
    "ModificationTimestamp",
)  # fmt: skip

# Cells as importers meet them: numbers in many spellings, dates, words, junk, control bytes.
cells = st.one_of(
    st.just(""),
    st.integers(-(10**20), 10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1,250,000", "3.5", "-0", "1e309", "nan", "٣", "12 345", "$250,000",
                     "2024-02-30", "2024-13-01", "2026-11-21T10:00:00Z", "2026-11-21",
                     "Active", "Closed", "Pending", "Expired", "Delete", "Residential",
                     "ResidentialLease", "Condominium", "IA", "ia", "XX", "50010", "50010-1234",
                     "Story County", "forSale", "recentlySold", "singleFamily", "land"]),
    st.text(max_size=30),
    st.text(alphabet=string.printable + "\x00\x1b\u2028\ufeff\udcff", max_size=20),
)  # fmt: skip


def _load(path: Path) -> tuple[int, int]:
    """Read and load a file into a fresh store; (records loaded, rejects)."""

    async def go() -> tuple[int, int]:
        try:
            items = list(read_file(path, AS_OF))
        except ValueError:
            return 0, 0  # refused as a whole, at once: allowed
        for line, item in items:
            assert isinstance(line, int) and line >= 1
            assert isinstance(item, PropertyDetail | Reject | Removal)
        db = SQLiteDatabase(str(path.with_suffix(".db")))
        try:
            await migrate(db)
            report = await load(db, items, origin="import", as_of=AS_OF)
        finally:
            await db.close()
        assert report.inserted + report.updated + report.unchanged + len(report.rejects) == len(
            items
        )
        return report.loaded, len(report.rejects)

    return asyncio.run(go())


def _write(suffix: str, content: bytes) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="fuzz-"))
    path = folder / f"input{suffix}"
    path.write_bytes(content)
    return path


def _csv(header: list[str], rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode("utf-8", "surrogateescape")


@FUZZ
@given(st.lists(st.binary(max_size=200), max_size=8))
def test_any_bytes_as_json_lines(lines: list[bytes]) -> None:
    _load(_write(".jsonl", b"\n".join(lines)))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=15),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=10,
)  # fmt: skip
record_like = st.fixed_dictionaries(
    {"id": st.text(max_size=12) | st.integers(), "status": cells, "lastUpdated": cells,
     "address": st.fixed_dictionaries({"city": cells, "state": cells, "zipCode": cells}) | json_values},
    optional={"listPrice": json_values, "priceHistory": st.lists(st.fixed_dictionaries(
        {"date": cells, "event": cells, "price": json_values, "source": cells}), max_size=3),
              "bedroomsTotal": json_values, "coordinates": json_values, "colour": json_values},
)  # fmt: skip


@FUZZ
@given(st.lists(record_like | json_values, max_size=6))
def test_record_shaped_json_lines(records: list[Any]) -> None:
    content = "\n".join(json.dumps(r, allow_nan=True) for r in records).encode()
    _load(_write(".jsonl", content))


@FUZZ
@given(
    st.lists(st.sampled_from(list(API_COLUMNS)), min_size=1, max_size=12, unique=True),
    st.data(),
)
def test_api_shaped_csv(columns: list[str], data: st.DataObject) -> None:
    header = ["id", *[c for c in columns if c != "id"]]
    rows = data.draw(st.lists(st.lists(cells, min_size=len(header), max_size=len(header) + 1),
                              max_size=6))  # fmt: skip
    _load(_write(".csv", _csv(header, rows)))


@FUZZ
@given(
    st.lists(st.sampled_from(RESO_COLUMNS[6:]), max_size=10, unique=True),
    st.data(),
)
def test_reso_csv(extra: list[str], data: st.DataObject) -> None:
    header = [*RESO_COLUMNS[:6], *extra]
    rows = data.draw(st.lists(st.lists(cells, min_size=len(header), max_size=len(header)),
                              max_size=6))  # fmt: skip
    _load(_write(".csv", _csv(header, rows)))


@FUZZ
@given(st.binary(max_size=400))
def test_any_bytes_as_csv(content: bytes) -> None:
    _load(_write(".csv", content))


@settings(max_examples=5 * EXAMPLES, deadline=None, derandomize=True, database=None)
@given(st.text(max_size=60))
def test_address_keys_take_any_text(text: str) -> None:
    street, city = street_key(text), city_key(text)
    assert street == street_key(street), "a key is its own key"
    assert city == city_key(city)
    assert all(c in string.ascii_uppercase + string.digits + "#/- " for c in street)

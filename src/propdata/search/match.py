"""Whether records match a search, without the store: one record, or a batch at once.

The same filters as SQL and the index, made from the same definitions: each column filter
of `filters.FILTERS` with `arrays.test` (the index's own comparison; a missing value is
NaN or "", which no filter passes, as SQL's NULL), the box of `filters.box` with its edges,
and a radius by `kit.geodesy.miles`. tests/search/test_parity.py holds SQL, the index and
`matches` together filter by filter over generated records.

For many searches over the same records (saved searches against a load's changes), make
the `Batch` once and ask `matches` once per search: each search is then a few numpy
passes over the batch's columns, with no Python loop per record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import msgspec
import numpy as np
import numpy.typing as npt

from propdata.kit.addresses import city_key
from propdata.kit.geodesy import miles
from propdata.properties.schemas import PropertyDetail
from propdata.search.arrays import BoolArray, test
from propdata.search.filters import CATEGORICAL, NUMERIC, SearchFilters, box, given
from propdata.search.query import SearchQuery

Record = Mapping[str, Any] | PropertyDetail
"""One property: a mapping of `properties` column names (a stored row, as
`PropertyRow._asdict()` gives it; `city_key` is made from `city` when absent), the wire
record (`PropertyDetail`), or its JSON as the API answers it (camelCase keys, `address` and
`coordinates` nested)."""

_WIRE = {
    "status": ("status",), "property_type": ("propertyType",), "list_price": ("listPrice",),
    "bedrooms": ("bedroomsTotal",), "bathrooms": ("bathroomsTotal",),
    "living_area": ("livingArea",), "year_built": ("yearBuilt",),
    "days_on_market": ("daysOnMarket",), "zip_code": ("address", "zipCode"),
    "city": ("address", "city"), "state": ("address", "state"),
    "latitude": ("coordinates", "latitude"), "longitude": ("coordinates", "longitude"),
}  # fmt: skip
"""Where a wire record's JSON holds each column a search tests."""


@dataclass(frozen=True, slots=True)
class Batch:
    """The columns a search tests, of a batch of records, as numpy arrays in their order."""

    size: int
    codes: dict[str, dict[Any, int]]
    """Each of `filters.CATEGORICAL`: its values' codes (a missing value has one too)."""
    text: dict[str, npt.NDArray[np.int32]]
    """Each of `filters.CATEGORICAL` as its values' codes (as the index keeps them)."""
    numbers: dict[str, npt.NDArray[np.float64]]
    """Each of `filters.NUMERIC`; NaN for a missing value."""
    latitude: npt.NDArray[np.float64]
    longitude: npt.NDArray[np.float64]
    """Degrees; NaN (both) for a record without both coordinates."""

    @classmethod
    def of(cls, records: Iterable[Record]) -> Batch:
        """The batch of `records` (see `Record` for what each may be)."""
        rows = [columns(r) for r in records]
        codes: dict[str, dict[Any, int]] = {name: {} for name in CATEGORICAL}
        text = {
            name: np.fromiter((known.setdefault(r[name], len(known)) for r in rows), np.int32,
                              count=len(rows))
            for name, known in codes.items()
        }  # fmt: skip
        numbers = {name: _floats([r[name] for r in rows]) for name in NUMERIC}
        lats, lons = _floats([r["latitude"] for r in rows]), _floats([r["longitude"] for r in rows])
        unknown = np.isnan(lats) | np.isnan(lons)  # as the index: a place needs both
        lats[unknown] = np.nan
        lons[unknown] = np.nan
        return cls(len(rows), codes, text, numbers, lats, lons)


def columns(record: Record) -> dict[str, Any]:
    """The columns a search tests of one record (see `Record`), by `properties` name."""
    if isinstance(record, PropertyDetail):
        record = msgspec.to_builtins(record)  # camelCase, as on the wire
    assert isinstance(record, Mapping)
    if "address" in record:  # the wire's JSON
        found: dict[str, Any] = {}
        for name, path in _WIRE.items():
            value: Any = record
            for key in path:
                value = value.get(key) if isinstance(value, Mapping) else None
            found[name] = value
    else:
        found = {name: record.get(name) for name in (*_WIRE, "city_key")}
    if found.get("city_key") is None and found["city"] is not None:
        found["city_key"] = city_key(found["city"])
    return found


@overload
def matches(query: SearchQuery | SearchFilters, records: Record) -> bool: ...


@overload
def matches(query: SearchQuery | SearchFilters, records: Batch | Sequence[Record]) -> BoolArray: ...


def matches(
    query: SearchQuery | SearchFilters, records: Record | Batch | Sequence[Record]
) -> bool | BoolArray:
    """Whether records match the search's filters (its sort and paging play no part).

    `records`: one record (see `Record`): True or False; a `Batch`, or a sequence of
    records (made into one): a boolean array, one entry per record in their order.

    >>> matches(SearchFilters(state="IA", min_beds=3), {"state": "IA", "bedrooms": 4})
    True
    """
    if isinstance(records, Mapping | PropertyDetail):
        return bool(matches(query, Batch.of([records]))[0])
    batch = records if isinstance(records, Batch) else Batch.of(records)
    filters = query.filters if isinstance(query, SearchQuery) else query
    found = np.ones(batch.size, np.bool_)
    for f, value in given(filters):
        if f.test != "eq":
            found &= test(batch.numbers[f.column], f.test, value)
            continue
        code = batch.codes[f.column].get(value)
        if code is None:  # no record holds the value
            found.fill(False)
        else:
            found &= test(batch.text[f.column], "eq", code)
    area = box(filters)
    if area is not None:
        west, south, east, north = area
        lats, lons = batch.latitude, batch.longitude
        found &= (lats >= south) & (lats <= north) & (lons >= west) & (lons <= east)
    if filters.near is not None:  # the distances of the rows still in, as the index does
        latitude, longitude, radius = filters.near
        inside = np.flatnonzero(found)
        far = miles(latitude, longitude, batch.latitude[inside], batch.longitude[inside])
        found[inside[~(far <= radius)]] = False
    return found


def _floats(values: list[Any]) -> npt.NDArray[np.float64]:
    return np.array(values, dtype=np.float64).reshape(len(values))  # None -> NaN

"""CSV in the API's own shape (a `.csv` whose header has `id`): dotted columns for nested
objects (`address.zipCode`), `priceHistory` and `taxHistory` as JSON arrays in one cell."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from propdata.ingest.loader import Item, Reject
from propdata.ingest.readers.api_shape import PropertyIn, any_decoder, explain, to_detail
from propdata.ingest.readers.cells import Row, RowError, data_rows, real, whole

API_COLUMNS: dict[str, str] = {
    "id": "text",
    "status": "text",
    "listPrice": "int",
    "address.streetAddress": "text",
    "address.city": "text",
    "address.state": "text",
    "address.zipCode": "text",
    "address.county": "text",
    "address.fipsCode": "text",
    "bedroomsTotal": "int",
    "bathroomsTotal": "real",
    "livingArea": "int",
    "lotSize": "int",
    "yearBuilt": "int",
    "propertyType": "text",
    "daysOnMarket": "int",
    "priceHistory": "json",
    "taxHistory": "json",
    "scores.walkability": "int",
    "scores.transit": "int",
    "scores.bike": "int",
    "coordinates.latitude": "real",
    "coordinates.longitude": "real",
    "lastUpdated": "text",
    "listingType": "text",
    "originalListPrice": "int",
    "stories": "int",
    "parcelId": "text",
    "garageSpaces": "real",
    "basementFinishedArea": "int",
    "fireplaces": "int",
    "overallQuality": "int",
    "overallCondition": "int",
    "rentEstimate.value": "int",
    "rentEstimate.low": "int",
    "rentEstimate.high": "int",
    "rentEstimate.asOfDate": "text",
    "valueEstimate.value": "int",
    "valueEstimate.low": "int",
    "valueEstimate.high": "int",
    "valueEstimate.asOfDate": "text",
    # Derived or computed on output: accepted (an export loads back) and ignored.
    "previousListPrice": "ignored",
    "lastPriceChangeDate": "ignored",
    "removedDate": "ignored",
    "pricePerSquareFoot": "ignored",
    "grossYield": "ignored",
}
"""Every column a CSV in the API's own shape may have, and how its cells are read."""

API_REQUIRED = ("id", "status", "address.city", "address.state", "address.zipCode", "lastUpdated")


def check_header(header: list[str]) -> None:
    """ValueError for an unknown column or a missing required one."""
    unknown = [c for c in header if c not in API_COLUMNS]
    if unknown:
        raise ValueError(
            f"unknown column(s) {', '.join(unknown)} in a CSV in the API's own shape;"
            " docs/import.md lists the accepted columns"
        )
    missing = [c for c in API_REQUIRED if c not in header]
    if missing:
        raise ValueError(f"the CSV header lacks the required column(s) {', '.join(missing)}")


def read_api_csv(path: Path, header: list[str]) -> Iterator[Item]:
    """Each data row as a record in the API's own shape, or a reject."""
    return api_items(data_rows(path, header))


def api_items(rows: Iterable[tuple[int, Row | str]]) -> Iterator[Item]:
    """`read_api_csv` of rows from `cells.data_rows` or `cells.cells_of`."""
    for line, row in rows:
        if isinstance(row, str):
            yield line, Reject(line, row)
            continue
        try:
            yield line, to_detail(msgspec.convert(_api_object(row), PropertyIn))
        except RowError as exc:
            yield line, Reject(line, str(exc), row.get("id"))
        except msgspec.ValidationError as exc:
            yield line, Reject(line, explain(exc), row.get("id"))


def _api_object(row: Row) -> dict[str, Any]:
    """The nested JSON object of one flat row, numbers parsed, empty cells null."""
    obj: dict[str, Any] = {"address": {}}
    groups: dict[str, dict[str, Any]] = {}
    for column, text in row.items():
        kind = API_COLUMNS[column]
        value: Any
        if kind == "ignored":
            continue
        if kind == "int":
            value = whole(column, text, negative=True)  # the loader names negatives
        elif kind == "real":
            value = real(column, text)
        elif kind == "json":
            if text is None:
                continue
            try:
                value = any_decoder.decode(text)
            except msgspec.DecodeError as exc:
                raise RowError(f"{column} is not a JSON array: {exc}") from exc
        else:
            value = text
        head, dot, tail = column.partition(".")
        if dot:
            groups.setdefault(head, {})[tail] = value
        else:
            obj[column] = value
    for name, fields in groups.items():
        if name == "address":
            obj["address"] = fields
        elif any(v is not None for v in fields.values()):
            obj[name] = fields
        else:
            obj[name] = None
    return obj

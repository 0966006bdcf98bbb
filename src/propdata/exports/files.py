"""A snapshot's files: wire records flattened into columns, written in batches.

The columns come from the wire structs themselves (`msgspec.inspect`), so a field added to
the record is exported without a change here: nested objects are flattened with `_`
(`address_zipCode`, `valueEstimate_value`), lists of objects (the histories) stay lists of
structs in Parquet and become JSON text in CSV.

    table = Table(Market)
    with table.writer(Path("markets.parquet"), "parquet") as out:
        out.write(table.batch(records, "parquet"))

The property files, a million records and more, are made from the stored rows instead
(`PropertyTable.rows`): the same columns and values, without a wire record per row.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from itertools import accumulate, chain
from pathlib import Path
from types import TracebackType
from typing import Any

import msgspec
import msgspec.inspect as mi
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from propdata.exports.repository import PROPERTY_COLUMNS
from propdata.exports.schemas import ExportFile, Format
from propdata.kit.db import Row
from propdata.properties.schemas import PropertyDetail
from propdata.properties.service import price_per_square_foot, yield_of

_encoder = msgspec.json.Encoder()
_json = _encoder.encode


def _scalar(t: mi.Type) -> pa.DataType:
    if isinstance(t, mi.UnionType):
        kinds = [k for k in t.types if not isinstance(k, mi.NoneType)]
        if len(kinds) == 1:
            return _scalar(kinds[0])
    if isinstance(t, mi.BoolType):
        return pa.bool_()
    if isinstance(t, mi.IntType):
        return pa.int64()
    if isinstance(t, mi.FloatType):
        return pa.float64()
    if isinstance(t, mi.StrType | mi.DateType | mi.DateTimeType):
        return pa.string()
    if isinstance(t, mi.LiteralType) and all(isinstance(v, str) for v in t.values):
        return pa.string()
    if isinstance(t, mi.ListType | mi.StructType):
        return _nested(t)
    raise TypeError(f"no column type for {t!r}")


def _nested(t: mi.Type) -> pa.DataType:
    if isinstance(t, mi.ListType):
        return pa.list_(_nested(t.item_type))
    if isinstance(t, mi.StructType):
        return pa.struct([pa.field(f.encode_name, _scalar(f.type)) for f in t.fields])
    return _scalar(t)


class Table:
    """The columns of a wire struct, flattened: a column per leaf field, named by its path.

    `lead` adds columns before the struct's own (the ZIP code of a market's month). A batch
    is encoded as JSON Lines by msgspec and parsed by Arrow against the nested schema, then
    flattened: both in C, some 20 times faster than building the columns in Python."""

    def __init__(self, struct: type, lead: Sequence[tuple[str, pa.DataType]] = ()) -> None:
        nested = _nested(mi.type_info(struct))
        self.nested = pa.schema([*(pa.field(n, t) for n, t in lead), *nested])
        self.parquet = pa.schema(_flat(list(self.nested), ()))
        self._lists = [i for i, f in enumerate(self.parquet) if pa.types.is_list(f.type)]
        self.csv = pa.schema(
            [pa.field(f.name, pa.string()) if pa.types.is_list(f.type) else f
             for f in self.parquet]
        )  # fmt: skip
        self._options = pa_json.ParseOptions(
            explicit_schema=self.nested, unexpected_field_behavior="error"
        )

    def batch(self, records: Sequence[Any], fmt: Format) -> pa.Table:
        """A batch of records (structs of the table's type, or dicts of their builtins with
        the lead columns' values beside) as a table of this format's columns."""
        if not records:
            return (self.csv if fmt == "csv" else self.parquet).empty_table()
        buffer = bytearray()
        for record in records:
            _encoder.encode_into(record, buffer, -1)
            buffer += b"\n"
        table = pa_json.read_json(
            pa.BufferReader(bytes(buffer)),
            read_options=pa_json.ReadOptions(use_threads=False, block_size=len(buffer) + 1),
            parse_options=self._options,
        )
        while any(pa.types.is_struct(t) for t in table.schema.types):
            table = table.flatten()
        table = table.rename_columns(self.parquet.names)
        if fmt == "csv":
            for i in self._lists:
                text = [
                    None if v is None else _json(v).decode() for v in table.column(i).to_pylist()
                ]
                table = table.set_column(i, self.csv.field(i), pa.array(text, pa.string()))
        return table.cast(self.csv if fmt == "csv" else self.parquet)

    def writer(self, path: Path, fmt: Format) -> Writer:
        return Writer(path, fmt, self.csv if fmt == "csv" else self.parquet)


def _flat(fields: list[pa.Field], prefix: tuple[str, ...]) -> list[pa.Field]:
    """Struct fields replaced by their children, named by their path joined with `_`."""
    out: list[pa.Field] = []
    for f in fields:
        path = (*prefix, f.name)
        if pa.types.is_struct(f.type):
            out += _flat(list(f.type), path)
        else:
            out.append(pa.field("_".join(path), f.type))
    return out


_AT = {name: i for i, name in enumerate(PROPERTY_COLUMNS)}
_STORED = {
    "id": "id", "status": "status", "listPrice": "list_price",
    "address_streetAddress": "street_address", "address_city": "city",
    "address_state": "state", "address_zipCode": "zip_code", "address_county": "county",
    "address_fipsCode": "fips_code", "bedroomsTotal": "bedrooms",
    "bathroomsTotal": "bathrooms", "livingArea": "living_area", "lotSize": "lot_size",
    "yearBuilt": "year_built", "propertyType": "property_type",
    "daysOnMarket": "days_on_market", "scores_walkability": "walk_score",
    "scores_transit": "transit_score", "scores_bike": "bike_score",
    "lastUpdated": "last_updated", "listingType": "listing_type",
    "originalListPrice": "original_list_price", "previousListPrice": "previous_list_price",
    "lastPriceChangeDate": "last_price_change_date", "removedDate": "removed_date",
    "rentEstimate_value": "rent_value", "valueEstimate_value": "value_value",
    "stories": "stories", "parcelId": "parcel_id", "garageSpaces": "garage_spaces",
    "basementFinishedArea": "basement_finished_area", "fireplaces": "fireplaces",
    "overallQuality": "overall_quality", "overallCondition": "overall_condition",
}  # fmt: skip
"""The property columns that are a stored column as it is (`properties.service._detail`;
`scores` is null exactly when its three scores are)."""
_ESTIMATES = {"rentEstimate": "rent", "valueEstimate": "value"}
_ESTIMATE_PARTS = {"low": "low", "high": "high", "asOfDate": "as_of"}


class PropertyTable(Table):
    """The property files' columns (`PropertyDetail`'s), made straight from the stored rows
    of `SnapshotRepository.properties` a column at a time: the values
    `properties.service.full_record` gives, without a wire record and its JSON per row
    (tests/exports/test_columns.py holds the two to the same bytes). Only the histories are
    unpacked, all of a batch's in one decode."""

    def __init__(self) -> None:
        super().__init__(PropertyDetail)
        made = {*_STORED, "coordinates_latitude", "coordinates_longitude", "grossYield",
                "pricePerSquareFoot", "priceHistory", "taxHistory",
                *(f"{e}_{p}" for e in _ESTIMATES for p in _ESTIMATE_PARTS)}  # fmt: skip
        if made != set(self.parquet.names):
            raise TypeError(
                f"property columns not made from rows: {made ^ set(self.parquet.names)}"
            )

    def rows(self, rows: Sequence[Row], fmt: Format) -> pa.Table:
        """A batch of stored rows (PROPERTY_COLUMNS) as a table of this format's columns."""
        schema = self.csv if fmt == "csv" else self.parquet
        if not rows:
            return schema.empty_table()
        stored = list(zip(*rows, strict=True))

        def column(name: str) -> Sequence[Any]:
            return stored[_AT[name]]

        values: dict[str, Sequence[Any] | pa.Array] = {
            flat: column(name) for flat, name in _STORED.items()
        }
        # A struct of the record is null as a whole: its columns are null together.
        lat, lon = column("latitude"), column("longitude")
        both = [a is not None and b is not None for a, b in zip(lat, lon, strict=True)]
        values["coordinates_latitude"] = _where(both, lat)
        values["coordinates_longitude"] = _where(both, lon)
        for wire, stem in _ESTIMATES.items():
            known = [v is not None for v in column(f"{stem}_value")]
            for part, name in _ESTIMATE_PARTS.items():
                values[f"{wire}_{part}"] = _where(known, column(f"{stem}_{name}"))
        values["grossYield"] = list(map(yield_of, column("rent_value"), column("value_value")))
        values["pricePerSquareFoot"] = list(map(
            price_per_square_foot, column("status"), column("list_price"),
            column("last_sale_price"), column("living_area"),
        ))  # fmt: skip
        for wire, name in (("priceHistory", "price_history"), ("taxHistory", "tax_history")):
            kind = self.parquet.field(wire).type
            unpacked = _unpacked(column(name))
            values[wire] = _texts(unpacked, kind) if fmt == "csv" else _lists(unpacked, kind)
        arrays = [
            v if isinstance(v := values[f.name], pa.Array) else pa.array(v, f.type) for f in schema
        ]
        return pa.Table.from_arrays(arrays, schema=schema)


def _where(shown: list[bool], values: Sequence[Any]) -> Sequence[Any]:
    """`values`, null where `shown` is False."""
    if all(shown):
        return values
    return [v if s else None for s, v in zip(shown, values, strict=True)]


_decode = msgspec.json.Decoder().decode


def _unpacked(packed: Sequence[str | bytes | None]) -> list[list[list[Any]]]:
    """Packed histories (`properties.repository.pack_histories`; None: no history row) as
    lists of their entries' value lists, in one decode."""
    texts = [p.decode() if isinstance(p, bytes) else p or "[]" for p in packed]
    unpacked: list[list[list[Any]]] = _decode("[" + ",".join(texts) + "]")
    return unpacked


def _lists(unpacked: list[list[list[Any]]], kind: pa.DataType) -> pa.Array:
    """Histories as a list column of `kind` (a list of structs), their entries' values in
    the struct's field order."""
    fields = list(kind.value_type)
    width = len(fields)
    entries = list(chain.from_iterable(unpacked))
    values = list(chain.from_iterable(entries))
    if entries and set(map(len, entries)) != {width}:
        raise ValueError(f"a packed history entry without its {width} values")
    # Every width-th value from the i-th is field i (slices, not a loop over entries).
    items = pa.StructArray.from_arrays(
        [pa.array(values[i::width], f.type) for i, f in enumerate(fields)], fields=fields
    )
    offsets = pa.array(list(accumulate(map(len, unpacked), initial=0)), pa.int32())
    return pa.ListArray.from_arrays(offsets, items, type=kind)


def _texts(unpacked: list[list[list[Any]]], kind: pa.DataType) -> pa.Array:
    """Histories as CSV holds them: JSON text of a list of objects (keys in field order)."""
    names = [f.name for f in kind.value_type]
    text = [
        _json([dict(zip(names, e, strict=True)) for e in entries]).decode() if entries else "[]"
        for entries in unpacked
    ]
    return pa.array(text, pa.string())


class Writer:
    """One file of a snapshot, written a batch at a time; its row count kept."""

    def __init__(self, path: Path, fmt: Format, schema: pa.Schema) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.rows = 0
        self._out: pq.ParquetWriter | pa_csv.CSVWriter
        if fmt == "parquet":
            self._out = pq.ParquetWriter(path, schema, compression="zstd")
        else:
            self._out = pa_csv.CSVWriter(path, schema)

    def write(self, table: pa.Table) -> None:
        self._out.write_table(table)
        self.rows += table.num_rows

    def close(self) -> None:
        self._out.close()

    def __enter__(self) -> Writer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def described(root: Path, path: Path, rows: int) -> ExportFile:
    """A written file as the manifest lists it (its bytes read once for the SHA-256), after
    flushing it to the disk."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
        os.fsync(f.fileno())
    return ExportFile(
        name=path.relative_to(root).as_posix(),
        rows=rows,
        bytes=path.stat().st_size,
        sha256=digest.hexdigest(),
    )

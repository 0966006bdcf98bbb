"""A snapshot's files: wire records flattened into columns, written in batches.

The columns come from the wire structs themselves (`msgspec.inspect`), so a field added to
the record is exported without a change here: nested objects are flattened with `_`
(`address_zipCode`, `valueEstimate_value`), lists of objects (the histories) stay lists of
structs in Parquet and become JSON text in CSV.

    table = Table(PropertyDetail)
    with table.writer(Path("part-0.parquet"), "parquet") as out:
        out.write(table.batch(records, "parquet"))
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import msgspec
import msgspec.inspect as mi
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from propdata.exports.schemas import ExportFile, Format

SUFFIX = {"parquet": ".parquet", "csv": ".csv"}
MEDIA_TYPE = {"parquet": "application/vnd.apache.parquet", "csv": "text/csv"}
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

"""Readers for `propdata data import`: files in, (line, record or rejection) out.

Three formats, chosen by extension and, for CSV, by header (docs/import.md lists every
column and mapping), each in a module of its own:

- `jsonl`: JSON Lines (`.jsonl`, `.ndjson`), one record per line in the API's own shape,
  exactly what GET /v1/properties/{id} returns (with or without its `{"data": ...}` envelope);
- `api_csv`: CSV in the API's own shape (a header with `id`), dotted columns for nested
  objects; both read records through `api_shape`;
- `reso`: CSV with RESO Data Dictionary columns (a header with `ListingKey`);
- `cells`: what both CSV readers share: rows with their line numbers, and cells as numbers,
  dates and timestamps.

A row that cannot become a record becomes a `Reject` naming the field or column and the
reason; it never stops the file. The readers only turn rows into records; `loader.load`
validates them against the status machine and writes them in one transaction:

    report = await loader.load(db, read_file(path, as_of), origin="import", as_of=as_of)
    write_rejects(path.with_suffix(".rejects.csv"), report.rejects)
"""

from __future__ import annotations

import csv
import datetime as dt
from collections.abc import Iterator
from pathlib import Path

from propdata.ingest.loader import Item, Reject
from propdata.ingest.readers import api_csv, reso
from propdata.ingest.readers.api_csv import API_COLUMNS
from propdata.ingest.readers.cells import RowError, read_header
from propdata.ingest.readers.jsonl import read_jsonl
from propdata.ingest.readers.reso import RESO_PROPERTY_TYPES, reso_property_type, reso_record

__all__ = [
    "API_COLUMNS",
    "RESO_PROPERTY_TYPES",
    "SUPPORTED_FORMATS",
    "RowError",
    "read_file",
    "reso_property_type",
    "reso_record",
    "write_rejects",
]

SUPPORTED_FORMATS = (
    ".jsonl / .ndjson (JSON Lines in the API's own shape) and .csv (the API's own shape,"
    " or RESO Data Dictionary columns with a ListingKey header)"
)


def read_file(path: Path, as_of: dt.date) -> Iterator[Item]:
    """Read an import file as (line number, record or Reject), in file order.

    The format is checked before the first row is read, so an unsupported extension or an
    unusable CSV header raises ValueError at once (nothing is loaded); bad rows never raise.
    `as_of` is the day the file describes: RESO rows date their listings from it.
    """
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        path.open("rb").close()  # a missing file fails here, not halfway into a load
        return read_jsonl(path)
    if suffix == ".csv":
        line, header = read_header(path)
        if "ListingKey" in header:
            reso.check_header(header)
            return reso.read_reso(path, header, as_of)
        if "id" in header:
            api_csv.check_header(header)
            return api_csv.read_api_csv(path, header)
        raise ValueError(
            f"{path.name}: a CSV header (line {line}) needs an `id` column (the API's own"
            " shape) or a `ListingKey` column (RESO Data Dictionary)"
        )
    raise ValueError(
        f"{path.name}: unsupported file type {suffix or '(no extension)'!r}; supported:"
        f" {SUPPORTED_FORMATS}"
    )


def write_rejects(path: Path, rejects: list[Reject]) -> None:
    """Write the rejects report: a CSV with columns line, id, reason, ordered by line."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["line", "id", "reason"])
        for reject in sorted(rejects, key=lambda r: r.line):
            writer.writerow([reject.line, reject.id or "", reject.reason])

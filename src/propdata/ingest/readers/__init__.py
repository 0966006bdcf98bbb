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
import itertools
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from propdata.ingest.loader import Item, Reject
from propdata.ingest.readers import api_csv, reso
from propdata.ingest.readers.api_csv import API_COLUMNS
from propdata.ingest.readers.cells import (
    Row,
    RowError,
    cells_of,
    check_header,
    csv_rows,
    data_rows,
    read_header,
)
from propdata.ingest.readers.jsonl import jsonl_items, read_jsonl
from propdata.ingest.readers.reso import RESO_PROPERTY_TYPES, reso_property_type, reso_record

__all__ = [
    "API_COLUMNS",
    "RESO_PROPERTY_TYPES",
    "SUPPORTED_FORMATS",
    "RowError",
    "csv_items",
    "format_of",
    "is_reso",
    "read_file",
    "read_header",
    "read_lines",
    "reso_header",
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
    if format_of(path) == "jsonl":
        path.open("rb").close()  # a missing file fails here, not halfway into a load
        return read_jsonl(path)
    line, header = read_header(path)
    return csv_items(path.name, line, header, data_rows(path, header), as_of)


def is_reso(path: Path) -> bool:
    """Whether `read_file` reads the file as RESO listings: `loader.load(listing_feed=...)`
    of its records."""
    return format_of(path) == "csv" and reso_header(read_header(path)[1])


def reso_header(header: list[str]) -> bool:
    """Whether a CSV header is read as RESO Data Dictionary columns (it has `ListingKey`)."""
    return "ListingKey" in header


def format_of(path: Path) -> str:
    """ "jsonl" or "csv", by the file's extension; ValueError for any other."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    raise ValueError(
        f"{path.name}: unsupported file type {suffix or '(no extension)'!r}; supported:"
        f" {SUPPORTED_FORMATS}"
    )


def csv_items(
    name: str, line: int, header: list[str], rows: Iterable[tuple[int, Row | str]], as_of: dt.date
) -> Iterator[Item]:
    """The records of CSV data rows, read as RESO or API-shape columns as the header says;
    ValueError for a header that is neither (or a shape's unknown or missing columns)."""
    if reso_header(header):
        reso.check_header(header)
        return reso.reso_items(rows, as_of)
    if "id" in header:
        api_csv.check_header(header)
        return api_csv.api_items(rows)
    raise ValueError(
        f"{name}: a CSV header (line {line}) needs an `id` column (the API's own"
        " shape) or a `ListingKey` column (RESO Data Dictionary)"
    )


def read_lines(
    lines: Iterable[bytes],
    first: int,
    as_of: dt.date,
    *,
    name: str,
    kind: str | None,
    header: list[str] | None = None,
    on_header: Callable[[list[str]], None] | None = None,
) -> Iterator[Item]:
    """`read_file` of raw lines (line endings kept) whose first is line `first`: what
    `propdata data import --follow` reads from a growing file or standard input.

    `kind` is "jsonl" or "csv"; None tells them apart by the first non-blank line (a JSON
    object starts with `{`, a CSV header does not). A CSV read from its start takes its
    header from the first row; one read from the middle is given the `header` of its first
    line. ValueError when the header is unusable, raised on iteration. `on_header` is called
    with a CSV's header before its first record (a follower learns that it reads RESO rows).
    """
    stream = iter(lines)
    if kind is None:
        blank: list[bytes] = []
        for raw in stream:
            if raw.strip():
                kind = "jsonl" if raw.lstrip(b"\xef\xbb\xbf \t").startswith(b"{") else "csv"
                stream = itertools.chain(blank, [raw], stream)
                break
            blank.append(raw)
        else:
            return
    if kind == "jsonl":
        yield from jsonl_items(stream, first)
        return
    text: Iterator[str] = (raw.decode("utf-8", "surrogateescape") for raw in stream)
    if first == 1:
        text = _without_bom(text)
    rows = csv_rows(text, first)
    if header is None:
        for line, row in rows:
            header = check_header(name, line, row)
            break
        else:
            return
    else:
        line = 1
    if on_header is not None:
        on_header(header)
    yield from csv_items(name, line, header, cells_of(rows, header), as_of)


def _without_bom(text: Iterator[str]) -> Iterator[str]:
    for head in text:
        yield head.removeprefix("\ufeff")
        break
    yield from text


def write_rejects(path: Path, rejects: list[Reject], *, append: bool = False) -> None:
    """Write the rejects report: a CSV with columns line, id, reason, ordered by line.

    With `append`, the rejects are added to the end of the report at `path` (its header
    first when there is none yet): `data import --follow` adds each commit's."""
    fresh = not append or not path.exists() or path.stat().st_size == 0
    with path.open("w" if not append else "a", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        if fresh:
            writer.writerow(["line", "id", "reason"])
        for reject in sorted(rejects, key=lambda r: r.line):
            writer.writerow([reject.line, reject.id or "", reject.reason])

"""CSV files and their cells, for both CSV readers: rows with their line numbers, and the
numbers, dates and timestamps people and spreadsheets write."""

from __future__ import annotations

import csv
import datetime as dt
import math
import re
from collections.abc import Iterable, Iterator
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

Row = dict[str, str | None]
"""One data row: {column: stripped text, or None when empty}."""


class RowError(ValueError):
    """One row cannot become a record; the message is the reject reason."""


# -- rows ------------------------------------------------------------------------------------

_NOT_UTF8 = re.compile("[\udc80-\udcff]")


def _open_csv(path: Path) -> Any:
    # surrogateescape: a byte that is not UTF-8 spoils its row (a reject), not the file.
    return path.open(encoding="utf-8-sig", errors="surrogateescape", newline="")


def _csv_rows(path: Path) -> Iterator[tuple[int, list[str] | str]]:
    """(line where the row starts, cells) for each non-blank row; a CSV error as a string."""
    with _open_csv(path) as handle:
        yield from csv_rows(handle)


def csv_rows(lines: Iterable[str], first: int = 1) -> Iterator[tuple[int, list[str] | str]]:
    """`_csv_rows` of text lines (line endings kept) whose first is line `first`.

    The reader asks for a line only when its row needs it, so when a row is yielded every
    line taken from `lines` belongs to it or to a row before it (`ingest.follow` counts the
    bytes of a growing file behind the last row on this).
    """
    reader = csv.reader(lines)
    start = first
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield start, f"unreadable CSV row: {exc}"
            start = first + reader.line_num
            continue
        line, start = start, first + reader.line_num
        if any(cell.strip() for cell in row):
            yield line, row


def read_header(path: Path) -> tuple[int, list[str]]:
    """The header row and its line; ValueError when the file has no usable one."""
    for line, row in _csv_rows(path):
        return line, check_header(path.name, line, row)
    raise ValueError(f"{path.name}: the file is empty (no CSV header)")


def check_header(name: str, line: int, row: list[str] | str) -> list[str]:
    """The column names of a header row; ValueError naming `name` when it is unusable."""
    if isinstance(row, str):
        raise ValueError(f"{name}: line {line}: {row}")
    header = [cell.strip() for cell in row]
    duplicates = sorted({c for c in header if header.count(c) > 1})
    if duplicates:
        raise ValueError(f"{name}: the header repeats {', '.join(duplicates)}")
    if any(_NOT_UTF8.search(c) for c in header):
        raise ValueError(f"{name}: the header is not valid UTF-8")
    return header


def data_rows(path: Path, header: list[str]) -> Iterator[tuple[int, Row | str]]:
    """Rows after the header as {column: stripped text or None when empty}, or a reason."""
    rows = _csv_rows(path)
    next(rows)  # the header, checked by read_header
    return cells_of(rows, header)


def cells_of(
    rows: Iterable[tuple[int, list[str] | str]], header: list[str]
) -> Iterator[tuple[int, Row | str]]:
    """Data rows (from `csv_rows`, the header left out) as `Row`s, or a reason."""
    for line, row in rows:
        if isinstance(row, str):
            yield line, row
        elif len(row) != len(header):
            yield line, f"the row has {len(row)} cells, the header has {len(header)}"
        else:
            bad = next((h for h, c in zip(header, row, strict=True) if _NOT_UTF8.search(c)), None)
            if bad is not None:
                yield line, f"{bad} is not valid UTF-8"
            else:
                yield line, {h: (c.strip() or None) for h, c in zip(header, row, strict=True)}


# -- numbers ----------------------------------------------------------------------------------

_PLAIN_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")
_GROUPED_NUMBER = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$")


def _decimal(column: str, text: str) -> Decimal:
    """A number as written by people and spreadsheets: "1250", "1,250", "1250.0"."""
    if not (_PLAIN_NUMBER.match(text) or _GROUPED_NUMBER.match(text)):
        raise RowError(f"{column} {text!r} is not a number")
    try:
        return Decimal(text.replace(",", ""))
    except InvalidOperation as exc:  # pragma: no cover - the patterns above exclude it
        raise RowError(f"{column} {text!r} is not a number") from exc


def whole(column: str, text: str | None, *, negative: bool = False) -> int | None:
    """A whole number (money, counts, years): "1250.0" is 1250, "1250.5" is a reject."""
    if text is None:
        return None
    value = _decimal(column, text)
    if value != value.to_integral_value():
        raise RowError(f"{column} {text!r} is not a whole number")
    if value < 0 and not negative:
        raise RowError(f"{column} must not be negative")
    if abs(value) >= 2**63:
        raise RowError(f"{column} {text!r} is out of range")
    return int(value)


def rounded(column: str, text: str | None) -> int | None:
    """A measured area (RESO sends decimals): rounded to the nearest square foot."""
    if text is None:
        return None
    value = _decimal(column, text)
    if value < 0:
        raise RowError(f"{column} must not be negative")
    if value >= 2**63:
        raise RowError(f"{column} {text!r} is out of range")
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def real(column: str, text: str | None) -> float | None:
    """A finite number."""
    if text is None:
        return None
    value = float(_decimal(column, text))
    if not math.isfinite(value):
        raise RowError(f"{column} {text!r} is out of range")
    return value


def nonnegative(column: str, text: str | None) -> float | None:
    """A finite number, zero or more."""
    value = real(column, text)
    if value is not None and value < 0:
        raise RowError(f"{column} must not be negative")
    return value


# -- text, dates and times --------------------------------------------------------------------

_ISO_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[T ].*)?$")


def required(row: Row, column: str) -> str:
    """The column's text; a reject when the cell is empty."""
    value = row.get(column)
    if value is None:
        raise RowError(f"{column} is empty")
    return value


def date(row: Row, column: str) -> dt.date | None:
    """A YYYY-MM-DD date (a time after it is ignored)."""
    text = row.get(column)
    if text is None:
        return None
    match = _ISO_DATE.match(text)
    try:
        if match is None:
            raise ValueError(text)
        return dt.date.fromisoformat(match[1])
    except ValueError:
        raise RowError(f"{column} {text!r} is not a date (YYYY-MM-DD)") from None


def timestamp(row: Row, column: str) -> str | None:
    """An ISO 8601 timestamp with its UTC offset, as a UTC `...Z` string."""
    text = row.get(column)
    if text is None:
        return None
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise RowError(f"{column} {text!r} is not an ISO 8601 timestamp") from None
    if moment.tzinfo is None:
        raise RowError(f"{column} {text!r} has no UTC offset (add Z or +hh:mm)")
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

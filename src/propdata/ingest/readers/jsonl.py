"""JSON Lines (`.jsonl`, `.ndjson`): one record per line in the API's own shape, with or
without the `{"data": ...}` envelope of a GET answer."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import msgspec

from propdata.ingest.loader import Item, Reject
from propdata.ingest.readers.api_shape import (
    any_decoder,
    envelope_decoder,
    explain,
    line_decoder,
    to_detail,
)
from propdata.properties.schemas import PropertyDetail


def _id_of(raw: bytes) -> str | None:
    try:
        value = any_decoder.decode(raw)
    except msgspec.DecodeError:
        return None
    if isinstance(value, dict) and isinstance(value.get("data"), dict):
        value = value["data"]
    record_id = value.get("id") if isinstance(value, dict) else None
    return record_id if isinstance(record_id, str) else None


def decode_line(line: int, raw: bytes) -> PropertyDetail | Reject:
    try:
        return to_detail(line_decoder.decode(raw))
    except msgspec.ValidationError as exc:
        error = exc
    except msgspec.DecodeError as exc:
        return Reject(line, f"invalid JSON: {exc}")
    if "unknown field `data`" in str(error):  # the GET answer with its envelope
        try:
            return to_detail(envelope_decoder.decode(raw).data)
        except msgspec.ValidationError as exc:
            return Reject(line, explain(exc, strip="data"), _id_of(raw))
    return Reject(line, explain(error), _id_of(raw))


def read_jsonl(path: Path) -> Iterator[Item]:
    with path.open("rb") as handle:
        yield from jsonl_items(handle)


def jsonl_items(lines: Iterable[bytes], first: int = 1) -> Iterator[Item]:
    """`read_jsonl` of lines whose first is line `first`; blank lines keep their numbers."""
    for line, raw in enumerate(lines, start=first):
        if raw.strip():
            yield line, decode_line(line, raw)

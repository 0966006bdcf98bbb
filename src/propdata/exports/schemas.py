"""Wire shapes of exports: the manifest each snapshot carries as `manifest.json`."""

from __future__ import annotations

from typing import Literal, get_args

from propdata.api.schemas import Base

Format = Literal["parquet", "csv"]
FORMATS: tuple[str, ...] = get_args(Format)
SUFFIX = {"parquet": ".parquet", "csv": ".csv"}
MEDIA_TYPE = {"parquet": "application/vnd.apache.parquet", "csv": "text/csv"}


class ExportFile(Base):
    """One file of a snapshot: its path inside the snapshot, rows, size and SHA-256 (hex)."""

    name: str
    rows: int
    bytes: int
    sha256: str


class Manifest(Base):
    """A snapshot of one data version: `feedCursor` is the change feed's position at that
    version (follow GET /v1/properties/changes?since=feedCursor from there); `rows` counts
    the property records."""

    id: str
    created_at: str
    data_version: int
    format: Format
    feed_cursor: str
    files: list[ExportFile]
    rows: int


class ExportsResponse(Base):
    data: list[Manifest]

"""A downloaded export snapshot opened by duckdb or polars, when installed
(`pip install 'propdata-client[exports]'`).

```python
from propdata_client import Client
from propdata_client.snapshots import open_duckdb, open_polars

with Client() as client:
    client.exports.download("snapshot")
homes = open_duckdb("snapshot")              # a duckdb relation of every property
print(homes.filter("state = 'TX'").count("*"))
frame = open_polars("snapshot").collect()    # a polars frame (lazy until collected)
```

Parquet columns keep their types; a CSV snapshot is read with every column as text (ZIP
codes keep their leading zeros). `table` is `properties` (hive-partitioned by `state`),
`markets` or `market_history`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import msgspec

from propdata_client.models import Export

Table = Literal["properties", "markets", "market_history"]


def manifest(folder: str | os.PathLike[str]) -> Export:
    """The manifest of a snapshot downloaded into `folder`."""
    return msgspec.json.decode((Path(folder) / "manifest.json").read_bytes(), type=Export)


def _pattern(folder: str | os.PathLike[str], table: Table) -> tuple[str, str]:
    fmt = manifest(folder).format
    root = Path(folder).resolve()
    if table == "properties":
        return str(root / "properties" / "*" / f"*.{fmt}"), fmt
    return str(root / f"{table}.{fmt}"), fmt


def open_duckdb(
    folder: str | os.PathLike[str], table: Table = "properties", connection: Any = None
) -> Any:
    """A duckdb relation of one table of the snapshot (`state` from the partition folders
    for properties)."""
    import duckdb

    con = connection if connection is not None else duckdb.connect()
    pattern, fmt = _pattern(folder, table)
    hive = table == "properties"
    if fmt == "parquet":
        return con.read_parquet(pattern, hive_partitioning=hive)
    return con.read_csv(pattern, all_varchar=True, hive_partitioning=hive)


def open_polars(folder: str | os.PathLike[str], table: Table = "properties") -> Any:
    """A polars LazyFrame of one table of the snapshot (`.collect()` reads it)."""
    import polars as pl

    pattern, fmt = _pattern(folder, table)
    hive = table == "properties"
    if fmt == "parquet":
        return pl.scan_parquet(pattern, hive_partitioning=hive)
    return pl.scan_csv(pattern, infer_schema=False)

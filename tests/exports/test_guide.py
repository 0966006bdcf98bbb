"""docs/export.md's worked example, run as written against a live server: download the
newest snapshot, read it with duckdb and polars, follow the change feed from its cursor
(records loaded after the snapshot included); and its PostgreSQL table, filled by COPY from
a CSV snapshot's files."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from propdata.ingest.loader import load
from tests.conftest import build_store, create_key, new_store, open_db, postgres
from tests.factories import AS_OF, record
from tests.live import run_apart, running_server

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "export.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE.read_text(), re.S)


async def _load_later(store: Any) -> None:
    db = await open_db(store)
    try:
        report = await load(db, enumerate([record("later-1", list_price=333_000)], 1),
                            origin="import", as_of=AS_OF)  # fmt: skip
        assert not report.rejects
    finally:
        await db.close()


def api_prices(base: str, key: str) -> dict[str, Any]:
    prices: dict[str, Any] = {}
    offset = 0
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as http:
        while True:
            page = http.get(f"/v1/properties?limit=100&offset={offset}").json()
            for item in page["data"]:
                prices[item["id"]] = http.get(f"/v1/properties/{item['id']}").json()["data"][
                    "listPrice"
                ]
            offset += 100
            if offset >= page["meta"]["total"]:
                return prices


def test_the_guides_example_runs_and_keeps_a_copy_in_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = run_apart(new_store("embedded", tmp_path / "store"))
    run_apart(build_store(store))
    env = {**store.env(), "PROPDATA_EXPORT_DIR": str(tmp_path / "exports"),
           "PROPDATA_CACHE_TTL": "0"}  # fmt: skip
    for fmt in ("csv", "parquet"):  # the Parquet one newest: the one the example takes
        subprocess.run([sys.executable, "-m", "propdata", "data",
                        "export", "--format", fmt], env={**os.environ, **env}, check=True,
                       capture_output=True)  # fmt: skip
    run_apart(_load_later(store))  # after the snapshots: only the feed has it
    key = run_apart(create_key(store, "pro"))
    (example,) = blocks("python")
    with running_server(env) as base:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("PROPDATA_API_KEY", key)
        monkeypatch.setenv("PROPDATA_BASE_URL", base)
        scope: dict[str, Any] = {}
        exec(compile(example, str(GUIDE), "exec"), scope)
        assert "later-1" in scope["copy"] and scope["export"].rows == 42
        assert scope["copy"] == api_prices(base, key)
        assert sum(n for _, n, _ in scope["by_state"]) == 42

        if os.environ.get("PROPDATA_TEST_BACKENDS", "embedded,scaleout").find("scaleout") < 0:
            return
        from propdata_client import Client

        with Client(key, base_url=base) as client:
            csv = next(e for e in client.exports.list() if e.format == "csv")
            client.exports.download(tmp_path / "csv", csv.id)
        run_apart(_copy_into_postgres(tmp_path / "csv", csv.rows, csv.files))


async def _copy_into_postgres(folder: Path, rows: int, files: list[Any]) -> None:
    (sql,) = blocks("sql")
    create = sql.split("\\copy", 1)[0]
    schema = "g_" + uuid.uuid4().hex[:12]
    conn = await postgres()
    try:
        await conn.execute(f"CREATE SCHEMA {schema}; SET search_path = {schema}")
        await conn.execute(create)
        for f in files:
            if f.name.startswith("properties/"):
                await conn.copy_to_table("property_export", source=folder / f.name,
                                         format="csv", header=True)  # fmt: skip
        assert await conn.fetchval("SELECT count(*) FROM property_export") == rows
        total = await conn.fetchval('SELECT sum("listPrice") FROM property_export')
        history = await conn.fetchval(
            """SELECT "priceHistory"->0->>'event' FROM property_export WHERE id = 't-000'"""
        )
        assert total > 0 and history
    finally:
        await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        await conn.close()

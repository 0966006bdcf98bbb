"""`client.exports`: a snapshot downloaded whole into a folder with every checksum checked,
then opened by duckdb and polars (`propdata_client.snapshots`), against a real server."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import build_store, new_store
from tests.live import run_apart, running_server

from conftest import Live, propdata_command
from propdata_client import AsyncClient, Client, PropdataError
from propdata_client.snapshots import manifest, open_duckdb, open_polars


@pytest.fixture(scope="module")
def exporting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Live, Path]]:
    folder = tmp_path_factory.mktemp("sdk-exports")
    store = run_apart(new_store("embedded", folder))
    run_apart(build_store(store))
    env = {**store.env(), "PROPDATA_EXPORT_DIR": str(folder / "exports")}
    subprocess.run([*propdata_command(), "data", "export"], env={**os.environ, **env},
                   check=True, capture_output=True)  # fmt: skip
    with running_server({**env, "PROPDATA_CACHE_TTL": "0"}) as base_url:
        yield Live(base_url, store), folder / "exports"


@pytest.fixture
def pro(exporting: tuple[Live, Path]) -> Iterator[tuple[Client, Path]]:
    """A client on a new Pro key (a plan with exports), and the server's export folder."""
    live, root = exporting
    with Client(live.key("pro"), base_url=live.base_url) as client:
        yield client, root


def test_a_snapshot_downloads_checked_and_opens_in_duckdb_and_polars(
    pro: tuple[Client, Path], tmp_path: Path
) -> None:
    client, _ = pro
    (listed,) = client.exports.list()
    export = client.exports.download(tmp_path / "snapshot")
    assert export == listed and manifest(tmp_path / "snapshot") == export
    for f in export.files:
        data = (tmp_path / "snapshot" / f.name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f.sha256
    assert not list((tmp_path / "snapshot").rglob("*.part"))
    homes = open_duckdb(tmp_path / "snapshot")
    assert homes.count("*").fetchone()[0] == export.rows == 42
    by_state = dict(homes.aggregate("state, count(*)").fetchall())
    frame = open_polars(tmp_path / "snapshot").collect()
    assert frame.height == 42 and set(frame["state"].unique()) == set(by_state)
    markets = open_polars(tmp_path / "snapshot", "markets").collect()
    assert markets.height == next(f.rows for f in export.files if f.name == "markets.parquet")


async def test_the_async_client_downloads_the_same(
    exporting: tuple[Live, Path], tmp_path: Path
) -> None:
    live, _ = exporting
    async with AsyncClient(live.key("enterprise"), base_url=live.base_url) as client:
        export = await client.exports.download(tmp_path / "a")
    assert sorted(p.relative_to(tmp_path / "a").as_posix()
                  for p in (tmp_path / "a").rglob("*") if p.is_file()) == sorted(
        [f.name for f in export.files] + ["manifest.json"]
    )  # fmt: skip


def test_a_file_that_differs_from_its_checksum_is_refused(
    pro: tuple[Client, Path], tmp_path: Path
) -> None:
    client, root = pro
    (export,) = client.exports.list()
    target = root / export.id / "markets.parquet"
    original = target.read_bytes()
    target.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    try:
        with pytest.raises(PropdataError) as refused:
            client.exports.download(tmp_path / "bad")
    finally:
        target.write_bytes(original)
    assert refused.value.code == "checksum_mismatch"
    assert not (tmp_path / "bad" / "manifest.json").exists()
    assert not (tmp_path / "bad" / "markets.parquet").exists()


def test_a_developer_key_is_told_which_plan_has_exports(exporting: tuple[Live, Path]) -> None:
    live, _ = exporting
    with (
        Client(live.key("developer"), base_url=live.base_url) as client,
        pytest.raises(PropdataError) as refused,
    ):
        client.exports.list()
    assert refused.value.status == 403 and "Pro" in str(refused.value)

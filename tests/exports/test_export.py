"""`propdata data export` read back by duckdb and polars (readers we did not write): per
state the API's totals, every field of every record as GET /v1/properties/{id} answers it,
the CSV the same as the Parquet, markets and their history whole. Both stores."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from propdata.exports.schemas import Manifest
from propdata.exports.service import DRAFT, ExportService
from propdata.exports.snapshot import PACE, export
from propdata.kit.pacing import Pacer
from tests.conftest import Store, open_db


def flat(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A wire record with nested objects flattened by `_`, as the export's columns are."""
    out: dict[str, Any] = {}
    for name, value in record.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{name}_"))
        else:
            out[f"{prefix}{name}"] = value
    return out


async def exported(store: Store, root: Path, *formats: str) -> dict[str, Manifest]:
    """A snapshot of `store` in `root` in each format, made in that order."""
    db = await open_db(store)
    try:
        return {fmt: await export(db, root, fmt) for fmt in formats}
    finally:
        await db.close()


@pytest.fixture(scope="module")
async def snapshots(store: Store, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("exports")
    return {"root": root, **await exported(store, root, "parquet", "csv")}


def folder(snapshots: dict[str, Any], fmt: str) -> Path:
    manifest: Manifest = snapshots[fmt]
    return Path(snapshots["root"]) / manifest.id


async def api_ids(client: Any, auth: dict[str, str], state: str) -> tuple[int, list[str]]:
    ids: list[str] = []
    total, offset = None, 0
    while total is None or offset < total:
        answer = await client.get(f"/v1/properties?state={state}&limit=100&offset={offset}",
                                  headers=auth)  # fmt: skip
        assert answer.status_code == 200, answer.text
        body = answer.json()
        total = body["meta"]["total"]
        ids += [item["id"] for item in body["data"]]
        offset += 100
    return total, ids


async def test_counts_per_state_equal_the_apis_totals(
    snapshots: dict[str, Any], client: Any, auth: dict[str, str]
) -> None:
    where = folder(snapshots, "parquet")
    counts = duckdb.sql(
        f"SELECT state, count(*) FROM read_parquet('{where}/properties/*/*.parquet',"
        " hive_partitioning = true) GROUP BY state ORDER BY state"
    ).fetchall()
    assert counts, "no state exported"
    for state, n in counts:
        total, _ = await api_ids(client, auth, state)
        assert n == total, state
    manifest: Manifest = snapshots["parquet"]
    assert manifest.rows == sum(n for _, n in counts)
    version = (await client.get("/health")).json()
    assert manifest.data_version >= 1, version


async def test_every_record_of_a_state_equals_the_api_field_for_field(
    snapshots: dict[str, Any], client: Any, auth: dict[str, str]
) -> None:
    where = folder(snapshots, "parquet")
    frame = pl.read_parquet(f"{where}/properties/state=NY/*.parquet")
    _, ids = await api_ids(client, auth, "NY")
    assert sorted(frame["id"].to_list()) == sorted(ids)
    prices = 0
    for row in frame.to_dicts():
        answer = await client.get(f"/v1/properties/{row['id']}", headers=auth)
        assert flat(answer.json()["data"]) == row
        prices += answer.json()["data"]["listPrice"] or 0
    assert frame["listPrice"].sum() == prices


def test_the_csv_export_reads_back_the_same(snapshots: dict[str, Any]) -> None:
    parquet = pl.read_parquet(f"{folder(snapshots, 'parquet')}/properties/*/*.parquet",
                              hive_partitioning=False).sort("id")  # fmt: skip
    # Every column read as text (a CSV reader would take ZIP codes for numbers).
    text = pl.read_csv(f"{folder(snapshots, 'csv')}/properties/*/*.csv",
                       infer_schema=False).sort("id")  # fmt: skip
    assert text.columns == parquet.columns
    for name in parquet.columns:
        want = parquet[name].to_list()
        got = text[name].to_list()
        if parquet[name].dtype == pl.List:
            assert [json.loads(g) for g in got] == want, name
        elif parquet[name].dtype == pl.String:
            assert [g or None for g in got] == [w or None for w in want], name
        else:
            kind = float if parquet[name].dtype.is_float() else int
            assert [None if g is None else kind(g) for g in got] == want, name


async def test_markets_and_their_history_are_whole(
    snapshots: dict[str, Any], client: Any, auth: dict[str, str]
) -> None:
    where = folder(snapshots, "parquet")
    markets = duckdb.sql(f"SELECT * FROM '{where}/markets.parquet' ORDER BY zipCode").pl()
    answer = await client.get("/v1/markets/search?limit=100", headers=auth)
    listed = answer.json()["data"]
    assert [flat(m) for m in listed] == markets.to_dicts()
    history = pl.read_parquet(f"{where}/market_history.parquet")
    for market in listed:
        zip_code = market["zipCode"]
        months = (await client.get(f"/v1/markets/{zip_code}/history?months=60",
                                   headers=auth)).json()["data"]["history"]  # fmt: skip
        mine = history.filter(pl.col("zipCode") == zip_code).drop("zipCode").to_dicts()
        mine.sort(key=lambda m: m["month"], reverse=True)
        assert months and mine[: len(months)] == months  # the API's newest first
        assert len(mine) == len(months) if len(months) < 60 else len(mine) >= 60


def test_the_manifest_lists_every_file_with_its_checksum(snapshots: dict[str, Any]) -> None:
    import hashlib

    for fmt in ("parquet", "csv"):
        manifest: Manifest = snapshots[fmt]
        where = folder(snapshots, fmt)
        on_disk = sorted(p.relative_to(where).as_posix() for p in where.rglob("*") if p.is_file())
        assert on_disk == sorted([f.name for f in manifest.files] + ["manifest.json"])
        for f in manifest.files:
            data = (where / f.name).read_bytes()
            assert (len(data), hashlib.sha256(data).hexdigest()) == (f.bytes, f.sha256)
        assert {"properties", "markets", "market_history"} <= {
            f.name.split("/")[0].split(".")[0] for f in manifest.files
        }
    listed = ExportService(Path(snapshots["root"])).manifests()
    assert [m.id for m in listed] == [snapshots["csv"].id, snapshots["parquet"].id]


def test_the_command_writes_a_snapshot_into_the_export_folder(store: Store, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from propdata.cli import app

    env = {**store.env(), "PROPDATA_EXPORT_DIR": str(tmp_path / "exports")}
    # In this process, which must keep its priority: the idle default is tested apart.
    result = CliRunner().invoke(
        app, ["data", "export", "--format", "csv", "--priority", "normal"], env=env
    )
    assert result.exit_code == 0, result.stderr
    made = Path(result.stdout.strip().splitlines()[-1])
    assert made.parent == tmp_path / "exports"
    manifest = json.loads((made / "manifest.json").read_text())
    assert manifest["format"] == "csv" and manifest["rows"] == 42
    assert "42 records" in result.stderr.replace("\n", " ")
    result = CliRunner().invoke(app, ["data", "export", "--format", "xlsx"], env=env)
    assert result.exit_code == 2 and "parquet or csv" in result.stderr
    result = CliRunner().invoke(app, ["data", "export", "--priority", "high"], env=env)
    assert result.exit_code == 2 and "idle or normal" in result.stderr


_PRIORITY = """
import os, sys, threading
from typer.testing import CliRunner
from propdata.cli import app
result = CliRunner().invoke(app, ["data", "export", *sys.argv[1:]])
assert result.exit_code == 0, result.output
seen = []
thread = threading.Thread(target=lambda: seen.append(os.sched_getscheduler(threading.get_native_id())))
thread.start()
thread.join()
print(os.sched_getscheduler(0), seen[0], os.getpriority(os.PRIO_PROCESS, 0))
"""


@pytest.mark.parametrize(("given", "policy"), [([], "idle"), (["--priority", "normal"], "other")])
def test_an_export_runs_at_idle_cpu_priority_unless_told(
    store: Store, tmp_path: Path, given: list[str], policy: str
) -> None:
    """The command, in a process of its own as an operator or the periodic exporter runs
    it: afterwards that process, and a thread it starts, are SCHED_IDLE (SCHED_OTHER with
    `--priority normal`)."""
    env = {**os.environ, **store.env(), "PROPDATA_EXPORT_DIR": str(tmp_path / "exports")}
    done = subprocess.run([sys.executable, "-c", _PRIORITY, *given], env=env, timeout=120,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    process, thread, _ = (int(v) for v in done.stdout.split())
    expected = {"idle": os.SCHED_IDLE, "other": os.SCHED_OTHER}[policy]
    assert process == thread == expected
    assert len(list((tmp_path / "exports").iterdir())) == 1


async def test_an_interrupted_export_leaves_no_snapshot_listed(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from propdata.exports import snapshot

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk full")

    db = await open_db(store)
    monkeypatch.setattr(snapshot, "_market_history", broken)
    try:
        with pytest.raises(OSError, match="disk full"):
            await export(db, tmp_path, "parquet")
    finally:
        await db.close()
    assert ExportService(tmp_path).manifests() == []
    assert not any(await asyncio.to_thread(lambda: list(tmp_path.iterdir())))


def _quiet_stat(path: Path) -> Path:
    """A /proc/stat whose counters stand still: a machine nothing else uses."""
    path.write_text("cpu  100 0 50 900 1 0 2 0 0 0\n")
    return path


async def _paced_export(store: Store, tmp_path: Path, pacer: Pacer) -> Manifest:
    db = await open_db(store)
    try:
        return await export(db, tmp_path / "exports", "parquet", pacer=pacer)
    finally:
        await db.close()


async def test_an_export_on_a_quiet_machine_never_pauses(store: Store, tmp_path: Path) -> None:
    pacer = Pacer(PACE, _quiet_stat(tmp_path / "stat"), cores=2)
    assert (await _paced_export(store, tmp_path, pacer)).rows == 42
    assert pacer.steps >= 2  # it looked after each batch (a state's records at least)
    assert (pacer.pauses, pacer.slept) == (0, 0.0)


async def test_an_export_beside_processes_busy_on_every_core_pauses(
    store: Store, tmp_path: Path, spinning: None
) -> None:
    """A CPU-spinning process pinned to each core: the export, reading the machine's real
    /proc/stat, gives way between its batches (by its own count, not by the clock). The
    test store's few records take a few ticks of CPU (and on PostgreSQL the reads' are the
    server's, counted as the export's own), so this process first takes a tenth of a second of it, as an export's start
    does, and the bounds are a twentieth of a core: the export's pause stays short."""
    pacer = Pacer(dataclasses.replace(PACE, share=0.02, floor_cores=0.05))
    start = sum(os.times()[:2])
    while sum(os.times()[:2]) - start < 0.1:
        sum(range(10_000))
    assert (await _paced_export(store, tmp_path, pacer)).rows == 42
    assert pacer.pauses >= 1 and pacer.slept > 0
    # PostgreSQL's backend (on this machine) runs the reads: its CPU is the export's own.
    assert len(pacer.counted) == (store.backend != "embedded")


@pytest.mark.parametrize(("given", "paced"), [([], True), (["--priority", "normal"], False)])
def test_only_an_export_at_idle_priority_gives_way(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: list[str], paced: bool
) -> None:
    """The command looks at the machine between its batches at idle priority (the default)
    and never at `--priority normal`. In this process, which keeps its own priority."""
    from typer.testing import CliRunner

    from propdata.cli import app
    from propdata.exports import snapshot

    looked: list[Pacer] = []
    between = Pacer.between

    async def counted(pacer: Pacer) -> None:
        looked.append(pacer)
        await between(pacer)

    monkeypatch.setattr(snapshot, "yield_cpu", lambda: "unchanged")
    monkeypatch.setattr(Pacer, "between", counted)
    env = {**store.env(), "PROPDATA_EXPORT_DIR": str(tmp_path / "exports")}
    result = CliRunner().invoke(app, ["data", "export", *given], env=env)
    assert result.exit_code == 0, result.stderr
    assert bool(looked) is paced


async def test_a_running_exports_draft_stays_fresh(store: Store, tmp_path: Path) -> None:
    """An export clears the drafts left unchanged for `STALE_DRAFT` (those of exports that
    died): a long-running export's own draft is touched at every batch, so it never looks
    like one."""
    root = tmp_path / "exports"
    seen: list[float] = []

    def progress(done: int, total: int) -> None:
        draft = next(root.glob(f"{DRAFT}*"))
        seen.append(draft.stat().st_mtime)
        os.utime(draft, (0, 0))  # as if it had last changed long ago

    db = await open_db(store)
    try:
        await export(db, root, "parquet", progress=progress)
    finally:
        await db.close()
    assert len(seen) >= 3  # the start, then a batch a state at least twice
    assert all(moment > time.time() - 600 for moment in seen[1:])

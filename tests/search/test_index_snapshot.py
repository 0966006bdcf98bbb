"""Search index snapshots: written once per data version, mapped by every worker, exact.

A snapshot loaded from disk answers what SQL answers (the comparison of test_index.py, run
against the loaded arrays); the worker that needs it first has it built by a child process
(it reads no table itself: tests/search/test_build_snapshot.py); a second worker maps it
without reading the table; a damaged one is rebuilt, never served; a load replaces it; two
processes building at once make one.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from litestar.testing import AsyncTestClient

from propdata.app import HeadAsGet, create_app
from propdata.config import Settings
from propdata.ingest.loader import load
from propdata.kit.db import Database
from propdata.search.filters import SearchFilters
from propdata.search.index import IndexPage, SearchIndex
from propdata.search.keeper import KeeperSettings
from propdata.search.query import SearchQuery
from propdata.search.repository import SearchRepository
from propdata.search.service import SearchService
from propdata.search.snapshot import MANIFEST, BuildLock, Snapshots
from tests.conftest import (
    Store,
    create_key,
    open_db,
    settings_for,
)
from tests.factories import AS_OF, record
from tests.search.test_index import built, compared, index_ready, places, searches
from tests.search.test_index import tuned_db as tuned_db

QUERY = (SearchFilters(state="IA"), "listPrice", "asc", 5, 0)


def counted(service: SearchService, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record each page the service reads from the table for an index."""
    reads: list[int] = []
    original = service.repo.index_page

    async def index_page(*args: Any) -> Any:
        rows = await original(*args)
        reads.append(len(rows))
        return rows

    monkeypatch.setattr(service.repo, "index_page", index_page)
    return reads


async def ready(service: SearchService) -> SearchIndex:
    """Ask until the service's index answers for the current data version."""
    for _ in range(500):
        if await service.index_status() == "ok":
            assert service.indexes._index is not None
            return service.indexes._index
        await asyncio.sleep(0.01)
    raise AssertionError("the search index was not ready within 5 s")


async def folded(service: SearchService, namespace: str) -> SearchIndex:
    """Ask until the service's base is the snapshot of `namespace` (a fold is done)."""
    for _ in range(500):
        index = service.indexes._index
        if index is not None and index.namespace == namespace:
            return index
        await service.index_status()  # keeps the keeper looking
        await asyncio.sleep(0.01)
    raise AssertionError(f"no base of {namespace} within 5 s")


def snapshot_folders(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_dir())


def mapped(index: SearchIndex) -> bool:
    """Every array of the index is a view of a read-only file map."""
    arrays = [index.id_bytes, index.id_offsets, index.updated_rank, *index.cats.values(),
              *index.nums.values(), *index.orders.values(), index.latitude, index.longitude,
              index.geo_order, index.geo_keys]  # fmt: skip
    return all(isinstance(a.base, np.memmap) and not a.flags.writeable for a in arrays)


async def test_a_snapshot_from_disk_answers_what_sql_and_the_built_index_answer(
    tuned_db: Database, tmp_path: Path
) -> None:
    repo = SearchRepository(tuned_db)
    fresh = await built(repo)
    snapshots = Snapshots(tmp_path / "index")
    snapshots.write(fresh)
    loaded = snapshots.load(fresh.namespace)
    assert loaded is not None and mapped(loaded)
    assert loaded.size == fresh.size == await repo.store.count()
    assert loaded.codes == fresh.codes and loaded.known == fresh.known
    assert loaded.nbytes == fresh.nbytes
    for query in searches(await places(tuned_db), 250):
        assert loaded.search(query) == fresh.search(query)
    assert len(await compared(loaded, tuned_db)) > 100


async def test_an_empty_store_round_trips(empty_db: Database, tmp_path: Path) -> None:
    fresh = await built(SearchRepository(empty_db))
    snapshots = Snapshots(tmp_path)
    snapshots.write(fresh)
    loaded = snapshots.load(fresh.namespace)
    assert loaded is not None and loaded.size == 0
    assert loaded.search(SearchQuery(SearchFilters(), "lastUpdated", "desc", 10, 0)) == IndexPage(
        0, [], None
    )


async def test_a_second_worker_maps_the_snapshot_without_reading_the_table(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "index"
    db = await open_db(store)
    try:
        first = SearchService(db, snapshots=folder)
        first_reads = counted(first, monkeypatch)
        first.warm()
        await ready(first)
        assert first_reads == [] and first.indexes.source == "table"  # its child read the table
        assert mapped(first.indexes._index)  # type: ignore[arg-type]  # the builder maps it too
        namespace = await first.repo.cache_namespace()
        assert snapshot_folders(folder) == [Snapshots(folder).path(namespace).name]

        second = SearchService(db, snapshots=folder)
        second_reads = counted(second, monkeypatch)
        second.warm()
        index = await ready(second)
        assert second_reads == [] and second.indexes.source == "snapshot"
        assert mapped(index)
        assert await second.search(SearchQuery(*QUERY)) == await first.search(SearchQuery(*QUERY))
        await first.close()
        await second.close()
    finally:
        await db.close()


async def test_a_second_app_on_the_store_starts_from_the_snapshot(fresh_store: Store) -> None:
    """Two servers of one host (two apps, as two workers): the second reads no table."""
    secret = await create_key(fresh_store, "enterprise")
    headers = {"Authorization": f"Bearer {secret}"}
    settings = settings_for(fresh_store, cache_ttl=0)
    assert settings.index_path == fresh_store.index_dir
    answers, sources = [], []
    for _ in range(2):
        app = create_app(settings)
        async with AsyncTestClient(app=HeadAsGet(app)) as client:  # type: ignore[arg-type]
            await index_ready(client)
            answer = await client.get("/v1/properties?state=IA&sort=listPrice", headers=headers)
            answers.append(answer.json())
            sources.append(app.state.services.search.indexes.source)
    assert sources == ["table", "snapshot"]
    assert answers[0] == answers[1]
    assert len(snapshot_folders(fresh_store.index_dir)) == 1


def _damage_missing(path: Path) -> None:
    (path / "num.list_price.npy").unlink()


def _damage_truncated(path: Path) -> None:
    file = path / "order.list_price.npy"
    file.write_bytes(file.read_bytes()[:-8])


def _damage_flipped(path: Path) -> None:
    file = path / "cat.state.npy"
    data = bytearray(file.read_bytes())
    data[-1] ^= 0xFF
    file.write_bytes(bytes(data))


def _damage_manifest(path: Path) -> None:
    (path / MANIFEST).unlink()


def _damage_half_manifest(path: Path) -> None:
    text = (path / MANIFEST).read_bytes()
    (path / MANIFEST).write_bytes(text[: len(text) // 2])


def _damage_other_format(path: Path) -> None:
    manifest = json.loads((path / MANIFEST).read_text())
    manifest["format"] = -1
    (path / MANIFEST).write_text(json.dumps(manifest))


DAMAGES = {
    "file-missing": _damage_missing,
    "file-truncated": _damage_truncated,
    "byte-changed": _damage_flipped,
    "no-manifest": _damage_manifest,
    "torn-manifest": _damage_half_manifest,
    "other-format": _damage_other_format,
}


@pytest.mark.parametrize("damage", list(DAMAGES.values()), ids=list(DAMAGES))
async def test_a_damaged_snapshot_is_rebuilt_never_served(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    damage: Callable[[Path], None],
) -> None:
    folder = tmp_path / "index"
    db = await open_db(store)
    try:
        first = SearchService(db, snapshots=folder)
        first.warm()
        expected = await first.search(SearchQuery(*QUERY))
        await ready(first)
        namespace = await first.repo.cache_namespace()
        path = Snapshots(folder).path(namespace)
        damage(path)
        assert Snapshots(folder).load(namespace) is None  # never served

        second = SearchService(db, snapshots=folder)
        reads = counted(second, monkeypatch)
        second.warm()
        assert await second.search(SearchQuery(*QUERY)) == expected  # from SQL while it rebuilds
        index = await ready(second)
        assert reads == [] and second.indexes.source == "table" and mapped(index)  # a child's
        assert await second.search(SearchQuery(*QUERY)) == expected
        assert Snapshots(folder).load(namespace) is not None  # written again, whole
        assert snapshot_folders(folder) == [path.name]  # no temporary or set-aside folder
    finally:
        await db.close()


async def test_a_write_that_dies_midway_leaves_nothing_that_looks_complete(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A builder that fails (or is killed) while writing leaves no snapshot folder; the next
    builder of that version clears its temporary folder and writes a whole one."""
    folder = tmp_path / "index"
    db = await open_db(store)
    try:
        index = await built(SearchRepository(db))
        snapshots = Snapshots(folder)
        real = np.lib.format.write_array
        written: list[int] = []

        def dies(*args: Any, **kwargs: Any) -> None:
            if len(written) == 5:
                raise OSError(28, "No space left on device")
            written.append(1)
            real(*args, **kwargs)

        monkeypatch.setattr(np.lib.format, "write_array", dies)
        with pytest.raises(OSError):
            snapshots.write(index)
        assert list(folder.iterdir()) == []  # the temporary folder went with the error
        assert snapshots.load(index.namespace) is None

        # A killed builder cannot clean up: its temporary folder stays behind, unused.
        monkeypatch.setattr(np.lib.format, "write_array", real)
        leftover = folder / f".tmp-{snapshots.path(index.namespace).name}-dead"
        leftover.mkdir()
        (leftover / "id_bytes.npy").write_bytes(b"\x93NUMPY")
        assert snapshots.load(index.namespace) is None
        snapshots.write(index)
        assert snapshots.load(index.namespace) is not None
        assert not leftover.exists()
    finally:
        await db.close()


async def test_workers_wait_for_the_builder_and_take_over_if_it_dies(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While another holds the version's lock, a worker answers from SQL and reads no table;
    when the holder goes without writing the snapshot (it died), the worker builds it."""
    folder = tmp_path / "index"
    db = await open_db(store)
    try:
        service = SearchService(db, snapshots=folder, tuning=KeeperSettings(snapshot_wait=0.01))
        namespace = await service.repo.cache_namespace()
        holder = Snapshots(folder).lock(namespace)
        assert holder.acquire()
        reads = counted(service, monkeypatch)
        expected = await service.search(
            SearchQuery(*QUERY)
        )  # SQL, and starts waiting for the snapshot
        await asyncio.sleep(0.2)
        assert reads == [] and await service.index_status() == "building"
        assert await service.search(SearchQuery(*QUERY)) == expected
        holder.release()  # as when its process exits
        assert mapped(await ready(service))
        assert reads == [] and service.indexes.source == "table"  # built by its child
        assert await service.search(SearchQuery(*QUERY)) == expected
    finally:
        await db.close()


async def _load_one(made: Store, name: str, price: int) -> None:
    db = await open_db(made)
    extra = record(name, list_price=price, address=record(name).address)
    report = await load(db, iter([(1, extra)]), origin="import", as_of=AS_OF)
    assert not report.rejects
    await db.close()


@pytest.mark.parametrize("recent", [False, True], ids=["expired", "recent"])
@pytest.mark.slow
async def test_a_load_makes_a_new_snapshot_and_old_ones_go(
    fresh_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recent: bool
) -> None:
    """Superseded snapshots stay for cursor walks while recent (KEEP_OLDER at most), the
    newest older one always (workers may still map it). Every change is folded here (the
    fold rule at 0 rows): each load makes a new snapshot, the delta answering meanwhile."""
    from propdata.search import snapshot as snapshot_module

    monkeypatch.setattr(snapshot_module, "KEEP_OLDER", 2)
    if not recent:
        monkeypatch.setattr(snapshot_module, "KEEP_SECONDS", 0.0)
    kept = 3 if recent else 2
    folder = tmp_path / "index"
    db = await open_db(fresh_store)
    try:
        service = SearchService(db, snapshots=folder)
        service.indexes.fold_rows = 0
        service.warm()
        await ready(service)
        snapshots = Snapshots(folder)
        versions = [snapshots.path(await service.repo.cache_namespace()).name]
        for n in range(3):
            await _load_one(fresh_store, f"zz-new-{n}", 1 + n)
            namespace = await service.repo.cache_namespace()
            versions.append(snapshots.path(namespace).name)
            assert versions[-1] != versions[-2]  # a load bumps the data version
            answer = await service.search(
                SearchQuery(SearchFilters(state="IA"), "listPrice", "asc", 1, 0)
            )
            assert answer.data[0].id == "zz-new-0"  # exact while it folds (the delta)
            index = await folded(service, namespace)
            assert index.size == 43 + n
            assert await service.search(SearchQuery(SearchFilters(state="IA"), "listPrice", "asc", 1, 0)) \
                == answer  # fmt: skip
            # The one in use, the one before it, and (recent) one more.
            assert snapshot_folders(folder) == sorted(versions[-kept:])
        locks = sorted(p.name for p in folder.glob("*.lock") if not p.name.endswith(".build.lock"))
        assert locks == sorted(f"{v}.lock" for v in versions[-kept:])
        await service.close()
    finally:
        await db.close()


async def test_another_stores_snapshots_are_left_alone(store: Store, tmp_path: Path) -> None:
    folder = tmp_path / "index"
    db = await open_db(store)
    try:
        index = await built(SearchRepository(db))
        snapshots = Snapshots(folder)
        snapshots.write(index)
        store_id, _, version = index.namespace.rpartition(".")
        other = f"{'f' * len(store_id)}.{int(version) - 1}"
        (folder / snapshots.path(other).name).mkdir()
        assert snapshots.prune(index.namespace) == []
        assert len(snapshot_folders(folder)) == 2
    finally:
        await db.close()


CHILD = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from pathlib import Path
    from propdata.kit.db import connect
    from propdata.search.service import SearchService

    async def main(url: str, folder: str, go: str) -> None:
        db = await connect(url)
        service = SearchService(db, snapshots=Path(folder))
        builds = []
        original = service.indexes._build_apart

        async def build_apart(*args):
            builds.append(1)
            await asyncio.sleep(0.3)  # a build that takes a while
            return await original(*args)

        service.indexes._build_apart = build_apart
        print("ready", flush=True)
        while not Path(go).exists():
            time.sleep(0.005)
        service.warm()
        for _ in range(1000):
            if await service.index_status() == "ok":
                break
            await asyncio.sleep(0.01)
        index = service.indexes._index
        print(json.dumps({"builds": len(builds), "source": service.indexes.source,
                          "namespace": index.namespace, "size": index.size}), flush=True)
        await service.close()
        await db.close()

    asyncio.run(main(*sys.argv[1:]))
    """
)


@pytest.mark.slow
def test_two_processes_building_at_once_make_one_snapshot(store: Store, tmp_path: Path) -> None:
    folder, go = tmp_path / "index", tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, store.url, str(folder), str(go)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    for child in children:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    go.touch()
    reports = []
    for child in children:
        out, _ = child.communicate(timeout=60)
        assert child.returncode == 0, out
        reports.append(json.loads(out.strip().splitlines()[-1]))
    assert sorted(r["source"] for r in reports) == ["snapshot", "table"]
    assert sorted(r["builds"] for r in reports) == [0, 1]  # one had the table read
    assert reports[0]["namespace"] == reports[1]["namespace"] and reports[0]["size"] == 42
    assert snapshot_folders(folder) == [Snapshots(folder).path(reports[0]["namespace"]).name]


def test_where_snapshots_live_by_default() -> None:
    assert Settings(database_url="var/propdata.db").index_path == Path("var/propdata-index")
    assert Settings(database_url="/srv/d/main.db").index_path == Path("/srv/d/main-index")
    assert Settings(database_url="postgresql://h/db").index_path == Path("var/propdata-index")
    assert Settings(database_url="postgresql://h/db", index_dir="/cache/ix").index_path == Path(
        "/cache/ix"
    )
    assert Settings(database_url=":memory:").index_path is None


async def test_a_folder_that_cannot_be_written_leaves_a_private_index(
    store: Store, tmp_path: Path
) -> None:
    """Snapshots are an optimisation: without a usable folder each worker builds its own."""
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    db = await open_db(store)
    try:
        service = SearchService(db, snapshots=blocked / "index")
        service.warm()
        index = await ready(service)
        assert service.indexes.source == "table" and not mapped(index)
        assert index.size == 42
    finally:
        await db.close()


def test_the_lock_is_exclusive_within_a_process_too(tmp_path: Path) -> None:
    one, two = BuildLock(tmp_path / "a.lock"), BuildLock(tmp_path / "a.lock")
    assert one.acquire() and not two.acquire()
    one.release()
    assert two.acquire()
    two.release()

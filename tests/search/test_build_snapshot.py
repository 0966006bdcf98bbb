"""The search index snapshot built in a child process (properties.build_snapshot).

The child writes the very files an in-process build writes; a child that fails (exits,
is killed midway, cannot open the store, finds the disk full) leaves its worker its own
copy and no folder that could be served; a service that closes kills its child; a load
during the read is taken from the change feed; a child whose worker died stops and writes
nothing.
The store's address reaches the child in its environment, never on its command line.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from propdata.ingest import synthetic
from propdata.ingest.loader import load
from propdata.kit.addresses import city_key
from propdata.kit.db import Database
from propdata.properties.repository import PropertyRepository
from propdata.search import build_snapshot
from propdata.search import keeper as service_module
from propdata.search.filters import SearchFilters
from propdata.search.index import GROUPED, INDEX_COLUMNS, ITEM_COLUMNS, SearchIndex
from propdata.search.keeper import KeeperSettings
from propdata.search.live import Delta
from propdata.search.query import SearchQuery
from propdata.search.repository import SearchRepository
from propdata.search.service import SearchService
from propdata.search.snapshot import ITEMS, BuildLock, Snapshots
from tests.conftest import Store, open_db
from tests.factories import AS_OF
from tests.live import until
from tests.search.test_index import compared
from tests.search.test_index_snapshot import (
    QUERY,
    counted,
    mapped,
    ready,
    snapshot_folders,
)
from tests.search.test_items import built_with_items

COLUMNS = INDEX_COLUMNS + ITEM_COLUMNS

REAL = "from propdata.search import build_snapshot as b; sys.exit(b.main(sys.argv[1:]))"
"""The end of a test's child program: the real build, with the worker's arguments."""
EXITS = "import sys; sys.exit(1)"
KILLED_MIDWAY = """
import os, signal, sys
from pathlib import Path
draft = Path(sys.argv[2])
(draft / "items.bin").write_bytes(b"{" * 1000)
(draft / "index.json").write_text("{}")
os.kill(os.getpid(), signal.SIGKILL)
"""
DISK_FULL = f"""
import sys
import numpy as np
def full(*args, **kwargs):
    raise OSError(28, "No space left on device")
np.lib.format.write_array = full
{REAL}
"""
STUCK = """
import os, time
from pathlib import Path
Path(os.environ["TEST_CHILD_PID"]).write_text(str(os.getpid()))
time.sleep(60)
"""
GATED = f"""
import os, sys, time
from pathlib import Path
Path(os.environ["TEST_CHILD_PID"]).write_text(str(os.getpid()))
while not Path(os.environ["TEST_CHILD_GO"]).exists():
    time.sleep(0.01)
from propdata.ingest import synthetic
from propdata.ingest.loader import load
from propdata.kit.addresses import city_key
from propdata.kit.db import Database
from propdata.properties.repository import PropertyRepository
from propdata.search import build_snapshot
from propdata.search.filters import SearchFilters
from propdata.search.index import INDEX_COLUMNS, ITEM_COLUMNS
from propdata.search.live import Delta
build_snapshot.PAGE = 5  # many pages: the parent is checked between them
{REAL}
"""


def program(code: str) -> KeeperSettings:
    """Build snapshots with `code` (a `python -c` program given the builder's arguments)."""
    return KeeperSettings(builder=("-c", textwrap.dedent(code)))


def started(file: Path) -> int | None:
    """The pid the test's child program wrote, once it has."""
    text = file.read_text() if file.exists() else ""
    return int(text) if text else None


async def child_pid(file: Path) -> int:
    pid = await until(lambda: started(file), "the child started")
    assert pid is not None
    return pid


def command_and_environment(pid: int) -> tuple[bytes, list[bytes]]:
    proc = Path(f"/proc/{pid}")
    return (proc / "cmdline").read_bytes(), (proc / "environ").read_bytes().split(b"\0")


def gone(pid: int) -> bool:
    """The process has exited (a zombie left to a parent that does not reap counts)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


async def test_the_child_writes_the_files_an_in_process_build_writes(
    mixed: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = await open_db(mixed)
    try:
        service = SearchService(db, snapshots=tmp_path / "child")
        reads = counted(service, monkeypatch)
        service.warm()
        index = await ready(service)
        assert reads == [] and service.indexes.source == "table" and mapped(index)
        assert index.items is not None and index.items.ready
        here = Snapshots(tmp_path / "here")  # the build as the worker made it before
        draft = here.draft(index.namespace)
        with (draft / ITEMS).open("wb") as items:
            built = await built_with_items(SearchRepository(db), items)
        expected = here.write(built, draft)
        written = Snapshots(tmp_path / "child").path(index.namespace)
        files = sorted(p.name for p in expected.iterdir())
        assert sorted(p.name for p in written.iterdir()) == files and ITEMS in files
        for name in files:
            assert (written / name).read_bytes() == (expected / name).read_bytes(), name
        await service.close()
    finally:
        await db.close()


@pytest.mark.parametrize("failure", ["exits", "killed-midway", "bad-store", "disk-full"])
async def test_a_child_that_fails_leaves_the_worker_its_own_copy_and_nothing_served(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    failure: str,
) -> None:
    tuning = KeeperSettings()
    if failure == "exits":
        tuning = program(EXITS)
    elif failure == "killed-midway":
        tuning = program(KILLED_MIDWAY)
    elif failure == "disk-full":
        tuning = program(DISK_FULL)
    else:  # a file that is no SQLite database: the child cannot read the store
        garbage = tmp_path / "garbage.db"
        garbage.write_bytes(b"not a database" * 1000)
        monkeypatch.setattr(service_module, "address", lambda db: str(garbage))
    folder = tmp_path / "index"
    db = await open_db(store)
    try:
        service = SearchService(db, snapshots=folder, tuning=tuning)
        expected = await service.search(SearchQuery(*QUERY))  # SQL
        with caplog.at_level(logging.WARNING, logger="propdata"):
            service.warm()
            index = await ready(service)
        assert service.indexes.source == "table" and not mapped(index)  # its own copy
        assert index.size == 42 and await service.search(SearchQuery(*QUERY)) == expected
        assert "build failed" in caplog.text
        assert snapshot_folders(folder) == []  # no snapshot, no draft
        assert Snapshots(folder).load(index.namespace) is None
        await service.close()
    finally:
        await db.close()


async def test_a_service_that_closes_kills_its_child(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_CHILD_PID", str(tmp_path / "pid"))
    folder = tmp_path / "index"
    db = await open_db(store)
    try:
        service = SearchService(db, snapshots=folder, tuning=program(STUCK))
        namespace = await service.repo.cache_namespace()
        service.warm()
        pid = await child_pid(tmp_path / "pid")
        assert await service.index_status() == "building"
        assert [p.name.startswith(".tmp-") for p in folder.iterdir() if p.is_dir()] == [True]
        # The store's address is in its environment, not on its command line (`ps`).
        command, environment = command_and_environment(pid)
        assert store.url.encode() not in command
        assert f"PROPDATA_DATABASE_URL={store.url}".encode() in environment
        # It holds the version's lock with its worker (the same open file).
        lock = Snapshots(folder).lock(namespace).path
        held = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        assert str(lock) in held
        await asyncio.wait_for(service.close(), 10)  # not the child's 60 s
        assert gone(pid)
        assert snapshot_folders(folder) == []  # the draft went too
        again = Snapshots(folder).lock(namespace)
        assert again.acquire()
        again.release()
    finally:
        await db.close()


async def test_a_load_during_the_read_is_taken_from_the_change_feed(fresh_store: Store) -> None:
    """The index read is of the namespace and feed position its read started at, marked not
    exact when a load landed during the read; the load's changes come from the feed."""
    db = await open_db(fresh_store)
    try:
        repo = SearchRepository(db)
        namespace, feed = await repo.feed_position()
        landed: list[bool] = []

        async def between() -> None:
            if not landed:  # after the first page: a row read already and one not yet
                landed.append(True)
                async with db.transaction():
                    await db.execute("UPDATE properties SET list_price = 1"
                                     " WHERE id = (SELECT min(id) FROM properties)")  # fmt: skip
                    await db.execute(
                        "DELETE FROM properties WHERE id = (SELECT max(id) FROM properties)"
                    )
                    await repo.store.bump_data_version()

        index = await build_snapshot.read_rows(repo, None, 5, between)
        assert (index.namespace, index.feed, index.exact) == (namespace, feed, False)
        read = await repo.changed_rows(COLUMNS, index.feed, index.feed + 100)
        assert len(read.rows) == 2 and read.namespace != namespace and read.since == index.mark
        live = Delta(index).apply(read.namespace, read.last, read.rows)
        sql = SearchService(db, search_index=False)
        for sort in ("listPrice", "lastUpdated"):
            for order in ("asc", "desc"):
                query = SearchQuery(SearchFilters(state="IA"), sort, order, 100, 0)
                found = await sql.search(query)
                page = live.search(query)
                assert page is not None and page.total == found.meta.total
                assert page.ids == [item.id for item in found.data]
    finally:
        await db.close()


WORKER = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path
    from propdata.kit.db import connect
    from propdata.search.keeper import KeeperSettings
    from propdata.search.service import SearchService

    async def main(url: str, folder: str, code: str) -> None:
        db = await connect(url)
        tuning = KeeperSettings(builder=("-c", code))
        service = SearchService(db, snapshots=Path(folder), tuning=tuning)
        service.warm()
        await asyncio.sleep(60)  # killed before

    asyncio.run(main(*sys.argv[1:]))
    """
)


def test_a_child_whose_worker_died_stops_and_writes_nothing(store: Store, tmp_path: Path) -> None:
    folder = tmp_path / "index"
    env = {**os.environ, "TEST_CHILD_PID": str(tmp_path / "pid"),
           "TEST_CHILD_GO": str(tmp_path / "go")}  # fmt: skip
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, store.url, str(folder), textwrap.dedent(GATED)], env=env
    )
    try:
        deadline = time.monotonic() + 10
        while (pid := started(tmp_path / "pid")) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pid is not None, "the child did not start within 10 s"
    finally:
        worker.send_signal(signal.SIGKILL)  # no close, no clean-up: the child is on its own
        worker.wait(10)
    (tmp_path / "go").touch()
    deadline = time.monotonic() + 10
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gone(pid)
    assert snapshot_folders(folder) == []  # its draft went with it; nothing was written
    locks = list(folder.glob("*.lock"))
    assert len(locks) == 2  # the version's and the host's
    for found in locks:
        lock = BuildLock(found)
        assert lock.acquire()  # free again: a worker can build the version
        lock.release()


async def test_the_child_stops_between_pages_when_its_parent_changed(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In this process: the build's own check, with a parent that is not ours."""
    monkeypatch.setattr(build_snapshot, "PAGE", 5)
    db = await open_db(store)
    namespace = await SearchRepository(db).cache_namespace()
    await db.close()
    snapshots = Snapshots(tmp_path / "index")
    draft = snapshots.draft(namespace)
    status = await build_snapshot.build(store.url, namespace, draft, os.getppid() + 1)
    assert status == build_snapshot.ORPHANED
    assert snapshot_folders(snapshots.folder) == []
    draft = snapshots.draft(namespace)
    assert await build_snapshot.build(store.url, namespace, draft, os.getppid()) == 0
    assert snapshots.load(namespace) is not None


async def written(store: Store, snapshots: Snapshots, namespace: str) -> None:
    """The child's build, run here, wrote the snapshot of the store's data into `snapshots`."""
    assert await build_snapshot.build(store.url, namespace, snapshots.draft(namespace),
                                      os.getppid()) == 0  # fmt: skip


async def _change(db: Database) -> None:
    """One commit of every kind of change: records edited in searched columns (a city no
    record had, a price, coordinates gone), removed, and created with ids before, between
    and after the others."""
    properties = PropertyRepository(db)
    ids = [row[0] for row in await db.fetch_all("SELECT id FROM properties ORDER BY id")]
    edited = []
    for n, found in enumerate(ids[3:60:7]):
        row = await properties.get(found)
        assert row is not None
        values: dict[str, Any] = {"last_updated": f"2026-11-2{n % 8}T00:00:00Z"}
        if n % 3 == 0:
            values.update(city="Newtown", city_key=city_key("Newtown"))
        if n % 3 == 1:
            values["list_price"] = 123_000 + n
        if n % 3 == 2:
            values.update(latitude=None, longitude=None)
        edited.append(row._replace(**values))
    templates = [await properties.get(found) for found in ids[:3]]
    created = [row._replace(id=name) for row, name in zip(
        templates, ["0-first", f"{ids[40]}-between", "~-last"], strict=True) if row]  # fmt: skip
    async with db.transaction():
        for gone in ids[5:80:11]:
            await db.execute("DELETE FROM properties WHERE id = ?", (gone,))
        await properties.write(edited + created, [], [row.id for row in edited])
        await properties.bump_data_version()


def _decoded(index: SearchIndex, name: str) -> list[Any]:
    values = list(index.codes[name])
    return [values[code] for code in index.cats[name].tolist()]


def _group(index: SearchIndex, name: str, code: int) -> Any:
    starts = index.group_starts[name]
    return index.groups[name].between(int(starts[code]), int(starts[code + 1]))


def assert_same_index(folded: SearchIndex, table: SearchIndex) -> None:
    """Array for array the same rows, orders and items; category codes may be numbered
    otherwise (and a fold keeps the codes of values no row holds any more), so those
    compare by their values."""
    assert (folded.namespace, folded.size, folded.feed, folded.mark) == (
        table.namespace, table.size, table.feed, table.mark)  # fmt: skip
    assert folded.exact and folded.known == table.known
    same = ["id_bytes", "id_offsets", "updated_rank", "latitude", "longitude", "geo_order",
            "geo_keys", "updated", "item_offsets"]  # fmt: skip
    for name in same:
        ours, theirs = getattr(folded, name), getattr(table, name)
        assert np.array_equal(ours, theirs, equal_nan=ours.dtype.kind == "f"), name
    for column, values in table.nums.items():
        assert np.array_equal(folded.nums[column], values, equal_nan=True), column
    for column, order in table.orders.items():
        assert np.array_equal(folded.orders[column], order), column
    for name in table.cats:
        assert _decoded(folded, name) == _decoded(table, name), name
    for name in GROUPED:
        for value, code in table.codes[name].items():
            assert np.array_equal(_group(folded, name, folded.codes[name][value]),
                                  _group(table, name, code)), (name, value)  # fmt: skip
    assert folded.items is not None and table.items is not None
    assert folded.items.path.read_bytes() == table.items.path.read_bytes()


@pytest.mark.parametrize("copy", ["in-the-kernel", "no-kernel-copy"])
async def test_a_snapshot_is_the_newest_one_with_the_changes_since_folded_in(
    fresh_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, copy: str
) -> None:
    """The child starts from the host's newest snapshot and the changes since, never
    reading the table, and writes what a read of the table writes at that version; its
    search items are copied in the kernel, or through the process on a file system that
    cannot."""
    if copy == "no-kernel-copy":
        monkeypatch.setattr(os, "copy_file_range", _cross_device)
    db = await open_db(fresh_store)
    try:
        await load(db, synthetic.generate(300, 5, AS_OF), origin="synthetic", as_of=AS_OF)
        repo = SearchRepository(db)
        snapshots = Snapshots(tmp_path / "index")
        await written(fresh_store, snapshots, await repo.cache_namespace())
        await _change(db)
        namespace = await repo.cache_namespace()

        async def no_table(*args: Any) -> SearchIndex:
            raise AssertionError("the table was read")

        with monkeypatch.context() as patched:
            patched.setattr(build_snapshot, "read_rows", no_table)
            await written(fresh_store, snapshots, namespace)
        folded = snapshots.load(namespace)
        table_folder = Snapshots(tmp_path / "table")  # no snapshot to start from: the table
        await written(fresh_store, table_folder, namespace)
        table = table_folder.load(namespace)
        assert folded is not None and table is not None
        assert folded.items is not None and folded.items.verified()
        assert_same_index(folded, table)
        assert (
            city_key("Newtown") in folded.codes["city_key"] and len(await compared(folded, db)) > 50
        )
    finally:
        await db.close()


@pytest.mark.parametrize("why", ["too-many-changes", "another-store", "the-fold-fails"])
async def test_the_table_is_read_when_the_newest_snapshot_is_no_start(
    fresh_store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    why: str,
) -> None:
    """Past FOLD_CAP changes, from another store's snapshot, or when the fold fails midway
    (its items half written; logged), the child writes what a read of the table writes."""
    db = await open_db(fresh_store)
    try:
        repo = SearchRepository(db)
        snapshots = Snapshots(tmp_path / "index")
        await written(fresh_store, snapshots, await repo.cache_namespace())
        await _change(db)
        if why == "too-many-changes":
            monkeypatch.setattr(build_snapshot, "FOLD_CAP", 3)
        elif why == "another-store":  # the feed's entry the snapshot was made at is not ours
            monkeypatch.setattr(SearchRepository, "feed_mark", _other_mark)
        else:
            monkeypatch.setattr(build_snapshot, "fold", _broken_fold)
        namespace = await repo.cache_namespace()
        if why != "the-fold-fails":
            with (tmp_path / "items.bin").open("wb") as items:
                assert await build_snapshot.fold_newest(repo, snapshots, items) is None
        with caplog.at_level(logging.ERROR, "propdata"):
            await written(fresh_store, snapshots, namespace)
        failed = "folding the newest search index snapshot failed" in caplog.text
        assert failed == (why == "the-fold-fails")
        table = Snapshots(tmp_path / "table")
        await written(fresh_store, table, namespace)
        ours, expected = snapshots.load(namespace), table.load(namespace)
        assert ours is not None and expected is not None
        for name in ("index.json", ITEMS, "cat.city_key.npy", "group.city_key.npy"):
            assert (snapshots.path(namespace) / name).read_bytes() == (
                table.path(namespace) / name).read_bytes(), name  # fmt: skip
    finally:
        await db.close()


def _broken_fold(view: Any, mark: Any, items: Any) -> Any:
    items.write(b"{" * 5000)
    items.flush()
    raise RuntimeError("a fold that fails")


async def _other_mark(self: SearchRepository, feed: int) -> str:
    return "another store's"


def _cross_device(*args: Any) -> int:
    raise OSError(errno.EXDEV, "Invalid cross-device link")

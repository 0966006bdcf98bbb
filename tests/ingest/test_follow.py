"""`propdata data import --follow` as operators run it: a process reading a growing file (or
a pipe) while the test appends to it, against both stores."""

from __future__ import annotations

import asyncio
import csv
import io
import os
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any

import msgspec
import pytest

from propdata.ingest.follow import Mark, follow_key
from propdata.properties.repository import PropertyRepository
from tests.conftest import Store, drop_store, new_store, open_db
from tests.factories import record
from tests.live import until

WAIT = 20.0
"""Seconds a test waits for what should take one or two (a busy machine is slow)."""


@pytest.fixture
async def target(backend: str, tmp_path: Path) -> AsyncIterator[Store]:
    """An empty, migrated store of each configuration."""
    made = await new_store(backend, tmp_path)
    db = await open_db(made)
    await db.close()
    yield made
    await drop_store(made)


def line(pid: str, **overrides: Any) -> bytes:
    return msgspec.json.encode(record(pid, **overrides)) + b"\n"


class Follower:
    """`propdata data import --follow ARGS` in a process; its standard error is collected as
    it comes."""

    def __init__(self, store: Store, *args: str, stdin: int | IO[bytes] | None = None) -> None:
        env = {**os.environ, **store.env(), "PROPDATA_AS_OF": "2026-11-21",
               "PROPDATA_LOG_LEVEL": "WARNING"}  # fmt: skip
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "propdata", "data", "import", "--follow", *args],
            env=env, stdin=stdin if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._collect, daemon=True)
        self._reader.start()

    def _collect(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.lines.append(raw.decode())

    @property
    def stderr(self) -> str:
        if self.proc.poll() is not None:
            self._reader.join(WAIT)  # all of it
        return "".join(self.lines)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(WAIT)

    def kill(self) -> None:
        """Kill it if it runs, and close its pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(WAIT)
        for pipe in (self.proc.stdin, self.proc.stderr):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def followers() -> Any:
    started: list[Follower] = []

    def start(store: Store, *args: str, **kwargs: Any) -> Follower:
        started.append(Follower(store, *args, **kwargs))
        return started[-1]

    yield start
    for f in started:
        f.kill()


async def scalar(store: Store, sql: str, params: tuple[Any, ...] = ()) -> Any:
    db = await open_db(store)
    try:
        row = await db.fetch_one(sql, params)
        return row[0] if row else None
    finally:
        await db.close()


async def count(store: Store) -> int:
    return int(await scalar(store, "SELECT count(*) FROM properties"))


async def counted(store: Store, n: int) -> None:
    async def reached() -> bool:
        return await count(store) >= n

    await until(reached, f"{n} records committed")
    assert await count(store) == n


async def mark_of(store: Store, path: Path) -> Mark | None:
    db = await open_db(store)
    try:
        text = await PropertyRepository(db).meta_value(follow_key(path))
    finally:
        await db.close()
    return Mark.decode(text) if text is not None else None


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


async def test_appended_lines_are_committed_while_it_runs(
    target: Store, tmp_path: Path, followers: Any
) -> None:
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(line("a1") + line("a2"))
    follower = followers(target, str(feed))
    await counted(target, 2)
    append(feed, line("a3") + b"\n" + line("a4", list_price=260_000))
    await counted(target, 4)
    append(feed, line("a1", list_price=240_000))  # an update of a committed record

    async def updated() -> bool:
        price = await scalar(target, "SELECT list_price FROM properties WHERE id = 'a1'")
        return bool(price == 240_000)

    await until(updated, "a1 updated")
    assert follower.proc.poll() is None  # still following
    env = {**os.environ, **target.env()}
    keys = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "propdata", "keys", "create", "--plan", "free", env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    _, errors = await asyncio.wait_for(keys.communicate(), WAIT)
    assert keys.returncode == 0, errors  # operators keep control meanwhile
    assert follower.stop() == 0, follower.stderr
    assert "store: " in follower.stderr
    assert "4 new, 1 updated" in follower.stderr
    mark = await mark_of(target, feed)
    assert mark is not None and mark.offset == feed.stat().st_size and mark.lines == 6


async def test_a_follower_is_a_feed_expected_to_load_until_stopped_on_purpose(
    target: Store, followers: Any, tmp_path: Path
) -> None:
    """The feeds /metrics counts (propdata_ingest_feeds, which PropdataIngestStalled needs):
    a follower names itself at its start; a crash leaves it named, a signal forgets it."""
    source = tmp_path / "feed.jsonl"
    source.write_bytes(line("feed-1"))

    async def feeds() -> int:
        return int(await scalar(target, "SELECT count(*) FROM ingest_feeds"))

    crashed = followers(target, str(source))
    await counted(target, 1)
    assert await feeds() == 1
    crashed.kill()
    assert await feeds() == 1
    stopped = followers(target, str(source))
    append(source, line("feed-2"))
    await counted(target, 2)
    assert stopped.stop() == 0, stopped.stderr
    assert await feeds() == 0


async def test_a_partial_last_line_waits_for_its_newline(
    target: Store, tmp_path: Path, followers: Any
) -> None:
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(line("p1"))
    follower = followers(target, str(feed))
    await counted(target, 1)
    whole = line("p2")
    append(feed, whole[:40])
    await asyncio.sleep(2.5)  # more than two commit periods
    assert await count(target) == 1
    append(feed, whole[40:])
    await counted(target, 2)
    assert follower.stop() == 0, follower.stderr
    assert "rejected" not in follower.stderr.replace("0 rejected", "")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_commits_what_was_read_and_exits_0(
    target: Store, tmp_path: Path, followers: Any, sig: int
) -> None:
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(line("s1"))
    follower = followers(target, str(feed))
    await counted(target, 1)
    # Read at the next look at the file (every 0.1 s); committed only by the signal, well
    # before the second they would otherwise wait.
    append(feed, line("s2") + line("s3"))
    await asyncio.sleep(0.5)
    assert follower.stop(sig) == 0, follower.stderr
    assert await count(target) == 3
    mark = await mark_of(target, feed)
    assert mark is not None and mark.offset == feed.stat().st_size


async def test_a_restart_goes_on_from_the_committed_offset(
    target: Store, tmp_path: Path, followers: Any
) -> None:
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(line("r1") + b"{not json\n" + line("r2"))
    first = followers(target, str(feed))
    await counted(target, 2)
    assert first.stop() == 0, first.stderr
    append(feed, line("r3") + line("r4"))
    second = followers(target, str(feed))
    await counted(target, 4)
    assert second.stop() == 0, second.stderr
    assert "going on after" in second.stderr
    # Nothing of the first run read again: two records, no reject reported twice.
    assert "2 records committed" in second.stderr and "0 rejected" in second.stderr, second.stderr
    created = "SELECT count(*) FROM property_changes WHERE change_type = 'created'"
    assert await scalar(target, created) == 4
    rejects = list(csv.reader(io.StringIO((tmp_path / "feed.jsonl.rejects.csv").read_text())))
    assert [r[0] for r in rejects] == ["line", "2"]
    # Another file at the same path (rotated in place): read from its start.
    feed.write_bytes(line("r5", list_price=1) + line("r1"))
    third = followers(target, str(feed))
    await counted(target, 5)
    assert third.stop() == 0, third.stderr
    assert "another file; reading it from the start" in third.stderr
    assert "1 new, 0 updated, 1 unchanged" in third.stderr


async def test_rejects_are_reported_as_they_happen(
    target: Store, tmp_path: Path, followers: Any
) -> None:
    feed = tmp_path / "feed.jsonl"
    report = tmp_path / "bad.csv"
    feed.write_bytes(line("j1"))
    follower = followers(target, str(feed), "--rejects", str(report))
    await counted(target, 1)
    append(feed, b'{"id": "j2", "status": "sold"}\n' + line("j3", status="offMarket"))

    async def reported() -> bool:
        return "rejected: line 2 (j2)" in follower.stderr and "line 3 (j3)" in follower.stderr

    await until(reported, "the rejects on standard error")
    assert follower.proc.poll() is None  # while it runs
    assert report.exists() and "j2" in report.read_text()
    assert follower.stop() == 0, follower.stderr
    rows = list(csv.DictReader(io.StringIO(report.read_text())))
    assert [(r["line"], r["id"]) for r in rows] == [("2", "j2"), ("3", "j3")]
    assert "priceHistory leads to forSale" in rows[1]["reason"]
    assert await count(target) == 1


API_HEADER = ["id", "status", "address.streetAddress", "address.city", "address.state",
              "address.zipCode", "priceHistory", "lastUpdated"]  # fmt: skip


def csv_row(pid: str, street: str = "1 Main St") -> bytes:
    out = io.StringIO()
    history = '[{"date":"2026-10-01","event":"listedForSale","price":250000,"source":"mls"}]'
    csv.writer(out, lineterminator="\n").writerow(
        [pid, "forSale", street, "Ames", "IA", "50010", history, "2026-10-01T00:00:00Z"]
    )
    return out.getvalue().encode()


async def test_csv_rows_wait_for_their_last_line(
    target: Store, tmp_path: Path, followers: Any
) -> None:
    feed = tmp_path / "feed.csv"
    feed.write_bytes(b"")  # the header comes later too
    follower = followers(target, str(feed))
    append(feed, ",".join(API_HEADER).encode() + b"\n" + csv_row("c1"))
    await counted(target, 1)
    multi = csv_row("c2", street="1 Main\nSt")  # a quoted cell over two lines
    cut = multi.index(b"\n") + 1
    append(feed, multi[:cut])  # a complete line, not a complete row
    await asyncio.sleep(2.5)
    assert await count(target) == 1
    append(feed, multi[cut:] + b"c3,forSale\n")
    await counted(target, 2)
    assert await scalar(target, "SELECT street_address FROM properties WHERE id = 'c2'") == (
        "1 Main\nSt"
    )
    assert follower.stop() == 0, follower.stderr
    assert "rejected: line 5: the row has 2 cells" in follower.stderr
    second = followers(target, str(feed))  # the header is read again, the rows are not
    append(feed, csv_row("c4"))
    await counted(target, 3)
    assert second.stop() == 0, second.stderr
    assert "1 records committed" in second.stderr and "0 rejected" in second.stderr


async def test_standard_input_from_a_pipe(target: Store, followers: Any) -> None:
    follower = followers(target, "-", stdin=subprocess.PIPE)
    pipe = follower.proc.stdin
    assert pipe is not None
    pipe.write(line("i1") + line("i2"))
    pipe.flush()
    await counted(target, 2)
    assert follower.proc.poll() is None
    pipe.write(line("i3")[:-1])  # its end ends the last line
    pipe.close()
    assert follower.proc.wait(WAIT) == 0, follower.stderr  # the input ended: so does it
    assert await count(target) == 3
    assert "3 new" in follower.stderr


async def test_lines_about_one_id_apply_in_their_order(
    target: Store, tmp_path: Path, followers: Any
) -> None:
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(b"".join(line("d1", list_price=p) for p in (1, 2, 3)) + line("d2"))
    follower = followers(target, str(feed))
    await counted(target, 2)
    assert follower.stop() == 0, follower.stderr
    assert await scalar(target, "SELECT list_price FROM properties WHERE id = 'd1'") == 3
    assert "2 new, 2 updated" in follower.stderr and "0 rejected" in follower.stderr


async def test_reso_rows_from_a_pipe_keep_the_listing_date_they_follow(
    target: Store, followers: Any
) -> None:
    """The Closed row dates the listing 2026-11-19 (CloseDate - DaysOnMarket counted to the
    contract); the Active row, as of 2026-11-21, dated it 2026-11-16. Same listing."""
    follower = followers(target, "-", stdin=subprocess.PIPE)
    pipe = follower.proc.stdin
    assert pipe is not None
    pipe.write(b"ListingKey,StandardStatus,UnparsedAddress,City,StateOrProvince,PostalCode,"
               b"ListPrice,DaysOnMarket,CloseDate,ClosePrice\n"
               b"K1,Active,1 Main St,Ames,IA,50010,300000,5,,\n"
               b"K1,Closed,1 Main St,Ames,IA,50010,300000,2,2026-11-21,295000\n")  # fmt: skip
    pipe.close()
    assert follower.proc.wait(WAIT) == 0, follower.stderr
    assert "0 rejected" in follower.stderr
    row = await scalar(target, "SELECT status || ' ' || listing_date FROM properties")
    assert row == "recentlySold 2026-11-16"

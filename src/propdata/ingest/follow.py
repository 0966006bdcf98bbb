"""`propdata data import --follow`: keep loading a growing JSON Lines or CSV file (or standard
input) as lines are added to it, in short commits.

A thread reads the file as `tail -f` does (`Tail`): complete lines only, polling every POLL
seconds at its end, and turns them into records with the readers of `data import`. The
event loop commits what it has every COMMIT_SECONDS, or as soon as COMMIT_RECORDS records
wait, through `pipeline.run` (the load, then what the pipeline does after it). Each load
writes, in its own transaction, where in the file its last record ends (`Mark`, in the
`meta` table under `follow_key(path)`), so a follower started again on the same file goes
on from there:

    mark, why = await resume(db, path)
    totals = await follow(db, Followed(path, mark), as_of, stop, on_commit)
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import math
import os
import select
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from propdata.ingest import pipeline, readers
from propdata.ingest.loader import Item, LoadReport, Reject, Removal
from propdata.kit.db import Database
from propdata.properties.loads import LoadsRepository
from propdata.properties.repository import PropertyRepository
from propdata.properties.schemas import PropertyDetail
from propdata.valuation.stored import MarketCache

COMMIT_SECONDS = 1.0
"""The longest a record read waits for its commit."""
COMMIT_RECORDS = 1_000
"""Records waiting that are committed at once, before COMMIT_SECONDS."""
TRANSACTION_RECORDS = 250
"""Records a transaction holds at most: a commit of more is several, each with its mark, so
the write lock is never held for long (a load of 1,000 records held it 0.5-1 s on 2 busy
cores at 100,000 properties)."""
POLL = 0.1
"""Seconds between looks at the end of the file for more lines."""
HEAD = 4_096
"""Bytes at the start of a file that identify it (with its absolute path) for a resume."""
READ = 1 << 16
CHUNK = 250
"""Records the reading thread hands over at a time (fewer when it waits for more lines)."""
CHUNKS_AHEAD = 16
"""Chunks read ahead of the commits at most: the reader waits beyond that."""


@dataclass(frozen=True, slots=True)
class Mark:
    """Where the committed part of a followed file ends: the byte after its last record's
    line, the lines up to there, and the BLAKE2b of the file's first min(offset, HEAD) bytes
    (which must be the same for a resume)."""

    offset: int = 0
    lines: int = 0
    head: str = ""

    def encode(self) -> str:
        return msgspec.json.encode(
            {"offset": self.offset, "lines": self.lines, "head": self.head}
        ).decode()

    @classmethod
    def decode(cls, text: str) -> Mark:
        found = msgspec.json.decode(text)
        return cls(int(found["offset"]), int(found["lines"]), str(found["head"]))


def follow_key(path: Path) -> str:
    """The `meta` key of a followed file's `Mark`: its absolute path (symbolic links kept,
    so a link that is moved to a new file is a new file)."""
    return f"follow:{path.absolute()}"


def head_digest(head: bytes) -> str:
    return hashlib.blake2b(head, digest_size=16).hexdigest()


async def resume(db: Database, path: Path) -> tuple[Mark, str | None]:
    """Where to start reading `path`: after what an earlier follower committed of this same
    file, or at its start. The second value says why an earlier mark was not used."""
    stored = await PropertyRepository(db).meta_value(follow_key(path))
    if stored is None:
        return Mark(), None
    mark = Mark.decode(stored)
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        head = handle.read(min(mark.offset, HEAD))
    if size < mark.offset:
        why = (f"{path} is shorter ({size:,} bytes) than where the last follower of it stopped"
               f" ({mark.offset:,}): it is another file; reading it from the start")  # fmt: skip
        return Mark(), why
    if head_digest(head) != mark.head:
        why = (f"{path} does not start with the bytes the last follower of it read: it is"
               " another file; reading it from the start")  # fmt: skip
        return Mark(), why
    return mark, None


@dataclass(frozen=True, slots=True)
class Followed:
    """What `follow` reads: a file from `mark`, or standard input (`path` None) from where
    it stands; `kind` is "jsonl" or "csv" (None: told by the first line, standard input)."""

    path: Path | None
    mark: Mark = Mark()
    kind: str | None = None
    header: list[str] | None = None
    """A CSV's header, when reading starts after it (a resume)."""

    @property
    def name(self) -> str:
        return self.path.name if self.path is not None else "standard input"


class Tail:
    """Complete lines of a file as it grows (or of standard input as it comes), read in a
    thread. At the end of a file it waits for more, looking every POLL seconds; a last line
    without its newline waits for it. Standard input ends at its end (its last line then
    counts, newline or not)."""

    def __init__(self, fd: int, mark: Mark, head: bytes, stop: threading.Event, *,
                 stdin: bool, idle: Callable[[], None]) -> None:  # fmt: skip
        self.fd, self.stop, self.stdin, self.idle = fd, stop, stdin, idle
        self.offset = mark.offset
        """The byte after the last line handed out."""
        self.lines_read = mark.lines
        self.head = bytearray(head)
        """The first HEAD bytes of the file (what of them was read)."""
        self.ended = False
        """No line comes any more: stop was asked, or standard input ended."""
        self._position = mark.offset

    def lines(self) -> Iterator[bytes]:
        pending = b""
        while True:
            chunk = self._read()
            if chunk is None:
                if pending and self.stdin and not self.stop.is_set():  # its end: a last line
                    self.offset += len(pending)
                    self.lines_read += 1
                    yield pending
                self.ended = True
                return
            if not chunk:
                continue
            if len(self.head) < HEAD and self._position - len(chunk) == len(self.head):
                self.head += chunk[: HEAD - len(self.head)]
            parts = (pending + chunk).split(b"\n")
            pending = parts.pop()
            for part in parts:
                raw = part + b"\n"
                self.offset += len(raw)
                self.lines_read += 1
                yield raw

    def _read(self) -> bytes | None:
        """The next bytes; b"" after a wait that brought none; None when nothing more comes."""
        while not self.stop.is_set():
            if self.stdin:
                ready, _, _ = select.select([self.fd], [], [], POLL)
                if not ready:
                    self.idle()
                    return b""
                chunk = os.read(self.fd, READ)
                if not chunk:
                    return None
            else:
                chunk = os.pread(self.fd, READ, self._position)
                if not chunk:
                    if os.fstat(self.fd).st_size < self._position:
                        raise ValueError(
                            f"the file shrank below the {self._position:,} bytes already read"
                            " (truncated or rewritten in place); stopped"
                        )
                    self.idle()
                    self.stop.wait(POLL)
                    return b""
            self._position += len(chunk)
            return chunk
        return None


@dataclass(slots=True)
class Read:
    """A record (or reject) read, and where the file stands after it."""

    line: int
    item: PropertyDetail | Reject | Removal
    offset: int
    lines: int


@dataclass(slots=True)
class Totals:
    """What a follower has committed so far."""

    commits: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0
    started: float = field(default_factory=time.monotonic)
    recent: deque[tuple[float, int]] = field(default_factory=deque)
    """(time, records) of the commits of the last RATE_WINDOW seconds."""

    @property
    def records(self) -> int:
        return self.inserted + self.updated + self.unchanged

    def add(self, report: LoadReport) -> None:
        self.commits += 1
        self.inserted += report.inserted
        self.updated += report.updated
        self.unchanged += report.unchanged
        self.rejected += len(report.rejects)
        now = time.monotonic()
        self.recent.append((now, report.inserted + report.updated + report.unchanged))
        while self.recent and self.recent[0][0] < now - RATE_WINDOW:
            self.recent.popleft()

    def rate(self) -> float:
        """Records a second committed over the last RATE_WINDOW seconds."""
        now = time.monotonic()
        span = min(RATE_WINDOW, now - self.started)
        return sum(n for _, n in self.recent) / span if span > 0 else 0.0


RATE_WINDOW = 10.0

OnCommit = Callable[[LoadReport, Totals], None]
_DONE = None


async def follow(
    db: Database,
    followed: Followed,
    as_of: dt.date,
    stop: threading.Event,
    on_commit: OnCommit | None = None,
    blocks: MarketCache | None = None,
) -> Totals:
    """Read `followed` until `stop` is set (or standard input ends), committing as it goes
    (the stored models' training `blocks` kept between commits); return what was committed. Once `stop` is set, what was read is committed, then it
    returns. ValueError when the file cannot be read as its format (an unusable CSV header,
    a file that shrank), after committing what was read before it."""
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[list[Read] | BaseException | None] = asyncio.Queue()
    room = threading.Semaphore(CHUNKS_AHEAD)
    chunk: list[Read] = []
    abandoned = threading.Event()

    def send(message: list[Read] | BaseException | None) -> None:
        room.acquire()
        if not abandoned.is_set():
            loop.call_soon_threadsafe(inbox.put_nowait, message)

    def flush() -> None:
        nonlocal chunk
        if chunk:
            send(chunk)
            chunk = []

    stdin = followed.path is None
    fd = 0 if followed.path is None else os.open(followed.path, os.O_RDONLY)
    head = b""
    if not stdin and followed.mark.offset:
        head = os.pread(fd, min(followed.mark.offset, HEAD), 0)
    tail = Tail(fd, followed.mark, head, stop, stdin=stdin, idle=flush)
    reso = threading.Event()  # set before the first RESO row is handed over

    def header_read(header: list[str]) -> None:
        if readers.reso_header(header):
            reso.set()

    def read() -> None:
        try:
            items: Iterator[Item] = readers.read_lines(
                tail.lines(), followed.mark.lines + 1, as_of, name=followed.name,
                kind=followed.kind, header=followed.header, on_header=header_read,
            )  # fmt: skip
            for line, item in items:
                if tail.ended:  # a CSV row cut short by the stop: it waits for next time
                    break
                chunk.append(Read(line, item, tail.offset, tail.lines_read))
                if len(chunk) >= CHUNK:
                    flush()
            flush()
            send(_DONE)
        except BaseException as exc:  # handed to the event loop, which raises it
            flush()
            send(exc)

    feeds = LoadsRepository(db)
    feed = follow_key(followed.path) if followed.path else "follow:standard input"
    await feeds.name_feed(feed, "follow")
    reader = threading.Thread(target=read, name="propdata-follow", daemon=True)
    reader.start()
    totals = Totals()
    pending: deque[Read] = deque()
    waiting_since = 0.0
    failure: BaseException | None = None
    done = False
    try:
        while True:
            due = pending and (
                done
                or len(pending) >= COMMIT_RECORDS
                or time.monotonic() - waiting_since >= COMMIT_SECONDS
            )
            if due:
                await _commit(db, followed, tail, list(pending), as_of, totals, on_commit,
                              listing_feed=reso.is_set(), blocks=blocks)  # fmt: skip
                pending.clear()
                continue
            if done:
                break
            timeout = (waiting_since + COMMIT_SECONDS - time.monotonic()) if pending else None
            try:
                message = await asyncio.wait_for(inbox.get(), timeout)
            except TimeoutError:
                continue
            room.release()
            if message is _DONE or isinstance(message, BaseException):
                done = True
                if isinstance(message, BaseException):
                    failure = message
                continue
            if not pending:
                waiting_since = time.monotonic()
            pending.extend(message)
    finally:
        stop.set()
        abandoned.set()
        room.release(CHUNKS_AHEAD + 1)  # a reader waiting for room goes on, and sends nothing
        if not stdin:
            reader.join(timeout=5)  # it stops at its next look at the file
            os.close(fd)
    if failure is not None:
        raise failure  # the feed stays expected to load: its stall is worth an alert
    await feeds.forget_feed(feed)  # stopped on purpose, or its input ended
    return totals


async def _commit(
    db: Database,
    followed: Followed,
    tail: Tail,
    reads: list[Read],
    as_of: dt.date,
    totals: Totals,
    on_commit: OnCommit | None,
    *,
    listing_feed: bool,
    blocks: MarketCache | None,
) -> None:
    """Load `reads` through the pipeline, in transactions of at most TRANSACTION_RECORDS
    records that each hold an id once (a later line about the same id goes in the next one, so the
    lines apply in order), each with the mark of where it ends. `listing_feed`: RESO rows
    (`loader.load`)."""
    sources = []
    key = follow_key(followed.path) if followed.path is not None else None
    for batch in _batches(reads):
        last = batch[-1]
        meta = None
        if key is not None:
            head = bytes(tail.head[: min(last.offset, HEAD)])
            meta = {key: Mark(last.offset, last.lines, head_digest(head)).encode()}
        sources.append(pipeline.Source(
            followed.name, "import", [(r.line, r.item) for r in batch], len(batch),
            replace=False, meta=meta, listing_feed=listing_feed,
        ))  # fmt: skip
    # A stream refits with the day's first commit, never on the share of records changed:
    # a refit is a full rebuild (75 s at 1M), and a stream at 2,000 records a second would
    # cross the share every 50 s (docs/import.md, "Following a growing file").
    outcome = await pipeline.run(db, sources, as_of, refit_share=math.inf, blocks=blocks)
    for report in outcome.reports:
        totals.add(report)
        if on_commit is not None:
            on_commit(report, totals)


def _batches(reads: Sequence[Read]) -> Iterator[list[Read]]:
    batch: list[Read] = []
    ids: set[str] = set()
    for read in reads:
        record_id = read.item.id if isinstance(read.item, PropertyDetail | Removal) else None
        if len(batch) >= TRANSACTION_RECORDS or (record_id is not None and record_id in ids):
            yield batch
            batch, ids = [], set()
        batch.append(read)
        if record_id is not None:
            ids.add(record_id)
    if batch:
        yield batch

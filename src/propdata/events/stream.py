"""The event stream, `GET /v1/events/stream` (Server-Sent Events): each of the owner's events
as it is produced, oldest first.

One `StreamHub` per worker reads the log for all of the worker's open streams at once: every
POLL_INTERVAL seconds, only while a stream is open, one query for every owner's new events,
handed to each stream of their owner that wants them. An open stream costs no query of its
own but the catch-up when it opens (from `Last-Event-ID` or `since`), so a worker holds many
idle streams for about 34 KB each, its connection included (bench/idle_streams.py).

Bounds:
- an owner holds at most its plan's `event_streams` open at once, counted across every worker
  and host by leases in the limiter (embedded: the host's counters file; scale-out: Redis):
  one more is 429. Each stream's lease is renewed every LEASE / 3 seconds while it is open
  and given back when it ends, so a process that dies holds its slots LEASE seconds at most;
- a worker holds at most `most` streams (half its connections, PROPDATA_MAX_CONNECTIONS):
  one more is 503 with Retry-After, so streams never take the connections the API, /health
  and the portal answer on;
- a stream ends after `lifetime` seconds (24 hours; the client resumes with Last-Event-ID);
- its events wait in a queue of at most `queue` events (PROPDATA_STREAM_QUEUE): a reader so
  slow that it fills is cut off rather than buffered without limit;
- every RECHECK_EVERY seconds the keys of the open streams are looked up again: the streams
  of a revoked key, or of a disabled account, end.
When the server shuts down (kit/serving/shutdown.py), or the app stops, every stream ends.

    hub = StreamHub(EventRepository(db), keys, keepalive=15.0, queue=1000, limiter=limiter)
    await hub.start()
    sub = await hub.admit(Subscriber(owner, key.id, after), plan.event_streams)  # 429, 503
    ...
    await hub.close()
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from litestar import Request, get
from litestar.openapi import ResponseSpec
from litestar.params import HeaderParameter, QueryParameter
from litestar.response import ServerSentEvent, ServerSentEventMessage

from propdata.accounts.keys import KeyService
from propdata.accounts.middleware import STREAMED
from propdata.accounts.owners import owner_of
from propdata.accounts.schemas import ApiKey
from propdata.api.dependencies import Injected
from propdata.api.openapi import documented, errors
from propdata.api.params import token_query
from propdata.errors import InvalidParameter, RateLimitExceeded, ServiceUnavailable
from propdata.events import cursor
from propdata.events.repository import EventRepository, LoggedEvent
from propdata.events.schemas import LISTED_TYPES
from propdata.kit.db import StoreUnavailable
from propdata.kit.loops import task_health
from propdata.kit.ratelimit.base import Limiter
from propdata.kit.serving import shutdown

log = logging.getLogger("propdata")

POLL_INTERVAL = 0.5
"""Seconds between two reads of the log while any stream is open: an event reaches its
streams within about this of its commit."""
RECHECK_EVERY = 2.0
"""Seconds between two look-ups of the open streams' keys: a revoked key's (or a disabled
account's) streams end within this, and a tick."""
LEASE = 30.0
"""Seconds a stream's slot is held without a renewal (a process that died frees its streams'
slots within this)."""
LIFETIME = 86_400.0
"""Seconds a stream stays open at most; the client resumes with Last-Event-ID."""
RETRY_FULL = 5
"""Retry-After (seconds) of the 503 of a worker holding all the streams it may."""
READ_BATCH = 500
"""Events one query reads (the hub's, or a stream's catch-up); more are read in turns."""
KEEPALIVE = ServerSentEventMessage(data=None, comment="keep-alive")
"""The comment line sent when nothing else was for `keepalive` seconds."""

STREAM_TYPES = LISTED_TYPES
_ONE_TYPE = "(" + "|".join(name.replace(".", r"\.") for name in STREAM_TYPES) + ")"
_TYPES_PATTERN = f"^{_ONE_TYPE}(,{_ONE_TYPE})*$"


@dataclass(eq=False, slots=True)
class Subscriber:
    """One open stream: whose events it wants, the last one sent, those waiting."""

    owner: str
    key_id: str
    after: int
    """The owner's `sequence` of the last event sent (or skipped as not wanted)."""
    types: frozenset[str] = frozenset()
    search_id: str | None = None
    waiting: collections.deque[LoggedEvent] = field(default_factory=collections.deque)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    ended: str | None = None
    """Why the stream ends: 'slow', 'revoked', 'shutdown' (None while it runs)."""
    abort: Callable[[], None] | None = None
    """Drops the stream's connection at once, where the server offers it (a reader cut off
    for falling behind may have stopped reading: the bytes buffered for it would never go)."""
    holder: str = field(default_factory=lambda: secrets.token_hex(12))
    """The stream's name in its owner's leases."""
    limit: int = 0
    """The owner's open streams at most (its plan's), as when the stream was admitted."""
    admitted: float = 0.0
    """When (monotonic) the hub admitted it; None of its events flowed yet while `started`
    is False."""
    started: bool = False

    def wants(self, row: LoggedEvent) -> bool:
        return (
            (row.sequence or 0) > self.after
            and (not self.types or row.type in self.types)
            and (self.search_id is None or row.search_id == self.search_id)
        )

    def end(self, reason: str) -> None:
        if self.ended is None:
            self.ended = reason
        self.waiting.clear()
        self.ready.set()


class StreamHub:
    """The worker's open event streams and the one reader of the log that feeds them."""

    def __init__(
        self,
        repo: EventRepository,
        keys: KeyService,
        *,
        keepalive: float,
        queue: int,
        poll_interval: float = POLL_INTERVAL,
        recheck_every: float = RECHECK_EVERY,
        wait: Callable[[float], Awaitable[None]] | None = None,
        limiter: Limiter | None = None,
        most: int | None = None,
        lifetime: float = LIFETIME,
        lease: float = LEASE,
    ) -> None:
        """`wait(timeout)`: returns at the next "events" wake-up of any process, or after
        `timeout` (kit/wakeup); without it the hub wakes on `notify()` or polls.
        `limiter`: where owners' open streams are counted (None: nowhere, no bound);
        `most`: the streams this worker holds at most (None: no bound)."""
        self._waiter = wait
        self.limiter = limiter
        self.most = most
        self.lifetime = lifetime
        self.lease = lease
        self._admitted: set[Subscriber] = set()
        self._releasing: set[asyncio.Task[None]] = set()
        self._renewed = time.monotonic()
        self.repo = repo
        self.keys = keys
        self.keepalive = keepalive
        self.queue = queue
        self.poll_interval = poll_interval
        self.recheck_every = recheck_every
        self._by_owner: dict[str, set[Subscriber]] = {}
        self._position: int | None = None
        """The last event the hub has read (None while no stream is open)."""
        self._checked = time.monotonic()
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._unhook: Callable[[], None] | None = None
        self.closing = False
        self.reads = 0
        """Queries the hub has made for its streams (the tests count them)."""

    @property
    def open_streams(self) -> int:
        """The streams of this worker: those admitted, whether or not they started."""
        return len(self._admitted)

    async def admit(self, sub: Subscriber, limit: int) -> Subscriber:
        """Let a stream open: 503 when this worker holds `most` streams, 429 when its owner
        holds `limit` (its plan's) across every worker and host."""
        if self.closing:
            raise ServiceUnavailable(
                "The server is shutting down; reconnect with Last-Event-ID.",
                headers={"Retry-After": str(RETRY_FULL)},
            )
        if self.most is not None and len(self._admitted) >= self.most:
            raise ServiceUnavailable(
                f"This server holds as many event streams as it may ({self.most:,}); try"
                f" again in {RETRY_FULL} seconds (another server may have room).",
                headers={"Retry-After": str(RETRY_FULL)},
            )
        sub.limit, sub.admitted = limit, time.monotonic()
        if sum(1 for held in self._admitted if held.owner == sub.owner) >= limit:
            raise self._too_many(limit)  # this worker alone holds them all: no need to ask
        self._admitted.add(sub)  # counted from here: two at once never pass `most`
        try:
            if self.limiter is not None and not await self.limiter.hold(
                _slots(sub.owner), sub.holder, limit, self.lease
            ):
                raise self._too_many(limit)
        except BaseException:
            self._admitted.discard(sub)
            raise
        return sub

    def _too_many(self, limit: int) -> RateLimitExceeded:
        return RateLimitExceeded(
            f"At most {limit:,} event stream{'s' if limit != 1 else ''} of one account may be"
            f" open at once (its plan's limit); close one, or retry after {int(self.lease)}"
            " seconds.",
            headers={"Retry-After": str(int(self.lease))},
        )

    async def release(self, sub: Subscriber) -> None:
        """The stream ended (or never started): its place on the worker, and its lease."""
        if sub not in self._admitted:
            return
        self._admitted.discard(sub)
        if self.limiter is not None:
            # Given back on a task of its own: a stream whose client went is cancelled, and
            # so is every await of its own from then on (anyio's cancel scope).
            task = asyncio.get_running_loop().create_task(
                self.limiter.release(_slots(sub.owner), sub.holder)
            )
            self._releasing.add(task)
            task.add_done_callback(self._released)
            with contextlib.suppress(Exception):  # said by `_released`
                await asyncio.shield(task)

    def _released(self, task: asyncio.Task[None]) -> None:
        self._releasing.discard(task)
        if not task.cancelled() and task.exception() is not None:  # it runs out by itself
            log.warning("event stream: its slot was not given back (%s)", task.exception())

    async def renew(self) -> None:
        """Renew the leases of the open streams; a stream whose slot is gone (its lease ran
        out while the limiter was away, and another took it) ends. Streams admitted that
        never started (the client went before the answer) let go."""
        self._renewed = time.monotonic()
        for sub in list(self._admitted):
            if sub.ended is not None or sub not in self._admitted:  # gone meanwhile
                continue
            if not sub.started and self._renewed - sub.admitted > self.lease:
                await self.release(sub)
            elif self.limiter is not None and not await self.limiter.hold(
                _slots(sub.owner), sub.holder, sub.limit, self.lease
            ):
                sub.end("limit")
            await asyncio.sleep(0)  # requests between two renewals, not after them all

    name = "eventStream"
    """Its name among the worker's loops (`kit.loops`)."""

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run())
        self._unhook = shutdown.on_shutdown(self.end_all)

    def health(self) -> str:
        return task_health(self._task)

    async def stop(self) -> None:
        await self.close()

    async def close(self) -> None:
        self.end_all()
        if self._unhook is not None:
            self._unhook()
            self._unhook = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        # Slots being given back (shielded from the cancel above) are given back before the
        # hub is closed: the limiter may be closed right after, and a call then would open a
        # connection that nothing closes.
        await asyncio.gather(*self._releasing, return_exceptions=True)

    def end_all(self) -> None:
        """End every open stream and refuse new ones (the server is shutting down)."""
        self.closing = True
        for subs in list(self._by_owner.values()):
            for sub in list(subs):
                sub.end("shutdown")

    def subscribe(self, sub: Subscriber, start: int) -> int:
        """Hand `sub` every event read from here on, and return the last event read before
        (`start`, where the log stood when the stream was asked for, when the hub was
        idle): the stream reads up to there by itself. The two may overlap (the stream
        skips what it has sent) but leave no gap."""
        if self._position is None:
            self._position = start
        self._by_owner.setdefault(sub.owner, set()).add(sub)
        if self.closing:
            sub.end("shutdown")
        return self._position

    def unsubscribe(self, sub: Subscriber) -> None:
        subs = self._by_owner.get(sub.owner)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._by_owner[sub.owner]
        if not self._by_owner:
            self._position = None  # no stream: the hub reads nothing until the next one

    def notify(self) -> None:
        """Read the log now rather than at the next tick (this process produced events)."""
        self._wake.set()

    async def _next_tick(self) -> None:
        """Wait for new events: `notify()`, or POLL_INTERVAL seconds. The one place the hub
        waits (with `wait`, kit/wakeup's "events" topic)."""
        if self._waiter is not None and not self._wake.is_set():
            await self._waiter(self.poll_interval)
            self._wake.clear()
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.poll_interval):
                await self._wake.wait()
        self._wake.clear()

    async def _run(self) -> None:
        failing = False
        while True:
            await self._next_tick()
            if not self._admitted and not self._by_owner:
                continue
            try:
                if self._by_owner:
                    await self.read_once()
                    if time.monotonic() - self._checked >= self.recheck_every:
                        await self.recheck_keys()
                if self._admitted and time.monotonic() - self._renewed >= self.lease / 3:
                    await self.renew()
                failing = False
            except StoreUnavailable as exc:
                if not failing:  # once an outage (the store logs its own), not every tick
                    log.warning("event streams: the store is unavailable (%s); waiting", exc)
                failing = True
            except Exception:
                log.exception("event streams: reading the log failed; trying again")

    async def read_once(self) -> None:
        """Read every event past the hub's position and hand each to the streams that want it."""
        while self._position is not None:
            rows = await self.repo.listed_after(self._position, READ_BATCH)
            self.reads += 1
            for row in rows:
                for sub in list(self._by_owner.get(row.owner, ())):
                    if sub.ended is None and sub.wants(row):
                        self._hand(sub, row)
            if rows and self._position is not None:
                self._position = max(self._position, rows[-1].seq)
            if len(rows) < READ_BATCH:
                return

    def _hand(self, sub: Subscriber, row: LoggedEvent) -> None:
        if len(sub.waiting) >= self.queue:
            # A reader this far behind is cut off, not buffered without limit; it resumes
            # from the last event it read with Last-Event-ID.
            sub.end("slow")
            if sub.abort is not None:
                sub.abort()
            return
        sub.waiting.append(row)
        sub.ready.set()

    async def recheck_keys(self) -> None:
        """End the streams of keys that no longer answer (revoked, account disabled)."""
        self._checked = time.monotonic()
        subs = [sub for group in self._by_owner.values() for sub in group]
        if not subs:
            return
        active = await self.keys.active_among({sub.key_id for sub in subs})
        self.reads += 1
        for sub in subs:
            if sub.key_id not in active:
                sub.end("revoked")

    async def events(self, sub: Subscriber, start: int) -> AsyncIterator[ServerSentEventMessage]:
        """The stream's messages: the events past `sub.after`, then each new one as the hub
        reads it, a keep-alive comment when nothing was sent for `keepalive` seconds.
        `start`: where the log stood when the stream was asked for."""
        covered = self.subscribe(sub, start)
        sub.started = True
        ends = time.monotonic() + self.lifetime
        try:
            # What came before the hub's reads (it may have read past `start` meanwhile):
            # the owner's events past `sub.after` up to the hub's row, by the owner's index.
            while sub.ended is None:
                rows = await self.repo.page(
                    sub.owner, sub.after, READ_BATCH, sorted(sub.types), sub.search_id
                )
                for row in rows:
                    if sub.ended is not None:
                        return
                    sub.after = row.sequence or 0
                    yield _message(row)
                if len(rows) < READ_BATCH or rows[-1].seq >= covered:
                    break
            while sub.ended is None:
                while sub.waiting and sub.ended is None:
                    row = sub.waiting.popleft()
                    if (row.sequence or 0) > sub.after:
                        sub.after = row.sequence or 0
                        yield _message(row)
                if sub.ended is not None:
                    return
                left = ends - time.monotonic()
                if left <= 0:  # its day is over: the client resumes with Last-Event-ID
                    sub.end("lifetime")
                    return
                sub.ready.clear()
                try:
                    async with asyncio.timeout(min(self.keepalive, left)):
                        await sub.ready.wait()
                except TimeoutError:
                    if left > self.keepalive:
                        yield KEEPALIVE
        finally:
            self.unsubscribe(sub)
            await self.release(sub)


def _slots(owner: str) -> str:
    """The limiter's name of an owner's open streams."""
    return f"streams:{owner}"


def _message(row: LoggedEvent) -> ServerSentEventMessage:
    return ServerSentEventMessage(
        data=row.body, event=row.type, id=cursor.encode(row.sequence or 0)
    )


def _types(text: str | None) -> frozenset[str]:
    if text is None:
        return frozenset()
    names = [name.strip() for name in text.split(",")]
    unknown = [name for name in names if name not in STREAM_TYPES]
    if unknown:
        raise InvalidParameter(
            "types",
            f"'types' takes a comma-separated list of event types; {unknown[0]!r} is not one"
            f" ({', '.join(STREAM_TYPES)}).",
        )
    return frozenset(names)


_ERRORS = {
    status: spec
    for status, spec in errors(
        examples=[
            InvalidParameter(
                "Last-Event-ID",
                "'Last-Event-ID' is not an event cursor: pass meta.nextCursor (or an event's"
                " stream id) as it came.",
            ),
            RateLimitExceeded(
                "At most 5 event streams of one account may be open at once (its plan's"
                " limit); close one, or retry after 30 seconds."
            ),
            ServiceUnavailable(
                "This server holds as many event streams as it may (250); try again in 5"
                " seconds (another server may have room)."
            ),
        ]
    ).items()
    if status != 304  # no ETag: a stream is never the same twice
}


@get(
    "/events/stream",
    opt=STREAMED,
    media_type="text/event-stream",
    responses={
        200: ResponseSpec(
            str,
            description="A stream of Server-Sent Events: each event as `id: <cursor>`, `event:"
            " <type>`, `data: <event JSON>` and a blank line, oldest first; a comment line"
            " (`: keep-alive`) when nothing else was sent for 15 seconds.",
            media_type="text/event-stream",
            generate_examples=False,
        ),
        **_ERRORS,
    },
    **documented(
        "events",
        "The owner's events as they are produced (Server-Sent Events)",
        "streamEvents",
        headers=None,
    ),
)
async def stream_events(
    request: Request[Any, Any, Any],
    streams: Injected[StreamHub],
    key: Injected[ApiKey],
    since: Annotated[
        str | None,
        token_query(
            "Resume after this cursor (meta.nextCursor of GET /v1/events, or the"
            " id of an event of this stream); Last-Event-ID takes precedence. Without either"
            " the stream starts from where the log stands: only events produced from now on",
        ),
    ] = None,
    types: Annotated[
        str | None,
        QueryParameter(
            pattern=_TYPES_PATTERN,
            description="Only these event types, comma-separated (such as"
            " search.entered,property.listed)",
        ),
    ] = None,
    searchId: Annotated[
        str | None,
        token_query(
            "Only the events of this saved search",
        ),
    ] = None,
    last_event_id: Annotated[
        str | None,
        HeaderParameter(
            name="Last-Event-ID",
            description="The id of the last event read: the stream resumes after it (a"
            " reconnecting EventSource sends it by itself)",
        ),
    ] = None,
) -> ServerSentEvent:
    """Stream the events of the key's owner as Server-Sent Events, oldest first.

    Counted as one request when opened. An account holds its plan's open streams at most
    (Free 1, Developer 5, Pro 20, Enterprise 100: one more is 429), and a server half its
    connections (one more is 503 with Retry-After). Resume with `Last-Event-ID` (or `since`);
    the stream ends after 24 hours, when the server shuts down, when the key is revoked or
    its account disabled (within seconds), or when the reader falls more than
    PROPDATA_STREAM_QUEUE events behind: reconnect with the last id read.
    """
    if last_event_id is not None:
        place: cursor.Place | None = cursor.decode(last_event_id.strip(), "Last-Event-ID")
    elif since is not None:
        place = cursor.decode(since, "since")
    else:
        place = None
    wanted = _types(types)
    owner = owner_of(key)
    sub = Subscriber(owner, key.id, 0, wanted, searchId, abort=shutdown.aborter(request.scope))
    # Admitted first: a stream past the owner's limit costs no read of the log.
    await streams.admit(sub, (await streams.keys.plan_of(key)).event_streams)
    try:
        start = await streams.repo.last()
        newest = await streams.repo.last_sequence(owner)
        # A cursor past the owner's last event (none is ever handed out) resumes from there.
        sub.after = newest if place is None else min(await streams.repo.after(owner, place), newest)
    except BaseException:
        await streams.release(sub)
        raise
    return ServerSentEvent(streams.events(sub, start))


HANDLERS = [stream_events]

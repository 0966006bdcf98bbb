"""Wake-ups: one process tells the waiting ones that something happened ("changes", "data",
"events", "keys").

Three carriers, one interface: PostgreSQL's LISTEN/NOTIFY when the store is PostgreSQL, Redis
pub/sub when Redis is configured (and the store is not), else an `asyncio.Event` inside the
process. A notification only hurries a waiter: every wait also ends after `POLL` seconds at
most, so a lost notification (a listener reconnecting, a carrier down, a process the carrier
does not reach) delays the work by at most that, never loses it.

    wakeups = open_wakeups(db, redis_url)
    await wakeups.start()                        # listening, as a loop of the worker
    await wakeups.notify("events")               # after the commit that made them
    await wakeups.wait("events", timeout=5.0)    # returns at the notice, or within 1 s
    await wakeups.close()

Each carrier is also a `kit.loops.Loop` named "wakeups": its health says whether it hears
the other processes ("ok") or only polls ("failing: ...").

On PostgreSQL a notice can also be sent inside a transaction (`notify_in`), delivered with its
commit, and `heard` gives a marker of the notices a process heard: `PostgresDatabase.notices`
builds on it, which is what lets a process keep what a topic's writes change
(`accounts.keys.KeyService`, "keys"; `PropertyRepository.cache_namespace`, "data").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

from propdata.kit.db import Database, PostgresDatabase
from propdata.kit.loops import OK, STOPPED, task_health

if TYPE_CHECKING:
    import asyncpg

log = logging.getLogger("propdata")

POLL = 1.0
"""The longest any wait lasts: a waiter looks again at least this often."""
TOPICS = ("changes", "data", "events", "keys")
_CHANNEL = "propdata_"
"""Channel names: `propdata_<topic>` (PostgreSQL) and `propdata:<topic>` (Redis)."""


class Wakeups(Protocol):
    async def notify(self, topic: str) -> None:
        """Wake every waiter of `topic`, in every process the carrier reaches (never raises)."""
        ...

    async def wait(self, topic: str, timeout: float) -> None:  # noqa: ASYNC109 (the design's API)
        """Return at the next notice of `topic`, or after min(timeout, POLL) seconds."""
        ...

    def heard(self, topic: str) -> object | None:
        """A marker that moves with every notice of `topic` this process hears from any
        process, and at least every `POLL` seconds; None when this carrier cannot say (then
        nothing may be kept on its strength)."""
        ...

    async def close(self) -> None: ...

    name: str
    """Its name among the worker's loops (`kit.loops.Loop`)."""

    async def start(self) -> None:
        """Start listening for the other processes' notices."""
        ...

    async def stop(self) -> None: ...

    def health(self) -> str:
        """ "ok" while it hears the other processes, "failing: ..." while it only polls."""
        ...


async def notify_in(db: Database, topic: str) -> None:
    """Notify `topic` inside the caller's transaction on a PostgreSQL store, so the notice is
    delivered with the commit, never without it (nothing on SQLite: there a process sees a
    commit by the store's own marker, `Database.changes`)."""
    if isinstance(db, PostgresDatabase):
        await db.execute("SELECT pg_notify(?, '')", (_CHANNEL + topic,))


class LocalWakeups:
    """Inside one process: an event per topic, replaced each time it is set."""

    name = "wakeups"

    def __init__(self, poll: float = POLL) -> None:
        self.poll = poll
        self._events: dict[str, asyncio.Event] = {}
        self._running = False

    def _event(self, topic: str) -> asyncio.Event:
        event = self._events.get(topic)
        if event is None:
            event = self._events[topic] = asyncio.Event()
        return event

    def wake(self, topic: str) -> None:
        """Wake this process's waiters of `topic` (a carrier's listener calls it)."""
        event = self._events.pop(topic, None)
        if event is not None:
            event.set()

    async def notify(self, topic: str) -> None:
        self.wake(topic)

    async def wait(self, topic: str, timeout: float) -> None:  # noqa: ASYNC109 (the design's API)
        event = self._event(topic)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), max(0.0, min(timeout, self.poll)))

    def heard(self, topic: str) -> object | None:
        """None: other processes' notices do not reach this carrier, or not with their
        commit (Redis is told after it)."""
        return None

    async def close(self) -> None:
        self._running = False
        for topic in list(self._events):
            self.wake(topic)

    async def start(self) -> None:
        self._running = True

    async def stop(self) -> None:
        await self.close()

    def health(self) -> str:
        return OK if self._running else STOPPED


class PostgresWakeups(LocalWakeups):
    """LISTEN on a connection of its own; NOTIFY through the store's pool. The listening
    connection is opened on the first wait and opened again after it drops."""

    def __init__(self, db: PostgresDatabase, poll: float = POLL) -> None:
        super().__init__(poll)
        self.db = db
        db.heard = self.heard  # the store's `notices` are what this listener hears
        self._listener: asyncpg.Connection | None = None
        self._opening = asyncio.Lock()
        self._opener: asyncio.Task[None] | None = None
        self._retry_at = 0.0
        self._opened = 0
        """Listening connections opened: a notice sent while none listened was not heard."""
        self._notices: dict[str, int] = {}

    def _heard(self, _conn: Any, _pid: int, channel: str, _payload: str) -> None:
        topic = channel.removeprefix(_CHANNEL)
        self._notices[topic] = self._notices.get(topic, 0) + 1
        self.wake(topic)

    def heard(self, topic: str) -> object | None:
        """(listening connection, notices of `topic` it heard, POLL seconds passed): moves
        with each notice, with each new listening connection (what was sent before it may
        not have been heard) and each POLL seconds, for a connection lost without a word.
        None while no connection listens (one is being opened)."""
        if self._listener is None or self._listener.is_closed():
            loop = asyncio.get_running_loop()
            if (self._opener is None or self._opener.done()) and loop.time() >= self._retry_at:
                self._opener = loop.create_task(self._listen())
            return None
        return self._opened, self._notices.get(topic, 0), int(time.monotonic() / self.poll)

    async def _listen(self) -> None:
        if self._listener is not None and not self._listener.is_closed():
            return
        loop = asyncio.get_running_loop()
        if loop.time() < self._retry_at:
            return
        async with self._opening:
            if self._listener is not None and not self._listener.is_closed():
                return
            import asyncpg  # PostgreSQL stores only, as in kit.db.postgres

            conn: asyncpg.Connection | None = None
            try:
                conn = await asyncpg.connect(self.db.url, timeout=2)
                for topic in TOPICS:
                    await conn.add_listener(_CHANNEL + topic, self._heard)
            except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
                log.debug("wake-ups: cannot listen on PostgreSQL (%s); polling", exc)
                self._retry_at = loop.time() + POLL
                if conn is not None:
                    conn.terminate()
                return
            except BaseException:  # cancelled (the process stopping): leave no connection
                if conn is not None:
                    conn.terminate()
                raise
            self._listener = conn
            self._opened += 1

    async def notify(self, topic: str) -> None:
        self.wake(topic)
        try:
            await self.db.execute("SELECT pg_notify(?, '')", (_CHANNEL + topic,))
        except Exception as exc:  # a lost notice only delays the waiters (they poll)
            log.debug("wake-ups: NOTIFY failed (%s)", exc)

    async def wait(self, topic: str, timeout: float) -> None:  # noqa: ASYNC109 (the design's API)
        await self._listen()
        await super().wait(topic, timeout)

    async def start(self) -> None:
        await super().start()
        await self._listen()

    def health(self) -> str:
        if not self._running:
            return STOPPED
        if self._listener is None or self._listener.is_closed():
            return "failing: not listening on PostgreSQL (polling)"
        return OK

    async def close(self) -> None:
        await super().close()
        if self.db.heard == self.heard:
            self.db.heard = None
        if self._opener is not None:
            self._opener.cancel()
            with contextlib.suppress(BaseException):
                await self._opener
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.close(timeout=2)
            self._listener = None


class RedisWakeups(LocalWakeups):
    """PUBLISH to `propdata:<topic>`; one subscriber task per process, started on the first
    wait and started again when Redis drops it."""

    def __init__(self, url: str, poll: float = POLL) -> None:
        # Redis's client is loaded by the processes that use it only (6.5 MB of each).
        from propdata.kit import redis_link

        super().__init__(poll)
        self.url = url
        self._client = redis_link.connect(url)
        self._outage_errors = redis_link.OUTAGE_ERRORS
        self._reader: asyncio.Task[None] | None = None

    async def _read(self) -> None:
        import redis.asyncio as aioredis

        client: aioredis.Redis = aioredis.Redis.from_url(self.url, socket_connect_timeout=1)
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(*(f"propdata:{topic}" for topic in TOPICS))
            while True:
                message = await pubsub.get_message(timeout=POLL)
                if message is not None:
                    channel = message["channel"]
                    if isinstance(channel, bytes):
                        channel = channel.decode()
                    self.wake(str(channel).removeprefix("propdata:"))
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]
            with contextlib.suppress(Exception):
                await client.aclose()

    async def notify(self, topic: str) -> None:
        self.wake(topic)
        try:
            await self._client.publish(f"propdata:{topic}", "")
        except self._outage_errors as exc:
            log.debug("wake-ups: PUBLISH failed (%s)", exc)

    async def wait(self, topic: str, timeout: float) -> None:  # noqa: ASYNC109 (the design's API)
        if self._reader is None or self._reader.done():
            if self._reader is not None and not self._reader.cancelled():
                error = self._reader.exception()
                log.debug("wake-ups: the Redis subscriber stopped (%s); polling", error)
            self._reader = asyncio.create_task(self._read())
        await super().wait(topic, timeout)

    async def start(self) -> None:
        await super().start()
        if self._reader is None or self._reader.done():
            self._reader = asyncio.create_task(self._read())

    def health(self) -> str:
        return task_health(self._reader) if self._running else STOPPED

    async def close(self) -> None:
        await super().close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
        with contextlib.suppress(Exception):
            await self._client.aclose()


def open_wakeups(db: Database, redis_url: str | None) -> Wakeups:
    """The carrier that reaches every process of this service: the PostgreSQL store, else
    Redis, else this process alone."""
    if isinstance(db, PostgresDatabase):
        return PostgresWakeups(db)
    if redis_url:
        return RedisWakeups(redis_url)
    return LocalWakeups()

"""GET /v1/events/stream on a real server (`propdata serve`), on both stores, and the hub
that feeds every stream of a worker from one reader of the log."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from propdata.accounts.keys import CustomLimits, KeyService, keys_of
from propdata.accounts.owners import owner_of
from propdata.accounts.repository import AccountRepository
from propdata.accounts.schemas import Account, ApiKey
from propdata.config import accounts_url
from propdata.errors import RateLimitExceeded, ServiceUnavailable
from propdata.events import cursor
from propdata.events.repository import EventRepository, NewEvent
from propdata.events.stream import StreamHub, Subscriber
from propdata.kit.db import Database, connect
from propdata.kit.ratelimit.redis import RedisLimiter
from propdata.kit.ratelimit.sqlite import SQLiteLimiter
from propdata.kit.redis_link import connect as connect_redis
from propdata.migrations.schema import migrate_accounts
from tests.conftest import Store, drop_store, new_store
from tests.live import serving_process, until
from tests.test_error_messages import check

KEEPALIVE = 0.3
"""The servers' PROPDATA_STREAM_KEEPALIVE here, in seconds."""
QUEUE = 5
"""The servers' PROPDATA_STREAM_QUEUE here: events a stream holds for a reader behind."""
SERVER_ENV = {
    "PROPDATA_STREAM_KEEPALIVE": str(KEEPALIVE),
    "PROPDATA_STREAM_QUEUE": str(QUEUE),
    # A stream outlives the server's head and body timeouts by far.
    "PROPDATA_HEAD_TIMEOUT": "1",
    "PROPDATA_BODY_TIMEOUT": "1",
}
WAIT = 10.0
"""Seconds a test waits for what it expects before failing."""

_counter = iter(range(1, 1_000_000))


@pytest.fixture(scope="module")
def server(store: Store) -> Iterator[str]:
    with serving_process({**store.env(), **SERVER_ENV}) as (base, _):
        yield base


@pytest.fixture
async def accounts(store: Store) -> AsyncIterator[Database]:
    db = await connect(accounts_url(store.url), private=True)
    await migrate_accounts(db)
    yield db
    await db.close()


async def _key(store: Store) -> tuple[ApiKey, str]:
    async with keys_of(store.url) as keys:
        return await keys.create("enterprise", None, CustomLimits(per_minute=10_000))


def _event(
    owner: str, type_: str = "search.entered", search_id: str = "srch_a", pad: int = 0
) -> NewEvent:
    n = next(_counter)
    data = {"searchId": search_id, **({"pad": "x" * pad} if pad else {})}
    body = json.dumps({"id": f"evt_{n:026d}", "type": type_, "data": data})
    return NewEvent(f"evt_{n:026d}_{time.time_ns()}", owner, type_, search_id, None,
                    "2026-11-25T00:00:00.000Z", body)  # fmt: skip


async def _add(db: Database, *events: NewEvent) -> list[int]:
    """Append events; each one's `sequence` (its owner's)."""
    async with db.transaction():
        made = await EventRepository(db).insert_events(list(events))
    return [n.sequence or 0 for n in made]


class Reader:
    """An open stream's lines, parsed into events and comments as they arrive."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.lines = response.aiter_lines()
        self.comments: list[str] = []

    async def event(self) -> dict[str, str]:
        """The next event's fields (id, event, data)."""
        fields: dict[str, str] = {}
        async with asyncio.timeout(WAIT):
            async for line in self.lines:
                if line.startswith(":"):
                    self.comments.append(line)
                elif line == "":
                    if fields:
                        return fields
                else:
                    name, _, value = line.partition(": ")
                    fields[name] = value
        raise AssertionError(f"the stream ended: {fields}")

    async def comment(self) -> str:
        async with asyncio.timeout(WAIT):
            async for line in self.lines:
                if line.startswith(":"):
                    return line
                assert line == "", f"an event where none was expected: {line}"
        raise AssertionError("the stream ended")

    async def ended(self) -> bool:
        try:
            async with asyncio.timeout(WAIT):
                async for line in self.lines:
                    assert line.startswith(":") or line == "", line
        except httpx.RemoteProtocolError:
            pass  # closed mid-stream
        return True


def _as_stored(event: NewEvent, number: int) -> Any:
    """The event's body as the log keeps it: its number written in as `sequence`."""
    return json.loads(event.body) | {"sequence": number}


@contextlib.asynccontextmanager
async def stream(
    client: httpx.AsyncClient, secret: str, headers: dict[str, str] | None = None, **params: str
) -> AsyncIterator[Reader]:
    async with client.stream(
        "GET", "/v1/events/stream", params=params,
        headers={"Authorization": f"Bearer {secret}", **(headers or {})},
    ) as response:  # fmt: skip
        assert response.status_code == 200, await response.aread()
        yield Reader(response)


@pytest.fixture
async def client(server: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server, timeout=WAIT) as c:
        yield c


async def test_events_arrive_in_order_as_id_event_and_data(
    store: Store, client: httpx.AsyncClient, accounts: Database
) -> None:
    key, secret = await _key(store)
    owner = owner_of(key)
    await _add(accounts, _event(owner))  # before the stream: not sent
    async with stream(client, secret) as reader:
        assert reader.response.headers["content-type"].startswith("text/event-stream")
        assert reader.response.headers["cache-control"] == "no-cache"
        events = [_event(owner, "search.entered"), _event(owner, "property.listed"),
                  _event(owner, "property.priceChanged")]  # fmt: skip
        numbers = await _add(accounts, *events[:2])
        numbers += await _add(accounts, events[2])
        for number, made in zip(numbers, events, strict=True):
            got = await reader.event()
            assert (got["id"], got["event"]) == (cursor.encode(number), made.type)
            assert json.loads(got["data"]) == _as_stored(made, number)


async def test_resumes_after_last_event_id_or_since(
    store: Store, client: httpx.AsyncClient, accounts: Database
) -> None:
    key, secret = await _key(store)
    owner = owner_of(key)
    events = [_event(owner) for _ in range(5)]
    numbers = await _add(accounts, *events)
    async with stream(client, secret, since=cursor.encode(numbers[1])) as reader:
        got = [json.loads((await reader.event())["data"]) for _ in range(3)]
        assert got == [_as_stored(e, n) for e, n in zip(events[2:], numbers[2:], strict=True)]
    # The header wins over `since`: a reconnecting EventSource sends both.
    headers = {"Last-Event-ID": cursor.encode(numbers[3])}
    async with stream(client, secret, headers, since=cursor.encode(numbers[0])) as reader:
        assert (await reader.event())["id"] == cursor.encode(numbers[4])
        later = await _add(accounts, _event(owner))  # caught up, then live
        assert (await reader.event())["id"] == cursor.encode(later[0])


async def test_types_and_search_id_filter_and_other_owners_are_never_seen(
    store: Store, client: httpx.AsyncClient, accounts: Database
) -> None:
    key, secret = await _key(store)
    other, _ = await _key(store)
    owner = owner_of(key)
    events = [
        _event(owner, "search.entered", "srch_a"),
        _event(owner_of(other), "property.listed", "srch_b"),
        _event(owner, "property.listed", "srch_a"),
        _event(owner, "property.listed", "srch_b"),
        _event(owner, "search.exited", "srch_b"),
    ]
    numbers = await _add(accounts, *events)
    assert numbers[1:] == [1, numbers[0] + 1, numbers[0] + 2, numbers[0] + 3]  # each its own
    since = cursor.encode(numbers[0] - 1)
    async with stream(client, secret, since=since, types="property.listed") as reader:
        assert (await reader.event())["id"] == cursor.encode(numbers[2])
        assert (await reader.event())["id"] == cursor.encode(numbers[3])
    async with stream(client, secret, since=since, searchId="srch_b") as reader:
        assert (await reader.event())["id"] == cursor.encode(numbers[3])
        assert (await reader.event())["id"] == cursor.encode(numbers[4])
    async with stream(client, secret, since=since) as reader:
        seen = [json.loads((await reader.event())["data"])["id"] for _ in range(4)]
        assert seen == [json.loads(e.body)["id"] for i, e in enumerate(events) if i != 1]
        live = await _add(accounts, _event(owner_of(other)), _event(owner))
        assert (await reader.event())["id"] == cursor.encode(live[1])


async def test_an_idle_stream_gets_keep_alive_comments_past_the_server_timeouts(
    store: Store, client: httpx.AsyncClient
) -> None:
    _, secret = await _key(store)
    async with stream(client, secret) as reader:
        started = time.monotonic()
        while time.monotonic() - started < 2.5:  # past the 1 s head and body timeouts
            assert await reader.comment() == ": keep-alive"


@pytest.mark.parametrize(
    ("params", "headers", "parameter"),
    [
        ({"since": "nonsense"}, {}, "since"),
        ({}, {"Last-Event-ID": "e1:12"}, "Last-Event-ID"),
        ({"types": "search.entered,webhook.test"}, {}, "types"),
        ({"cursor": "x"}, {}, "cursor"),
        ({"since": "1.5"}, {}, "since"),
        ({"since": "a" * 101}, {}, "since"),
        ({"types": ""}, {}, "types"),
        ({"searchId": "a" * 101}, {}, "searchId"),
        ({"searchId": "srch a"}, {}, "searchId"),
        ({"since": "x", "since2": "y"}, {}, "since2"),
    ],
)
async def test_bad_input_is_a_400_naming_the_parameter_before_the_stream(
    store: Store,
    client: httpx.AsyncClient,
    params: dict[str, str],
    headers: dict[str, str],
    parameter: str,
) -> None:
    _, secret = await _key(store)
    answer = await client.get("/v1/events/stream", params=params,
                              headers={"Authorization": f"Bearer {secret}", **headers})  # fmt: skip
    assert answer.status_code == 400
    assert answer.headers["content-type"].startswith("application/json")
    error = answer.json()["error"]
    assert (error["code"], error["parameter"]) == ("invalid_parameter", parameter)
    assert parameter in error["message"]
    check(error["message"], str(answer.url))  # in the API's words


async def test_opening_a_stream_counts_one_request_and_is_never_cached(
    store: Store, client: httpx.AsyncClient, accounts: Database
) -> None:
    key, secret = await _key(store)
    async with stream(client, secret) as reader:
        remaining = int(reader.response.headers["x-ratelimit-remaining"])
        assert "etag" not in reader.response.headers
    assert remaining == key.per_minute - 1
    numbers = await _add(accounts, _event(owner_of(key)))
    async with stream(client, secret, since=cursor.encode(numbers[0] - 1)) as reader:
        assert (await reader.event())["id"] == cursor.encode(numbers[0])
        assert reader.response.headers["x-cache"] == "MISS"
        assert int(reader.response.headers["x-ratelimit-remaining"]) == key.per_minute - 2


async def test_a_reader_that_stops_reading_is_cut_off_and_resumes_with_last_event_id(
    store: Store, server: str, client: httpx.AsyncClient, accounts: Database
) -> None:
    key, secret = await _key(store)
    owner = owner_of(key)
    port = int(server.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2**24)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    writer.write(f"GET /v1/events/stream HTTP/1.1\r\nHost: x\r\n"
                 f"Authorization: Bearer {secret}\r\n\r\n".encode())  # fmt: skip
    assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
    transport = writer.transport
    transport.pause_reading()  # the reader stops reading
    numbers: list[int] = []
    for _ in range(8):  # 40 events of 256 KB: far more than the socket buffers hold
        numbers += await _add(accounts, *[_event(owner, pad=256_000) for _ in range(5)])
    await asyncio.sleep(2)  # the shared reader's ticks: the stream falls QUEUE behind
    transport.resume_reading()
    got: list[str] = []
    try:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            # what was sent before the cut drains through a 4 KB window: slow on a busy host
            async with asyncio.timeout(6 * WAIT):
                while line := await reader.readline():
                    if line.startswith(b"id: "):
                        got.append(line[4:].strip().decode())
                    elif line.startswith(b"data: ") and not line.endswith(b"}\n"):
                        got.pop()  # cut mid-event: not read whole
    finally:
        writer.close()
    assert len(got) < len(numbers)  # the server closed the connection (no timeout above)
    assert got == [cursor.encode(n) for n in numbers[: len(got)]]
    resume = {"Last-Event-ID": got[-1]} if got else {}
    params = {} if got else {"since": cursor.encode(numbers[0] - 1)}
    async with stream(client, secret, resume, **params) as again:
        rest = [(await again.event())["id"] for _ in numbers[len(got) :]]
    assert got + rest == [cursor.encode(n) for n in numbers]


def test_streams_end_when_the_server_shuts_down(store: Store) -> None:
    """uvicorn's graceful shutdown waits for every answer under way: an open stream ends."""

    async def watch(base: str) -> bool:
        _, secret = await _key(store)
        async with (
            httpx.AsyncClient(base_url=base, timeout=WAIT) as c,
            stream(c, secret) as reader,
        ):
            process.send_signal(signal.SIGTERM)
            return await reader.ended()

    with serving_process({**store.env(), **SERVER_ENV}) as (base, process):
        assert asyncio.run(watch(base))
        process.wait(WAIT)  # exits by itself, not killed at the fixture's end
        assert process.returncode is not None


# -- the hub, in process -------------------------------------------------------------------


async def _hub(db: Database, **options: Any) -> StreamHub:
    await migrate_accounts(db)
    hub = StreamHub(EventRepository(db), KeyService(db), keepalive=30.0,
                    **{"queue": 1000, "poll_interval": 0.05, **options})  # fmt: skip
    await hub.start()
    return hub


async def _collect(hub: StreamHub, sub: Subscriber, start: int, count: int) -> list[int]:
    got: list[int] = []
    async with asyncio.timeout(WAIT):
        async for message in hub.events(sub, start):
            got.append(cursor.decode(str(message.id), "id").number)
            if len(got) == count:
                break
    return got


async def _ended(sub: Subscriber) -> None:
    async with asyncio.timeout(WAIT):
        while sub.ended is None:
            sub.ready.clear()
            await sub.ready.wait()


async def test_many_streams_share_one_reader_of_the_log(empty_db: Database) -> None:
    hub = await _hub(empty_db)
    try:
        keys = KeyService(empty_db)
        key, _ = await keys.create("free", None, CustomLimits())
        start = await hub.repo.last()
        subs = [Subscriber(f"key:{key.id}", key.id, start) for _ in range(50)]
        tasks = [asyncio.create_task(_collect(hub, sub, start, 3)) for sub in subs]
        await until(lambda: all(sub.started for sub in subs), "every stream subscribed")
        reads_before = hub.reads
        numbers = await _add(empty_db, *[_event(f"key:{key.id}") for _ in range(3)])
        results = await asyncio.gather(*tasks)
        assert all(result == numbers for result in results)
        # One read of the log a tick for all 50 streams, not one each.
        assert hub.reads - reads_before < 50
    finally:
        await hub.close()


async def test_a_stream_gets_what_the_hub_read_between_its_request_and_its_start(
    empty_db: Database,
) -> None:
    hub = await _hub(empty_db)
    try:
        start = await hub.repo.last()  # the handler reads where the log stands...
        other = Subscriber("key:other", "k_other", start)
        hub.subscribe(other, start)  # (another stream keeps the hub reading)
        numbers = await _add(empty_db, _event("key:late"), _event("key:late"))
        await hub.read_once()  # the hub reads on (its own ticks may have, too)
        # ... and its stream starts after the hub has read on: it still gets both.
        late = Subscriber("key:late", "k_late", start)
        assert await _collect(hub, late, start, 2) == numbers
    finally:
        await hub.close()


async def test_a_reader_that_falls_behind_the_queue_is_cut_off(empty_db: Database) -> None:
    hub = await _hub(empty_db, queue=5)
    try:
        start = await hub.repo.last()
        slow = Subscriber("key:slow", "k_slow", start)
        hub.subscribe(slow, start)  # subscribed, never read
        await _add(empty_db, *[_event("key:slow") for _ in range(6)])
        await _ended(slow)
        assert slow.ended == "slow" and not slow.waiting  # what it held is let go
        async with asyncio.timeout(WAIT):
            assert [m async for m in hub.events(slow, start)] == []  # it ends at once
    finally:
        await hub.close()


async def test_a_revoked_keys_streams_end_and_others_go_on(empty_db: Database) -> None:
    hub = await _hub(empty_db, recheck_every=0.1)
    try:
        keys = KeyService(empty_db)
        gone, _ = await keys.create("free", None, CustomLimits())
        kept, _ = await keys.create("free", None, CustomLimits())
        start = await hub.repo.last()
        subs = {key.id: Subscriber(owner_of(key), key.id, start) for key in (gone, kept)}
        for sub in subs.values():
            hub.subscribe(sub, start)
        await keys.revoke(gone.id)
        await _ended(subs[gone.id])
        assert subs[gone.id].ended == "revoked" and subs[kept.id].ended is None
    finally:
        await hub.close()


async def test_closing_the_hub_ends_every_stream(empty_db: Database) -> None:
    hub = await _hub(empty_db)
    start = await hub.repo.last()
    sub = Subscriber("key:a", "k_a", start)
    task = asyncio.create_task(_collect(hub, sub, start, 1))
    await until(lambda: sub.started, "the stream subscribed")
    await hub.close()
    assert await asyncio.wait_for(task, WAIT) == []
    assert hub.open_streams == 0


@contextlib.asynccontextmanager
async def _shared_limiter(store: Store, tmp_path: Path) -> AsyncIterator[Any]:
    """The limiter every worker of a deployment counts in: the host's counters file
    embedded, Redis at scale-out."""
    limiter: Any
    if store.redis_url is None:
        limiter = SQLiteLimiter(str(tmp_path / "usage.db"))
    else:
        limiter = RedisLimiter(connect_redis(store.redis_url))
    try:
        yield limiter
    finally:
        await limiter.close()


@pytest.fixture
async def bare(backend: str, tmp_path: Path) -> AsyncIterator[tuple[Store, Database]]:
    made = await new_store(backend, tmp_path)
    db = await connect(accounts_url(made.url), private=True)
    await migrate_accounts(db)
    yield made, db
    await db.close()
    await drop_store(made)


async def test_an_owner_s_open_streams_are_bounded_across_workers_and_a_dead_one_frees_its_own(
    bare: tuple[Store, Database], tmp_path: Path
) -> None:
    store, db = bare
    owner = f"key:k{uuid.uuid4().hex[:8]}"
    async with _shared_limiter(store, tmp_path) as limiter:
        workers = [await _hub(db, limiter=limiter, lease=0.6) for _ in range(2)]
        try:
            held = [await workers[n % 2].admit(Subscriber(owner, "k", 0), 3) for n in range(3)]
            for worker in workers:
                with pytest.raises(RateLimitExceeded) as refused:
                    await worker.admit(Subscriber(owner, "k", 0), 3)
                assert "At most 3 event streams" in refused.value.message
                assert refused.value.headers["Retry-After"]
            other = await workers[1].admit(Subscriber("key:someone-else", "k2", 0), 1)
            await workers[0].release(held[0])  # a stream ends: its slot is free
            held[0] = await workers[1].admit(Subscriber(owner, "k", 0), 3)
            # worker 0 dies (its task ends, nothing more is renewed): its slot frees itself
            await workers[0].close()
            started = time.monotonic()

            async def admitted() -> bool:
                try:
                    await workers[1].admit(Subscriber(owner, "k", 0), 3)
                except RateLimitExceeded:
                    return False
                return True

            await until(admitted, "the dead worker's slot freed")
            assert time.monotonic() - started >= 0.3  # not before its lease ran out
            assert other.ended is None and held[0].ended is None  # renewed meanwhile
        finally:
            for worker in workers:
                await worker.close()


async def test_a_worker_holds_at_most_its_share_of_streams(empty_db: Database) -> None:
    hub = await _hub(empty_db, most=2)
    try:
        for n in range(2):
            await hub.admit(Subscriber(f"key:{n}", "k", 0), 100)
        with pytest.raises(ServiceUnavailable) as full:
            await hub.admit(Subscriber("key:9", "k", 0), 100)
        assert full.value.status == 503 and int(full.value.headers["Retry-After"]) > 0
    finally:
        await hub.close()


async def test_a_stream_ends_after_its_lifetime(empty_db: Database) -> None:
    hub = await _hub(empty_db, lifetime=0.3)
    try:
        sub = await hub.admit(Subscriber("key:a", "k_a", 0), 1)
        async with asyncio.timeout(WAIT):
            sent = [m async for m in hub.events(sub, 0)]
        assert sent == [] and sub.ended == "lifetime"
        assert hub.open_streams == 0
    finally:
        await hub.close()


async def test_a_disabled_account_s_streams_end_within_5_seconds(empty_db: Database) -> None:
    hub = await _hub(empty_db)  # the recheck as the server has it
    try:
        keys = KeyService(empty_db)
        accounts = AccountRepository(empty_db)
        await accounts.insert(Account("acct_off", "off@example.com", "x", "active", False, None,
                                      "2026-11-01T00:00:00Z"))  # fmt: skip
        key, _ = await keys.create("developer", None, CustomLimits(), account_id="acct_off")
        sub = await hub.admit(Subscriber(owner_of(key), key.id, 0), 5)
        task = asyncio.create_task(_collect(hub, sub, 0, 1))
        await until(lambda: sub.started, "the stream subscribed")
        await accounts.set_status("acct_off", "disabled")
        started = time.monotonic()
        assert await task == []
        assert sub.ended == "revoked" and time.monotonic() - started < 5
    finally:
        await hub.close()


async def _plan_key(store: Store, plan: str) -> str:
    async with keys_of(store.url) as keys:
        _, secret = await keys.create(plan, None, CustomLimits())
    return secret


@pytest.mark.slow
def test_open_streams_leave_health_the_api_and_the_portal_their_connections(store: Store) -> None:
    """A server of 20 connections a worker holds 10 streams at most (503 past them, for new
    streams only), a Free account 1 (429 naming the limit); /health, the API and the portal
    answer all the while."""

    async def check(base: str) -> None:
        free, big = await _plan_key(store, "free"), (await _key(store))[1]
        async with (
            httpx.AsyncClient(base_url=base, timeout=WAIT) as c,
            contextlib.AsyncExitStack() as held,
        ):
            await held.enter_async_context(stream(c, free))
            refused = await c.get("/v1/events/stream", headers={"Authorization": f"Bearer {free}"})
            assert refused.status_code == 429, refused.text
            error = refused.json()["error"]
            assert (
                error["code"] == "rate_limit_exceeded"
                and "At most 1 event stream" in error["message"]
            )
            for _ in range(9):
                await held.enter_async_context(stream(c, big))
            full = await c.get("/v1/events/stream", headers={"Authorization": f"Bearer {big}"})
            assert full.status_code == 503 and int(full.headers["Retry-After"]) > 0, full.text
            assert full.json()["error"]["code"] == "service_unavailable"
            for path, headers in (
                ("/health", {}),
                ("/v1/properties/t-000", {"Authorization": f"Bearer {big}"}),
                ("/", {"Accept": "text/html"}),
                ("/v1/events", {"Authorization": f"Bearer {big}"}),
            ):
                answer = await c.get(path, headers=headers)
                assert answer.status_code == 200, (path, answer.text[:300])

    env = {**store.env(), **SERVER_ENV, "PROPDATA_MAX_CONNECTIONS": "20"}
    with serving_process(env) as (base, _):
        asyncio.run(check(base))


@pytest.mark.slow
def test_an_account_s_streams_are_counted_across_servers(store: Store) -> None:
    """Two servers of one deployment (one host's files embedded, one Redis at scale-out):
    a Free account's one stream on either leaves no room on the other until it closes."""

    async def check(first: str, second: str) -> None:
        free = await _plan_key(store, "free")
        headers = {"Authorization": f"Bearer {free}"}
        async with httpx.AsyncClient(timeout=WAIT) as c:
            async with stream(httpx.AsyncClient(base_url=first, timeout=WAIT), free):
                refused = await c.get(second + "/v1/events/stream", headers=headers)
                assert refused.status_code == 429, refused.text

            async def opened() -> bool:
                async with c.stream("GET", second + "/v1/events/stream", headers=headers) as r:
                    return r.status_code == 200

            # The first server lets go of the slot as the stream closes.
            await until(opened, "a stream on the second server")

    env = {**store.env(), **SERVER_ENV}
    with serving_process(env) as (first, _), serving_process(env) as (second, _):
        asyncio.run(check(first, second))

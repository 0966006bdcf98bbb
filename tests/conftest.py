"""Fixtures: apps built against real stores, in both configurations.

`embedded`: SQLite files in a temp folder, the embedded limiter and cache.
`scaleout`: PostgreSQL (a fresh schema per store in the `test` database) and Redis.
PROPDATA_TEST_BACKENDS picks them (default both). A scale-out server that cannot be reached
fails the run when CI is set, and skips the scale-out cases otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from litestar.testing import AsyncTestClient

from propdata.accounts.keys import CustomLimits, keys_of
from propdata.app import HeadAsGet, create_app
from propdata.config import Settings
from propdata.ingest.loader import load
from propdata.kit import redis_link
from propdata.kit.db import Database, SQLiteDatabase, connect
from propdata.migrations.schema import migrate
from tests.factories import AS_OF, catalogue

KeyMaker = Callable[..., Awaitable[str]]
BACKENDS = [
    b for b in os.environ.get("PROPDATA_TEST_BACKENDS", "embedded,scaleout").split(",") if b
]
PG_URL = os.environ.get("PROPDATA_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("PROPDATA_TEST_REDIS", "redis://127.0.0.1:6379/0")


class FakeClock:
    """Unix seconds that only move when a test moves them."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass(frozen=True)
class Store:
    """Where one test store lives: its database URL, its Redis (scale-out) and a folder."""

    backend: str
    url: str
    redis_url: str | None
    folder: Path
    schema: str | None = None

    def env(self) -> dict[str, str]:
        """The PROPDATA_* variables a server process needs to use this store."""
        env = {"PROPDATA_DATABASE_URL": self.url}
        if self.redis_url:
            env["PROPDATA_REDIS_URL"] = self.redis_url
        if self.schema is not None:
            env["PROPDATA_INDEX_DIR"] = str(self.index_dir)
        return env

    @property
    def index_dir(self) -> Path:
        """Where servers of this store keep search index snapshots: embedded, the default
        beside the data file; scale-out, the store's folder (not var/ of the checkout)."""
        if self.schema is None:
            return self.folder / "propdata-index"
        return self.folder / "index"


def unreachable(what: str, exc: BaseException) -> None:
    message = f"{what} is unreachable ({exc}); the scale-out tests need it"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


async def postgres() -> asyncpg.Connection:
    """A connection to the tests' PostgreSQL server (unreachable: skipped, or failed in CI)."""
    try:
        return await asyncpg.connect(PG_URL, timeout=5)
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        unreachable("PostgreSQL at " + PG_URL, exc)
        raise


async def new_store(backend: str, folder: Path) -> Store:
    if backend == "embedded":
        return Store(backend, str(folder / "propdata.db"), None, folder)
    schema = "t_" + uuid.uuid4().hex[:12]
    conn = await postgres()
    await conn.execute(f"CREATE SCHEMA {schema}")
    await conn.close()
    try:
        import redis.asyncio as aioredis

        client = aioredis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
        await client.ping()
        await client.aclose()
    except (OSError, ConnectionError, TimeoutError) as exc:
        unreachable("Redis at " + REDIS_URL, exc)
    except Exception as exc:  # redis-py raises its own ConnectionError type
        unreachable("Redis at " + REDIS_URL, exc)
    return Store(backend, f"{PG_URL}?search_path={schema}", REDIS_URL, folder, schema)


async def drop_store(store: Store) -> None:
    if store.schema is None:
        return
    conn = await asyncpg.connect(PG_URL, timeout=5)
    await conn.execute(f"DROP SCHEMA IF EXISTS {store.schema} CASCADE")
    await conn.close()


async def open_db(store: Store) -> Database:
    db = await connect(store.url)
    await migrate(db)
    return db


@contextlib.asynccontextmanager
async def scratch_db(
    backend: str, folder: Path, opener: Callable[[Store], Awaitable[Database]] = open_db
) -> AsyncIterator[Database]:
    """A database of a new store of `backend` in `folder` as `opener` opens it (migrated, by
    default); closed and the store dropped at the end."""
    store = await new_store(backend, folder)
    try:
        db = await opener(store)
        try:
            yield db
        finally:
            await db.close()
    finally:
        await drop_store(store)


async def build_store(store: Store, records: list[Any] | None = None) -> None:
    """Load the test catalogue (or `records`) and compute its market statistics.

    Not the whole of ingest.pipeline: the catalogue carries its own value and rent
    estimates, which the endpoint tests check on the wire, and the pipeline's valuation
    rebuild would replace them (tests/valuation covers the rebuild). So the store is
    declared rebuilt by hand, as the pipeline would after both rebuilds.
    """
    db = await open_db(store)
    items = records if records is not None else catalogue()
    report = await load(db, enumerate(items, 1), origin="import", as_of=AS_OF)
    assert not report.rejects, report.rejects
    from propdata.markets.builder import rebuild
    from propdata.properties.repository import PropertyRepository

    await rebuild(db, AS_OF)
    properties = PropertyRepository(db)
    await properties.clear_rebuild_pending(str(await properties.rebuild_pending()))
    await db.close()


async def create_key(store: Store, plan: str = "enterprise", **limits: int) -> str:
    async with keys_of(store.url) as keys:
        _, secret = await keys.create(plan, None, CustomLimits(**limits))
    return secret


def settings_for(store: Store, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"database_url": store.url, "redis_url": store.redis_url,
                              "as_of": dt.date(2026, 11, 21)}  # fmt: skip
    if store.schema is not None:
        values["index_dir"] = str(store.index_dir)
    values.update(overrides)
    return Settings(**values)


@pytest.fixture(scope="session", autouse=True)
def patient_redis() -> Iterator[None]:
    """Redis clients made in the tests' processes wait up to 5 s for an answer, not the
    service's half second (`kit.redis_link`). The suite keeps this machine's two cores busy,
    and Redis on loopback answering in 0.6 s there is no outage: sent to the per-process
    fallback, a request is counted apart from Redis's and the exact limits the tests hold give
    way. Outages are tested by stopping the server, which refuses at once whatever the wait."""
    patch = pytest.MonkeyPatch()
    patch.setattr(redis_link, "SOCKET_TIMEOUT", 5.0)
    patch.setattr(redis_link, "CONNECT_TIMEOUT", 5.0)
    yield
    patch.undo()


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
async def store(backend: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Store]:
    """A store with the test catalogue and its market statistics, shared read-only."""
    made = await new_store(backend, tmp_path_factory.mktemp(f"store-{backend}"))
    await build_store(made)
    yield made
    await drop_store(made)


@pytest.fixture(scope="session")
async def make_key(store: Store) -> KeyMaker:
    async def make(plan: str = "enterprise", **limits: int) -> str:
        return await create_key(store, plan, **limits)

    return make


@pytest.fixture(scope="session")
async def client(store: Store) -> AsyncIterator[AsyncTestClient[Any]]:
    """A client of the app over the shared store, with the response cache off."""
    app = HeadAsGet(create_app(settings_for(store, cache_ttl=0)))
    async with AsyncTestClient(app=app) as c:  # type: ignore[arg-type]
        yield c


@pytest.fixture(scope="session")
async def key(make_key: KeyMaker) -> str:
    """An enterprise key with room for every read test."""
    return await make_key("enterprise", per_minute=1_000_000, daily=10_000_000)


@pytest.fixture
def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


class Fresh:
    """A new store per test; `await fresh(cache_ttl=60)` opens an app on it with a fake clock."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.clients: list[AsyncTestClient[Any]] = []
        self.apps: list[HeadAsGet] = []

    async def __call__(self, **overrides: Any) -> tuple[AsyncTestClient[Any], FakeClock, KeyMaker]:
        clock = FakeClock()
        app = HeadAsGet(create_app(settings_for(self.store, **overrides), clock=clock))
        self.apps.append(app)
        c = AsyncTestClient(app=app)  # type: ignore[arg-type]
        await c.__aenter__()
        self.clients.append(c)

        async def make(plan: str = "enterprise", **limits: int) -> str:
            return await create_key(self.store, plan, **limits)

        return c, clock, make

    async def keyed(
        self, plan: str = "enterprise", **overrides: Any
    ) -> tuple[AsyncTestClient[Any], dict[str, str]]:
        """An app opened as by `fresh(**overrides)` (its clock left alone), and the headers of
        a new key of `plan`."""
        client, _, make = await self(**overrides)
        return client, {"Authorization": f"Bearer {await make(plan)}"}

    async def db(self) -> Database:
        return await open_db(self.store)


@pytest.fixture
async def fresh(backend: str, tmp_path: Path) -> AsyncIterator[Fresh]:
    made = await new_store(backend, tmp_path)
    await build_store(made)
    opener = Fresh(made)
    yield opener
    for c in opener.clients:
        await c.__aexit__(None, None, None)
    await drop_store(made)


@pytest.fixture
async def fresh_db(tmp_path: Path) -> AsyncIterator[SQLiteDatabase]:
    """An empty, migrated SQLite store of the test's own (the embedded configuration only)."""
    db = SQLiteDatabase(str(tmp_path / "t.db"))
    await migrate(db)
    yield db
    await db.close()


@pytest.fixture
async def empty_db(backend: str, tmp_path: Path) -> AsyncIterator[Database]:
    """An empty, migrated store of each configuration (SQLite; PostgreSQL when reachable)."""
    async with scratch_db(backend, tmp_path) as db:
        yield db


def run(coro: Awaitable[Any]) -> Any:
    """Run a coroutine from a synchronous test (server-process tests)."""
    return asyncio.run(coro)  # type: ignore[arg-type]


@pytest.fixture
def spinning() -> Iterator[None]:
    """A CPU-spinning process pinned to each core of the machine, for the test's length."""
    spin = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True: pass"
    cores = sorted(os.sched_getaffinity(0))
    children = [subprocess.Popen([sys.executable, "-c", spin, str(c)]) for c in cores]
    time.sleep(0.3)
    try:
        yield
    finally:
        for child in children:
            child.kill()
            child.wait()

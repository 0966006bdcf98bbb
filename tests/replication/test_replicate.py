"""`data replicate` against a real OData 4 server (SAP CAP from npm), on both stores:
nextLink paging and timestamp paging, edits, closings, deletes, unchanged records, the
filter, kill -9 in mid-pass, two replicators, 429 and 401 (a small fault-injecting
transport in front of the real server), and secrets kept out of what is stored and said."""

from __future__ import annotations

import datetime as dt
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from propdata.kit.db import Database
from propdata.properties.repository import PropertyRepository
from propdata.replication.client import FeedError
from propdata.replication.repository import LeaseHeld, SourceRepository
from propdata.replication.schemas import Auth, SourceConfig
from propdata.replication.service import PassTotals, Replicator, SourceService, describe
from tests.conftest import Store, drop_store, new_store, open_db
from tests.events.test_produce import Stores, kinds
from tests.live import until
from tests.operations.test_deploy import PER_SOURCE, alert_names, dashboard_names
from tests.replication.odata_server import ODataServer, serving

AS_OF = dt.date(2024, 6, 1)
START = dt.datetime(2024, 5, 20, tzinfo=dt.UTC)
SECRET = "client-secret-that-must-never-show"


def stamp(minutes: float) -> str:
    return (START + dt.timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def listings(count: int) -> list[dict[str, Any]]:
    """`count` RESO listings; pairs share a timestamp (the key orders them); one has a ZIP
    code no record can have (a reject), one is in another city (the filter's test)."""
    rows = []
    for i in range(1, count + 1):
        rows.append({
            "ListingKey": f"L{i:03d}", "ModificationTimestamp": stamp(i // 2),
            "StandardStatus": "Active", "PropertyType": "Residential",
            "PropertySubType": "SingleFamilyResidence", "StreetNumber": str(i),
            "StreetName": "Main", "StreetSuffix": "St", "City": "Ames",
            "StateOrProvince": "IA", "PostalCode": "50010" if i % 2 else "50014",
            "ListPrice": 100_000 + i * 1_000, "DaysOnMarket": 5, "BedroomsTotal": 3,
            "BathroomsTotalInteger": 2, "LivingArea": 1500, "LotSizeArea": 0.2,
            "LotSizeUnits": "Acres", "YearBuilt": 1990, "Latitude": 42.0 + i / 1000,
            "Longitude": -93.6,
        })  # fmt: skip
    rows[6]["PostalCode"] = "ABCDE"  # L007: a reject
    rows[8]["City"] = "Nevada"  # L009: outside the filter
    return rows


COUNT = 24


@pytest.fixture(params=[3, 1_000], ids=["nextLink", "timestamp-paging"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ODataServer]:
    """max_page 3 < the page size 5: the server pages by nextLink; 1,000: it gives no
    nextLink and the client pages by timestamp and key."""
    with serving(tmp_path, listings(COUNT), max_page=request.param) as running:
        yield running


@pytest.fixture
async def db(empty_db: Database) -> AsyncIterator[Database]:
    yield empty_db


async def add(db: Database, url: str, **options: Any) -> None:
    """A source of `url`: "mls", 5 records a page, 100 requests a second and 600 s of
    overlap, unless `options` say otherwise."""
    config = {"name": "mls", "page_size": 5, "requests_per_hour": 360_000, "overlap": 600}
    await SourceService(db).add(SourceConfig(url=url, **(config | options)))


async def replicate(db: Database, transport: httpx.AsyncBaseTransport | None = None,
                    env: dict[str, str] | None = None) -> PassTotals:  # fmt: skip
    totals = PassTotals()
    replicator = Replicator(db, "mls", env or {}, lambda: AS_OF, transport)
    assert await replicator.run_pass(totals) is True
    return totals


async def feed(db: Database) -> list[tuple[str, str]]:
    rows = await db.fetch_all("SELECT property_id, change_type FROM property_changes ORDER BY seq")
    return [(str(r[0]), str(r[1])) for r in rows]


async def ids(db: Database) -> list[str]:
    return [str(r[0]) for r in await db.fetch_all("SELECT id FROM properties ORDER BY id")]


async def test_a_pass_then_edits_closings_deletes_and_no_change(
    db: Database, server: ODataServer
) -> None:
    await add(db, server.url)
    first = await replicate(db)
    assert (first.read, first.inserted, first.rejected) == (COUNT, COUNT - 1, 1)
    assert first.pages >= COUNT // 5
    assert len(await ids(db)) == COUNT - 1 and "mls-L007" not in await ids(db)
    source = await SourceService(db).get("mls")
    assert (source.records, source.rejects, source.state) == (COUNT - 1, 1, "caught up")
    assert source.watermark.timestamp is not None
    assert source.watermark.timestamp.startswith(stamp(COUNT // 2)[:16])
    assert source.watermark.key == f"L{COUNT:03d}"
    changes = await feed(db)

    again = await replicate(db)  # the overlap re-reads the last 10 minutes: no change
    assert again.inserted == again.updated == again.removed == again.rejected == 0
    assert again.unchanged > 0
    assert await feed(db) == changes
    assert (await SourceService(db).get("mls")).records == COUNT - 1

    later = stamp(COUNT)
    server.patch("L002", ListPrice=95_000, ModificationTimestamp=later)
    # listed on 2024-05-27 (5 days before the as-of date), closed 4 days later
    server.patch("L003", StandardStatus="Closed", CloseDate="2024-05-31", ClosePrice=120_000,
                 DaysOnMarket=4, ModificationTimestamp=later)  # fmt: skip
    # the same, as feeds count it: DaysOnMarket to the contract dates the listing 2024-05-29
    server.patch("L005", StandardStatus="Closed", CloseDate="2024-05-31", ClosePrice=118_000,
                 DaysOnMarket=2, ModificationTimestamp=later)  # fmt: skip
    server.patch("L004", StandardStatus="Delete", ModificationTimestamp=later)
    server.patch("L006", MlgCanView=False, ModificationTimestamp=later)  # MLS Grid's removal
    edits = await replicate(db)
    assert (edits.updated, edits.removed, edits.rejected) == (3, 2, 0), edits.rejects
    assert "mls-L004" not in await ids(db) and "mls-L006" not in await ids(db)
    assert {("mls-L004", "removed"), ("mls-L006", "removed")} <= set(
        (await feed(db))[len(changes) :]
    )
    row = await db.fetch_one("SELECT status, list_price FROM properties WHERE id = 'mls-L002'")
    assert row is not None and (row[0], row[1]) == ("forSale", 95_000)
    sold = await db.fetch_one(
        "SELECT status, last_sale_price, last_sale_date FROM properties WHERE id = 'mls-L003'"
    )
    assert sold is not None and tuple(sold) == ("recentlySold", 120_000, "2024-05-31")
    kept = await db.fetch_one(
        "SELECT status, listing_date, days_on_market FROM properties WHERE id = 'mls-L005'"
    )
    assert kept is not None and tuple(kept) == ("recentlySold", "2024-05-27", 4)
    source = await SourceService(db).get("mls")
    assert (source.records, source.removed, source.rejects) == (COUNT + 2, 2, 1)


async def test_the_filter_is_anded_into_every_request(db: Database, server: ODataServer) -> None:
    await add(db, server.url, filter="City eq 'Ames' or City eq 'Boone'")
    totals = await replicate(db)
    assert totals.read == COUNT - 1  # not L009 (Nevada), though "or" binds looser than "and"
    assert "mls-L009" not in await ids(db)


async def test_a_page_of_several_transactions_is_one_pipeline_run(
    db: Database, tmp_path: Path
) -> None:
    """A page of 300 records is two transactions (each with its watermark) finished by one
    run of the estimates and statistics, and the rejects of both reach the rejects file
    (`on_page`)."""
    rows = listings(300)
    rows[289]["PostalCode"] = "ABCDE"  # L290, in the page's second transaction
    with serving(tmp_path, rows, max_page=1_000) as upstream:
        config = SourceConfig(name="mls", url=upstream.url, page_size=1_000,
                              requests_per_hour=360_000)  # fmt: skip
        await SourceService(db).add(config)
        properties = PropertyRepository(db)
        before = await properties.data_version()
        rejected: list[str | None] = []
        totals = PassTotals()
        replicator = Replicator(db, "mls", {}, lambda: AS_OF)
        assert await replicator.run_pass(totals, lambda t: rejected.extend(r.id for r in t.rejects))
    assert (totals.pages, totals.read, totals.inserted, totals.rejected) == (1, 300, 298, 2)
    assert sorted(map(str, rejected)) == ["mls-L007", "mls-L290"]
    # each load bumps the data version, and one run's rebuild twice (estimates, statistics):
    # 2 + 2; a run a transaction would be 2 + 2 * 2
    assert await properties.data_version() == before + 4
    source = await SourceService(db).get("mls")
    assert (source.records, source.rejects, source.watermark.key) == (298, 2, "L300")


class Faults(httpx.AsyncBaseTransport):
    """In front of the real server: a token URL, 401 for a token it no longer takes, one 429
    with Retry-After. Everything else goes to the server."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.tokens = 0
        self.valid: str | None = None
        self.data_requests = 0
        self.secrets_seen: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/token":
            form = dict(x.split("=", 1) for x in (await request.aread()).decode().split("&"))
            self.secrets_seen.append(form["client_secret"])
            self.tokens += 1
            self.valid = f"tok{self.tokens}"
            return httpx.Response(200, json={"access_token": self.valid, "expires_in": 3600})
        self.data_requests += 1
        if self.data_requests == 2:
            return httpx.Response(429, headers={"Retry-After": "1"})
        if self.data_requests == 3:
            self.valid = None  # the feed revoked the token: the next request is a 401
        if request.headers.get("authorization") != f"Bearer {self.valid}":
            return httpx.Response(401)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_429_waits_and_a_401_renews_the_token_once(
    db: Database, server: ODataServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    auth = Auth(kind="oauth", token_url=server.base + "/token", client_id="propdata",
                secret_env="FEED_SECRET")  # fmt: skip
    await add(db, server.url, auth=auth)
    faults = Faults()
    started = time.monotonic()
    totals = await replicate(db, faults, {"FEED_SECRET": SECRET})
    assert time.monotonic() - started >= 1.0  # the Retry-After was honoured
    assert totals.inserted == COUNT - 1
    assert faults.tokens == 2 and faults.secrets_seen == [SECRET, SECRET]
    source = await SourceService(db).get("mls")
    assert source.requests.get("429") == 1 and source.requests.get("401") == 1
    stored = await db.fetch_all("SELECT * FROM replication_sources")
    said = str(stored) + str(describe(source)) + caplog.text
    assert SECRET not in said and "FEED_SECRET" in str(describe(source))


async def test_a_second_401_fails_the_pass_naming_the_source(
    db: Database, server: ODataServer
) -> None:
    class Refusing(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            if request.url.path == "/token":
                return httpx.Response(200, json={"access_token": "t", "expires_in": 3600})
            return httpx.Response(401)

    auth = Auth(kind="oauth", token_url=server.base + "/token", client_id="c",
                secret_env="FEED_SECRET")  # fmt: skip
    await add(db, server.url, auth=auth)
    with pytest.raises(FeedError, match=r"source mls: .* answered 401") as caught:
        await replicate(db, Refusing(), {"FEED_SECRET": SECRET})
    assert SECRET not in str(caught.value)
    source = await SourceService(db).get("mls")
    assert source.state == "failed" and source.error is not None and "401" in source.error


async def test_two_replicators_of_one_source_never_run_at_once(
    db: Database, server: ODataServer
) -> None:
    await add(db, server.url)
    async with SourceRepository(db).lease("mls"):
        with pytest.raises(LeaseHeld):
            await replicate(db)
    assert await ids(db) == []
    await replicate(db)  # once the lease is free
    assert len(await ids(db)) == COUNT - 1


async def test_stores_sharing_a_database_lease_their_own_sources(
    backend: str, tmp_path: Path
) -> None:
    """Two stores in one PostgreSQL database (two schemas) each replicate their own `mls` at
    once: a lease is its store's, though advisory locks are the database's."""
    stores = [await new_store(backend, tmp_path / str(n)) for n in range(2)]
    dbs = [await open_db(store) for store in stores]
    try:
        async with SourceRepository(dbs[0]).lease("mls"), SourceRepository(dbs[1]).lease("mls"):
            with pytest.raises(LeaseHeld):
                async with SourceRepository(dbs[0]).lease("mls"):
                    pass
    finally:
        for db in dbs:
            await db.close()
        for store in stores:
            await drop_store(store)


# -- the command, killed in mid-pass ------------------------------------------------------


@pytest.fixture
async def store(backend: str, tmp_path: Path) -> AsyncIterator[Store]:
    made = await new_store(backend, tmp_path)
    yield made
    await drop_store(made)


@pytest.fixture
async def store_db(store: Store) -> AsyncIterator[Database]:
    """`store`, open in the test (its commands open it in processes of their own)."""
    db = await open_db(store)
    yield db
    await db.close()


def command(store: Store, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, **store.env(), "PROPDATA_AS_OF": AS_OF.isoformat()}
    # run in the store's folder: a rejects file without --rejects lands there, not in the tree
    return subprocess.Popen([sys.executable, "-m", "propdata", *args], env=env, cwd=store.folder,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip


async def test_kill_9_in_mid_pass_loses_nothing_and_counts_nothing_twice(
    store: Store, store_db: Database, server: ODataServer, tmp_path: Path
) -> None:
    # 2 records a page, 1 request a second: a pass of 12+ requests, killed after a few.
    await add(store_db, server.url, page_size=2, requests_per_hour=3_600)
    first = command(store, "data", "replicate", "mls", "--rejects", str(tmp_path / "r.csv"))

    async def four_committed() -> bool:
        assert first.poll() is None
        return (await SourceService(store_db).get("mls")).records >= 4

    await until(four_committed, "four records committed", 60)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=10)
    killed_at = (await SourceService(store_db).get("mls")).records
    assert 4 <= killed_at < COUNT - 1
    second = command(store, "data", "replicate", "mls", "--rejects", str(tmp_path / "r.csv"))
    _, err = second.communicate(timeout=120)
    assert second.returncode == 0, err.decode()
    source = await SourceService(store_db).get("mls")
    assert (source.records, source.rejects) == (COUNT - 1, 1)
    assert len(await ids(store_db)) == COUNT - 1
    inserted = await store_db.fetch_one(
        "SELECT COUNT(*) FROM property_changes WHERE change_type = 'created'"
    )
    assert inserted is not None and inserted[0] == COUNT - 1  # each record once

    # a second replicator says so and exits while one runs
    await add(store_db, server.url, name="slow", page_size=1, requests_per_hour=3_600, overlap=300)
    running = command(store, "data", "replicate", "slow")

    async def holding() -> bool:
        assert running.poll() is None
        return (await SourceService(store_db).get("slow")).state == "running"

    await until(holding, "the first replicator running")
    other = command(store, "data", "replicate", "slow")
    _, said = other.communicate(timeout=60)
    assert other.returncode == 3 and b"holds the lease" in said
    running.send_signal(signal.SIGTERM)  # finishes the page in hand, exits 0
    _, said = running.communicate(timeout=60)
    assert running.returncode == 0, said.decode()
    assert (await SourceService(store_db).get("slow")).state == "stopped"


async def test_metrics_show_the_passes_of_another_process(
    store: Store, store_db: Database, server: ODataServer, tmp_path: Path
) -> None:
    from litestar.testing import AsyncTestClient
    from prometheus_client.parser import text_string_to_metric_families

    from propdata.app import create_app
    from tests.conftest import settings_for

    await add(store_db, server.url, page_size=10, overlap=300)
    done = command(store, "data", "replicate", "mls", "--rejects", str(tmp_path / "r.csv"))
    _, said = done.communicate(timeout=120)
    assert done.returncode == 0, said.decode()
    token = "metrics-token-0123456789"
    app = create_app(settings_for(store, metrics_token=token))
    async with AsyncTestClient(app=app) as client:
        response = await client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200
    found = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }
    records = "propdata_replication_records_total"
    assert found[(records, (("result", "written"), ("source", "mls")))] == COUNT - 1
    assert found[(records, (("result", "rejected"), ("source", "mls")))] == 1
    requests = found[
        ("propdata_replication_requests_total", (("source", "mls"), ("status", "200")))
    ]
    assert requests >= 3
    assert 0 <= found[("propdata_replication_lag_seconds", (("source", "mls"),))] < 120
    # The dashboard's panels and the alerts on replication read what a replicating store has.
    replication = {n for n in dashboard_names() | alert_names() if "replication" in n}
    assert replication == PER_SOURCE <= {name for name, _ in found}


@pytest.fixture
async def stores(backend: str, tmp_path: Path) -> AsyncIterator[Stores]:
    async with Stores.opened(backend, tmp_path) as made:
        yield made


async def test_replicated_changes_become_events(stores: Stores, server: ODataServer) -> None:
    await stores.watch("ames", {"city": "Ames"})
    await add(stores.data, server.url)
    await replicate(stores.data)
    await stores.produce()
    events = await stores.events()
    assert kinds(events, "mls-L001") == ["search.entered", "property.listed"]
    server.patch("L004", StandardStatus="Delete", ModificationTimestamp=stamp(COUNT))
    await replicate(stores.data)
    await stores.produce()
    new = (await stores.events())[len(events) :]
    assert kinds(new) == ["search.exited"]
    assert new[0]["data"]["property"]["id"] == "mls-L004"


async def test_removing_a_source_with_its_records(db: Database, server: ODataServer) -> None:
    await add(db, server.url)
    await replicate(db)
    removed = await SourceService(db).remove("mls", AS_OF, delete_records=True)
    assert removed == COUNT - 1 and await ids(db) == []
    assert len([c for c in await feed(db) if c[1] == "removed"]) == COUNT - 1
    assert await SourceRepository(db).get("mls") is None


async def test_every_runs_passes_until_sigterm(
    store: Store, store_db: Database, server: ODataServer
) -> None:
    await add(store_db, server.url, page_size=10, overlap=300)
    running = command(store, "data", "replicate", "mls", "--every", "1")
    passes = set()

    async def two_passes() -> bool:  # ended: the pause, then again
        assert running.poll() is None
        source = await SourceService(store_db).get("mls")
        if source.state == "caught up" and source.last_pass_at is not None:
            passes.add(source.last_pass_at)
        return len(passes) >= 2

    await until(two_passes, "two passes ended", 60)
    server.patch("L005", ListPrice=1_000, ModificationTimestamp=stamp(COUNT))

    async def changed() -> bool:
        row = await store_db.fetch_one("SELECT list_price FROM properties WHERE id = 'mls-L005'")
        return row is not None and row[0] == 1_000

    await until(changed, "the changed price replicated", 60)
    running.send_signal(signal.SIGTERM)
    _, said = running.communicate(timeout=60)
    assert running.returncode == 0, said.decode()
    assert b"records read" in said
    assert (await SourceService(store_db).get("mls")).records == COUNT  # 23 new, 1 changed

"""Listing 500 saved searches that each watch 1,000 records, with /health asked beside it.

    .venv/bin/python bench/search_counts.py --properties 20000

On a copy of the make bench store of --properties (bench/.data/sqlite-p{N}-s7-2026-11-21,
built when missing): one Enterprise key's 500 saved searches, each watching 1,000 of the
store's ids drawn at random (every other one with a `status` filter too), written to the
accounts store as `POST /v1/searches` writes them. `propdata serve --workers 1`; the first
listing counts every search (its time is printed); then `GET /v1/searches?limit=500` is
asked by curl, one after the other, LISTINGS times (the owner's 60 management requests of a
minute; curl times each from its connect to the last byte), while a probe asks `GET /health` on a connection of its own every 5 ms. Printed:
each one's p50 and p99, the answers' size, and whether any listing counted again (none
should: the data did not change).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from propdata.accounts.keys import CustomLimits, keys_of
from propdata.config import accounts_url
from propdata.kit.clock import iso_ms
from propdata.kit.db import connect
from propdata.migrations.schema import migrate_accounts
from propdata.saved_searches.repository import SavedSearchRepository, SavedSearchRow

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bench_data  # noqa: E402
import harness  # noqa: E402

SEARCHES = 500
IDS = 1_000
LISTINGS = 60
"""Listings asked for: an owner's management requests of one minute."""
TARGET_LIST_P99_MS = 50.0
TARGET_HEALTH_P99_MS = 10.0
PROBE_EVERY = 0.005


@dataclass
class CountFigures:
    properties: int
    first_s: float = 0.0
    """The first listing's time (every search counted)."""
    listing_ms: list[float] = field(default_factory=list)
    health_ms: list[float] = field(default_factory=list)
    answer_mb: float = 0.0
    versions: set[int] = field(default_factory=set)


async def _prepare(url: str, seed: int) -> str:
    """The key and its searches; the key's secret."""
    async with keys_of(url) as keys:
        key, secret = await keys.create("enterprise", None, CustomLimits(per_minute=1_000_000))
    db = await connect(url)
    ids = [str(row[0]) for row in await db.fetch_all("SELECT id FROM properties")]
    await db.close()
    accounts = await connect(accounts_url(url), private=True)
    await migrate_accounts(accounts)
    chosen = random.Random(seed)
    searches = SavedSearchRepository(accounts)
    async with accounts.transaction():
        for n in range(SEARCHES):
            watched = chosen.sample(ids, min(IDS, len(ids)))
            filters = {"status": "forSale"} if n % 2 else {}
            await searches.insert(SavedSearchRow(
                f"srch_bench{n:019d}", key.owner, f"watch {n}", json.dumps(filters),
                json.dumps(watched), iso_ms(time.time() + n / 1000),
            ))  # fmt: skip
    await accounts.close()
    return secret


def _serve(url: str, as_of: dt.date) -> tuple[subprocess.Popen[bytes], int]:
    return harness.serve_one({"PROPDATA_DATABASE_URL": url, "PROPDATA_AS_OF": as_of.isoformat()})


async def _curl_ms(url: str, secret: str) -> float:
    """One GET of `url` by curl: milliseconds from its connect to the answer's last byte.
    curl, not this process, reads the 7.6 MB, so neither the Python client's parsing of it
    nor its pauses count in the server's figure, and the probe has this event loop alone."""
    curl = await asyncio.create_subprocess_exec(
        "curl", "--silent", "--show-error", "--output", "/dev/null", "--header", "@-",
        "--write-out", "%{http_code} %{time_total}", url,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, _ = await curl.communicate(f"Authorization: Bearer {secret}\n".encode())
    status, seconds = out.decode().split()
    assert curl.returncode == 0 and status == "200", out
    return float(seconds) * 1000


async def _bench(port: int, secret: str, found: CountFigures, say: Callable[[str], None]) -> None:
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {secret}"}
    async with httpx.AsyncClient(base_url=base, timeout=120, headers=headers) as client:
        started = time.monotonic()
        first = await client.get(f"/v1/searches?limit={SEARCHES}")
        found.first_s = time.monotonic() - started
        assert first.status_code == 200, first.text[:300]
        listed = first.json()["data"]
        assert len(listed) == SEARCHES, len(listed)
        found.answer_mb = len(first.content) / 1e6
        say(f"first listing (every search counted): {found.first_s:.2f} s,"
            f" {found.answer_mb:.1f} MB")  # fmt: skip
        stop = asyncio.Event()
        probe = asyncio.create_task(harness.probe_health(base, found.health_ms, stop, PROBE_EVERY))
        await asyncio.sleep(0.5)
        found.health_ms.clear()
        for _ in range(LISTINGS - 2):  # the first, these, and the last (its versions read)
            found.listing_ms.append(await _curl_ms(f"{base}/v1/searches?limit={SEARCHES}", secret))
            await asyncio.sleep(0.02)  # room for the probe between two listings
        answer = await client.get(f"/v1/searches?limit={SEARCHES}")
        found.versions = {s["dataVersion"] for s in answer.json()["data"]}
        stop.set()
        await probe
    q = harness.quantile
    say(f"{len(found.listing_ms)} listings of {SEARCHES} searches: p50"
        f" {q(found.listing_ms, 0.5):.1f} ms, p99 {q(found.listing_ms, 0.99):.1f} ms;"
        f" /health beside them: p50 {q(found.health_ms, 0.5):.1f} ms, p99"
        f" {q(found.health_ms, 0.99):.1f} ms ({len(found.health_ms):,} probes)")  # fmt: skip


def measure(
    folder: Path, properties: int, seed: int, as_of: dt.date, say: Callable[[str], None] = print
) -> CountFigures:
    """The whole run on a copy of the make bench store (built when missing)."""
    build = asyncio.run(bench_data.ensure_sqlite(folder, properties, seed, as_of))
    return measure_store(Path(build.url), seed, as_of, say, properties)


def measure_store(
    store: Path, seed: int, as_of: dt.date, say: Callable[[str], None] = print,
    properties: int = 0,
) -> CountFigures:  # fmt: skip
    """The whole run on a copy of the SQLite store at `store` (bench/run.py's)."""
    found = CountFigures(properties)
    with tempfile.TemporaryDirectory(prefix="propdata-search-counts-") as scratch:
        url = str(Path(scratch) / "propdata.db")
        bench_data.checkpoint(store)
        shutil.copyfile(store, url)
        secret = asyncio.run(_prepare(url, seed))
        server, port = _serve(url, as_of)
        try:
            asyncio.run(_bench(port, secret, found, say))
        finally:
            server.terminate()
            server.wait(30)
    return found


def rows(found: CountFigures) -> list[Any]:
    """The make bench table's row of `found`."""
    from harness import Row

    q = harness.quantile
    listing, health = q(found.listing_ms, 0.99), q(found.health_ms, 0.99)
    return [Row(
        f"18. list {SEARCHES} saved searches of {IDS:,} ids each", "embedded",
        p50_ms=q(found.listing_ms, 0.5), p99_ms=listing,
        result=f"{len(found.listing_ms)} listings of {found.answer_mb:.1f} MB (the first, which"
        f" counts every search, {found.first_s:.2f} s); /health beside them p50"
        f" {q(found.health_ms, 0.5):.1f} ms, p99 {health:.1f} ms",
        target=f"p99 ≤ {TARGET_LIST_P99_MS:g} ms, /health p99 ≤ {TARGET_HEALTH_P99_MS:g} ms",
        met=listing <= TARGET_LIST_P99_MS and health <= TARGET_HEALTH_P99_MS,
    )]  # fmt: skip


def main() -> None:
    parser = harness.script_parser(__doc__)
    parser.add_argument("--properties", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--as-of", type=dt.date.fromisoformat, default=dt.date(2026, 11, 21))
    parser.add_argument("--folder", type=Path, default=BENCH / ".data")
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    found = measure(args.folder, args.properties, args.seed, args.as_of,
                    lambda line: print(line, flush=True))  # fmt: skip
    print(harness.table(rows(found), judged=True))


if __name__ == "__main__":
    main()

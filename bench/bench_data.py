"""The benchmark's data: a synthetic store built once per (size, seed, as-of) and reused.

    store = await ensure_sqlite(Path("bench/.data"), 1_000_000, seed=7, as_of=date(2026, 11, 21))

A build runs `ingest.pipeline` exactly as `propdata data generate` does (the synthetic
records loaded, then the value and rent estimates, then the market statistics) and times
each phase. Generating the records is not importing them, so the time spent waiting for the
generator is measured and taken out of the import figure; both are recorded. (The generator
runs in a child process beside the load, `synthetic.generate_apart`: what is taken out is
the load's wait for it and the decoding of its chunks.) The figures of
the build that made a store are kept in its manifest and reported again when it is reused.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import os
import random
import resource
import shutil
import sqlite3
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from propdata.accounts.keys import CustomLimits, keys_of
from propdata.ingest import pipeline
from propdata.kit.db import connect
from propdata.migrations.schema import migrate


@dataclass
class Build:
    """How a store was built; `reused` is set when this run found it ready."""

    properties: int
    seed: int
    as_of: str
    url: str
    generate_s: float
    import_s: float
    rebuild_s: float
    """The market statistics' rebuild."""
    zip_codes: int
    built_at: str
    peak_rss_mb: float
    commit: str = ""
    """The code that built it (`code_version()`)."""
    estimates_s: float = 0.0
    """The value and rent estimates' rebuild (0 in a manifest that does not record it)."""
    total_s: float = 0.0
    """Wall time of the whole `data generate` pipeline: generation, load, estimates and
    statistics (0 in a manifest that does not record it)."""
    reused: bool = False

    @property
    def import_rate(self) -> float:
        return self.properties / self.import_s if self.import_s else 0.0


class TimedIterator:
    """Wrap an iterator and add up the time spent producing its items: wall seconds, or by
    another `clock` (`time.process_time`: this process's CPU seconds)."""

    def __init__(
        self, items: Iterator[Any], clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self.items = items
        self.clock = clock
        self.seconds = 0.0

    def __iter__(self) -> TimedIterator:
        return self

    def __next__(self) -> Any:
        start = self.clock()
        try:
            return next(self.items)
        finally:
            self.seconds += self.clock() - start


PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


def load_options(parser: argparse.ArgumentParser) -> None:
    """The options of a script that loads generated records into a scratch store."""
    parser.add_argument("--properties", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--postgres", action="store_true", help=f"a fresh schema in {PG_URL}")
    parser.add_argument("--pg-url", default=PG_URL)


@contextlib.contextmanager
def scratch_store(name: str, postgres: bool, pg_url: str = PG_URL,
                  file: str = "propdata.db") -> Iterator[tuple[str, Path]]:  # fmt: skip
    """A throwaway store of one run and a temporary folder: a fresh schema `<name>_<random>`
    of `pg_url`, dropped after, or a SQLite file `file` in the folder."""
    with tempfile.TemporaryDirectory(prefix=f"{name.replace('_', '-')}-") as folder:
        if not postgres:
            yield str(Path(folder) / file), Path(folder)
            return
        import asyncpg

        async def pg(sql: str) -> None:
            conn = await asyncpg.connect(pg_url)
            await conn.execute(sql)
            await conn.close()

        schema = f"{name}_{uuid.uuid4().hex[:10]}"
        asyncio.run(pg(f"CREATE SCHEMA {schema}"))
        try:
            yield f"{pg_url}{'&' if '?' in pg_url else '?'}search_path={schema}", Path(folder)
        finally:
            asyncio.run(pg(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))


async def build(url: str, properties: int, seed: int, as_of: dt.date) -> Build:
    """Run `propdata data generate`'s pipeline for `properties` records into the store at `url`."""
    db = await connect(url)
    try:
        await migrate(db)
        source = pipeline.synthetic_source(properties, seed, as_of)
        items = TimedIterator(iter(source.items))
        start = time.perf_counter()
        outcome = await pipeline.run(db, [dataclasses.replace(source, items=items)], as_of)
        total = time.perf_counter() - start
        if outcome.reports[0].rejects:
            raise RuntimeError(f"the synthetic set had {len(outcome.reports[0].rejects)} rejects")
    finally:
        await db.close()
    return Build(
        properties=properties, seed=seed, as_of=as_of.isoformat(), url=url,
        generate_s=round(items.seconds, 2),
        import_s=round(outcome.seconds["load"] - items.seconds, 2),
        rebuild_s=round(outcome.seconds.get("markets", 0.0), 2), zip_codes=outcome.markets or 0,
        estimates_s=round(outcome.seconds.get("estimates", 0.0), 2), total_s=round(total, 2),
        built_at=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        commit=code_version(),
    )  # fmt: skip


def _manifest(folder: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads((folder / "manifest.json").read_text())
        return data
    except (OSError, ValueError):
        return None


def _matches(manifest: dict[str, Any] | None, properties: int, seed: int, as_of: dt.date) -> bool:
    return bool(manifest) and (
        manifest.get("properties") == properties  # type: ignore[union-attr]
        and manifest.get("seed") == seed  # type: ignore[union-attr]
        and manifest.get("as_of") == as_of.isoformat()  # type: ignore[union-attr]
    )


def code_version() -> str:
    """The commit of the checkout, and whether src/ differs from it."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                              capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" with local changes in src/" if dirty else "")


async def ensure_sqlite(
    root: Path, properties: int, seed: int, as_of: dt.date, rebuild: bool = False
) -> Build:
    """The SQLite store for these parameters under `root`, built when missing or different
    (or when `rebuild`)."""
    folder = root / f"sqlite-p{properties}-s{seed}-{as_of.isoformat()}"
    path = folder / "propdata.db"
    manifest = _manifest(folder)
    if not rebuild and _matches(manifest, properties, seed, as_of) and path.exists():
        fields = {k: v for k, v in manifest.items() if k in Build.__dataclass_fields__}  # type: ignore[union-attr]
        await refresh_statistics(str(path))
        return Build(**{**fields, "url": str(path), "reused": True})
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    made = await build(str(path), properties, seed, as_of)
    checkpoint(path)
    (folder / "manifest.json").write_text(json.dumps(asdict(made), indent=2))
    return made


async def ensure_postgres(
    root: Path,
    pg_url: str,
    properties: int,
    seed: int,
    as_of: dt.date,
    throwaway: bool = False,
    rebuild: bool = False,
) -> Build:
    """The same data in a PostgreSQL schema of its own (bench_p<N>_s<seed>_<as-of>), reused
    likewise; a `throwaway` one (smoke runs) has a random name and is never reused."""
    import asyncpg

    schema = f"bench_p{properties}_s{seed}_{as_of.strftime('%Y%m%d')}"
    if throwaway:
        schema = f"bench_smoke_{uuid.uuid4().hex[:10]}"
    url = f"{pg_url}{'&' if '?' in pg_url else '?'}search_path={schema}"
    folder = root / f"postgres-{schema}"
    manifest = _manifest(folder)
    conn = await asyncpg.connect(pg_url, timeout=10)
    try:
        if not rebuild and _matches(manifest, properties, seed, as_of):
            exists = await conn.fetchval(
                "SELECT count(*) FROM information_schema.tables"
                " WHERE table_schema = $1 AND table_name = 'properties'",
                schema,
            )
            if exists:
                stored = await conn.fetchval(f"SELECT count(*) FROM {schema}.properties")
                if stored == properties:
                    await refresh_statistics(url)
                    fields = {k: v for k, v in manifest.items() if k in Build.__dataclass_fields__}  # type: ignore[union-attr]
                    return Build(**{**fields, "url": url, "reused": True})
        await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        await conn.execute(f"CREATE SCHEMA {schema}")
    finally:
        await conn.close()
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    made = await build(url, properties, seed, as_of)
    conn = await asyncpg.connect(pg_url, timeout=10)
    try:
        await conn.execute(f"VACUUM ANALYZE {schema}.properties")
    finally:
        await conn.close()
    (folder / "manifest.json").write_text(json.dumps(asdict(made), indent=2))
    return made


async def refresh_statistics(url: str) -> None:
    """Leave the planner statistics a load by the current code would leave.

    A reused store was loaded by the code of its day; how loads end (which statistics they
    gather) changes with the service, and the planner's choices with it.
    """
    from propdata.properties.repository import PropertyRepository

    db = await connect(url)
    try:
        await migrate(db)
        await PropertyRepository(db).optimize()
    finally:
        await db.close()
    if not url.startswith(("postgresql://", "postgres://")):
        checkpoint(Path(url))


async def drop_postgres(pg_url: str, url: str) -> None:
    """Drop the schema a store URL's search_path names (a smoke run's throwaway store)."""
    import asyncpg

    schema = url.rsplit("search_path=", 1)[1]
    conn = await asyncpg.connect(pg_url, timeout=10)
    try:
        await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    finally:
        await conn.close()


async def server_versions(pg_url: str, redis_url: str) -> str:
    import asyncpg
    import redis.asyncio as aioredis

    conn = await asyncpg.connect(pg_url, timeout=10)
    try:
        pg = await conn.fetchval("SHOW server_version")
    finally:
        await conn.close()
    client = aioredis.Redis.from_url(redis_url)
    try:
        info = await client.info("server")
    finally:
        await client.aclose()
    return f"PostgreSQL {str(pg).split()[0]}, Redis {info.get('redis_version', '?')}"


def checkpoint(path: Path) -> None:
    """Fold the WAL into the database file, so a reader opening it immutable sees every row."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def copy_store(source: Path, target: Path) -> Path:
    """A copy of a (checkpointed) store file, written to disk before it is used: a copy
    left in the page cache is flushed by the kernel while the next step runs, and the first
    checkpoint's fsync then waits for gigabytes (a one-record import of a fresh copy of the
    1,000,000-property store took 4.9 s, 0.05 s of it the load)."""
    shutil.copyfile(source, target)
    with target.open("rb+") as copied:
        os.fsync(copied.fileno())
    return target


async def create_key(url: str) -> str:
    """An enterprise key whose limits no benchmark reaches (and no daily quota)."""
    async with keys_of(url) as keys:
        _, secret = await keys.create("enterprise", "bench", CustomLimits(per_minute=1_000_000_000))
    return secret


@dataclass
class Sample:
    """Real values drawn from the store, for the request mixes."""

    ids: list[str]
    rows: list[dict[str, Any]]
    """Rows of random properties: zip_code, city, state, status, property_type, list_price,
    bedrooms, bathrooms, living_area, year_built, days_on_market."""


def sample(url: str, ids: int, rows: int, seed: int) -> Sample:
    """Random ids and rows of the SQLite store at `url` (chosen by a seeded generator)."""
    return asyncio.run(_sample(url, ids, rows, seed))


async def _sample(url: str, ids: int, rows: int, seed: int) -> Sample:
    db = await connect(url)
    try:
        all_ids = [r[0] for r in await db.fetch_all("SELECT id FROM properties ORDER BY id")]
        rng = random.Random(seed)
        chosen = rng.sample(all_ids, min(ids, len(all_ids)))
        picked = rng.sample(all_ids, min(rows, len(all_ids)))
        columns = ("zip_code", "city", "state", "status", "property_type", "list_price",
                   "bedrooms", "bathrooms", "living_area", "year_built", "days_on_market",
                   "latitude", "longitude")  # fmt: skip
        found: list[dict[str, Any]] = []
        for start in range(0, len(picked), 500):
            part = picked[start : start + 500]
            marks = ", ".join("?" for _ in part)
            for row in await db.fetch_all(
                f"SELECT {', '.join(columns)} FROM properties WHERE id IN ({marks})", part
            ):
                found.append(dict(zip(columns, row, strict=True)))
    finally:
        await db.close()
    found.sort(key=lambda r: json.dumps(r, sort_keys=True))  # IN (...) order is not stable
    return Sample(ids=chosen, rows=found)

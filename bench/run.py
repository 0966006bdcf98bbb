"""Drive the whole API with wrk at a given size and print one table of figures against targets.

    .venv/bin/python bench/run.py --properties 1000000 --duration 20 --connections 16 \
        --workers 2 [--scaleout] [--smoke] [--write-docs]

What it does, in order (docs/performance.md, "Benchmark (make bench)", explains each figure):

1. Builds the data (synthetic, seeded) into bench/.data, or reuses a store built with the
   same size, seed and as-of date. The import (records a second, generation excluded) and
   the market rebuild are timed apart when it builds.
2. Creates an enterprise key no scenario can throttle, samples real ids and records, and
   writes the request lists wrk rotates through (bench/wrk/rotate.lua).
3. Serves the store as `propdata serve` does (uvicorn, uvloop, httptools, N workers), with
   PROPDATA_CACHE_TTL=0 for every figure that is not about the cache, and runs wrk on:
   get-by-id over the sampled ids; the search mix; page 100,000 of a filtered search; the
   radius mix; a deep page by cursor; and, on a server with the cache on, a few repeated
   URLs (cache hits). Each run has a short warm-up first. It compares the sizes of whole
   by-id answers with `fields=id,listPrice` ones, and reads each worker's memory (Rss,
   anonymous, Pss) after the loads and again with the response cache full.
4. Serves a bare ASGI app (bench/bare.py) answering the same get-by-id bytes on the same
   server and worker count, right before our get-by-id run, for the ratio.
5. Serves the same SQLite file with datasette (its own environment, bench/.datasette-venv,
   created here when missing unless --smoke), checks a sample of searches returns the
   same rows, and drives it with the same search mix in its filter syntax.
6. With --scaleout, does 1-3 again on PostgreSQL (a schema of its own) and Redis.

Run it from the repository root with the project's virtualenv. --smoke is the small version
CI runs (a few thousand properties, two seconds a scenario): it checks that the harness
works, not how fast anything is.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import fcntl
import os
import platform
import re
import shlex
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

import bench_data  # noqa: E402  (bench/ is not a package)
import bench_mix as scenarios  # noqa: E402
import cli_loads  # noqa: E402
import events_bench  # noqa: E402
import export as exporting  # noqa: E402
import follow  # noqa: E402
from harness import (  # noqa: E402
    PG_URL,
    REDIS_URL,
    TIMES,
    Load,
    Requests,
    Row,
    answer_bytes,
    check_ok,
    deep_cursors,
    ensure_wrk,
    log,
    make_requests,
    measure,
    propdata_server,
    scaleout_available,
    spread_of,
    table,
    uvicorn_server,
    write_paths,
)

import replication  # noqa: E402

DATASETTE_VENV = BENCH / ".datasette-venv"
DOCS = ROOT / "docs" / "performance.md"
SECTION = "## Benchmark (make bench)"
END = "<!-- end of the make bench output; notes below this line are kept by --write-docs -->"
TARGETS = {
    "ratio": 0.20,  # 0.5 is beyond a lean design on this framework (docs/performance.md)
    "ratio_scaleout": 0.12,
    "search_p99_ms": 25.0,
    "datasette_ratio": 3.0,
    "offset_p99_ms": 50.0,
    "radius_p99_ms": 25.0,
    "cursor_p99_ms": 10.0,
    "fields_ratio": 3.0,
    "import_rate": 50_000,
    "import_rate_scaleout": 25_000,
    "generate_s": 90.0,
    "rebuild_s": 60.0,
    "rss_mb": 150.0,  # Pss of each worker, with the response cache full too
}


@dataclass
class StoreRun:
    """Figures of one store (embedded or scale-out)."""

    label: str
    ids: Load | None = None
    bare: Load | None = None
    search: Load | None = None
    offset: Load | None = None
    radius: Load | None = None
    cursor: Load | None = None
    cursor_searches: int = 0
    fields_bytes: tuple[float, float] | None = None
    """Median bytes of a by-id answer, whole and with fields=id,listPrice."""
    cache: Load | None = None
    memory: list[tuple[float, float, float]] = field(default_factory=list)
    """(VmRSS, RssAnon, Pss) MB of each worker after the loads."""
    memory_full: list[tuple[float, float, float]] = field(default_factory=list)
    """The same with the response cache on, after the search mix and get by id filled it."""
    bodies: dict[str, bytes] = field(default_factory=dict)
    search_answers: list[dict[str, Any]] = field(default_factory=list)
    """Our answers to the first searches of the mix, for the comparison with datasette."""


def run_store(label: str, store_env: dict[str, str], key: str, reqs: Requests, args: Any,
              logs: Path, bodies: dict[str, bytes] | None) -> StoreRun:  # fmt: skip
    """Every HTTP scenario on one store; `bodies` (from an earlier store) feeds bare."""
    run = StoreRun(label)
    with propdata_server(f"propdata-{label}", store_env, 0, args, logs) as server:
        answers = check_ok(server.base, reqs.id_paths, key, "get by id")
        run.bodies = {p: a.content for p, a in zip(reqs.id_paths, answers, strict=True)}
        checked = check_ok(server.base,  # compared with datasette's: first pages
                           [s.first_page.path for s in reqs.searches[: args.check]], key,
                           "search mix")  # fmt: skip
        run.search_answers = [a.json() for a in checked]
        check_ok(server.base, [s.path for s in reqs.offsets[:5]], key, "offset")
        check_ok(server.base, [s.path for s in reqs.radii[: args.check]], key, "radius mix")
        cursors = deep_cursors(server.base, reqs.deep, key, logs / f"cursor-{label}.txt")
        run.cursor_searches = len(cursors.read_text().splitlines())
        run.fields_bytes = answer_bytes(server.base, reqs.id_paths[:200], key)
        bodies_file = logs / "bare-bodies.tsv"
        with bodies_file.open("wb") as out:
            for path, body in (bodies or run.bodies).items():
                out.write(path.encode() + b"\t" + body + b"\n")
        bare = uvicorn_server("bare", Path(sys.executable), "bare:app",
                              {"BENCH_BARE_BODIES": str(bodies_file)}, args.workers,
                              reqs.id_paths[0], logs,
                              http="propdata.kit.serving.protocol:BoundedHttpToolsProtocol")  # fmt: skip
        with bare:
            run.bare = measure(bare, reqs.ids, args, None, f"{label} bare ASGI get by id")
        run.ids = measure(server, reqs.ids, args, key, f"{label} get by id")
        run.search = measure(server, reqs.search, args, key, f"{label} search mix")
        run.offset = measure(server, reqs.offset, args, key, f"{label} offset 100,000")
        run.radius = measure(server, reqs.radius, args, key, f"{label} radius mix")
        run.cursor = measure(server, cursors, args, key,
                             f"{label} cursor page {args.cursor_page:,}")  # fmt: skip
        run.memory = server.memory()
        log(f"{label} worker memory after the loads: {_memory(run.memory)}")
    with propdata_server(f"propdata-{label}-cached", store_env, 3600, args, logs) as server:
        check_ok(server.base, reqs.cached, key, "cached URLs")
        prime(server.base, reqs.cached, key)
        run.cache = measure(server, reqs.cache, args, key, f"{label} cache hits", True)
        # Row 6 again with the cache full. Distinct answers fill it: each
        # worker's share of PROPDATA_CACHE_MB is a few seconds of the search mix.
        measure(server, reqs.search, args, key, f"{label} search mix, filling the cache")
        measure(server, reqs.ids, args, key, f"{label} get by id, filling the cache")
        run.memory_full = server.memory()
        log(f"{label} worker memory with the cache full: {_memory(run.memory_full)}")
    return run


def prime(base: str, paths: Sequence[str], key: str, in_a_row: int = 8) -> None:
    """Ask each URL on fresh connections until it is a hit `in_a_row` times running.

    The embedded cache is per worker and a connection lands on any worker, so a URL is
    cached everywhere only once each worker has answered it once; a first miss of a slow
    search would otherwise stall its worker inside the measured run.
    """
    headers = {"Authorization": f"Bearer {key}"}

    def one(path: str) -> None:
        streak = 0
        for _ in range(200):
            answer = httpx.get(base + path, headers=headers, timeout=120)
            streak = streak + 1 if answer.headers.get("x-cache") == "HIT" else 0
            if streak >= in_a_row:
                return
        log(f"{path} never became a steady cache hit")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, paths))


@dataclass
class DatasetteRun:
    load: Load | None = None
    verdicts: dict[str, int] = field(default_factory=dict)
    details: list[str] = field(default_factory=list)
    skipped: str = ""


def ensure_datasette(smoke: bool) -> str:
    """Path of datasette's environment's python, creating it unless --smoke; '' if absent."""
    python = DATASETTE_VENV / "bin" / "python"
    if python.exists():
        return str(python)
    if smoke:
        return ""
    log("creating bench/.datasette-venv with datasette, uvloop and httptools")
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(DATASETTE_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "datasette", "uvloop", "httptools"],
                   check=True)  # fmt: skip
    return str(python)


def run_datasette(db_path: Path, reqs: Requests, ours: list[dict[str, Any]], args: Any,
                  logs: Path) -> DatasetteRun:  # fmt: skip
    result = DatasetteRun()
    python = ensure_datasette(args.smoke)
    if not python:
        result.skipped = (
            "skipped: bench/.datasette-venv does not exist (the smoke run never creates it)"
        )
        log("datasette " + result.skipped)
        return result
    bench_data.checkpoint(db_path)  # an immutable reader does not read the WAL
    table_path = f"/{db_path.stem}/properties.json"
    server = uvicorn_server("datasette", Path(python), "datasette_app:app",
                            {"BENCH_DATASETTE_DB": str(db_path)}, args.workers,
                            f"/{db_path.stem}.json?_shape=objects&sql=select+1", logs,
                            factory=True)  # fmt: skip
    paths = [scenarios.datasette_path(s.first_page, table_path) for s in reqs.searches]
    ds_file = write_paths(reqs.search.with_name("datasette.txt"), paths)
    with server:
        checked = reqs.searches[: len(ours)]
        theirs = check_ok(server.base, paths[: len(ours)], None, "datasette sample")
        for search, our_answer, their_answer in zip(checked, ours, theirs, strict=True):
            not_null = None
            if search.sort in scenarios.NULLABLE_SORTS and search.order == "asc":
                not_null = httpx.get(
                    server.base + scenarios.datasette_path(search, table_path, not_null=True),
                    timeout=120,
                ).json()
            verdict, detail = scenarios.compare(search, our_answer, their_answer.json(), not_null)
            result.verdicts[verdict] = result.verdicts.get(verdict, 0) + 1
            if verdict == "differ":
                result.details.append(f"{search.path}: {detail}")
        log(f"datasette sample: {result.verdicts}")
        for d in result.details[:5]:
            log("  differs: " + d)
        result.load = measure(server, ds_file, args, None, "datasette search mix")
    return result


# -- scale-out ------------------------------------------------------------------------------


def forget_redis_key(key_id: str) -> None:
    """Drop the bench key's limiter log from Redis (an unlimited key keeps a day of it)."""
    import redis

    from propdata.kit.ratelimit.redis import RedisLimiter

    redis.Redis.from_url(REDIS_URL).delete(*RedisLimiter.keys_of(key_id))


# -- the report -----------------------------------------------------------------------------


def key_id_of(url: str, secret: str) -> str:
    from propdata.accounts.keys import keys_of

    async def find() -> str:
        async with keys_of(url) as keys:
            return (await keys.find(secret)).id

    return asyncio.run(find())


def build_rows(builds: dict[str, bench_data.Build], runs: dict[str, StoreRun],
               ds: DatasetteRun | None, distinct: int,
               cursor_page: int = 10_000,
               followed: follow.FollowRun | None = None) -> list[Row]:  # fmt: skip
    """The table; `distinct` is the number of searches in the mixes (repeats are flagged)."""
    rows: list[Row] = []

    def repeats(load: Load) -> str:
        if load.requests + load.warmup_requests <= distinct:
            return ""
        return f"; the {distinct:,} searches came round again in the warm-up and run (kept totals may flatter)"

    t = TARGETS
    for label, run in runs.items():
        if run.ids and run.bare:
            ratio = run.ids.rps / run.bare.rps if run.bare.rps else 0.0
            wanted = t["ratio_scaleout"] if label == "scale-out" else t["ratio"]
            rows.append(Row("1. get by id, cache off (full path)", label, run.ids.rps,
                            run.ids.ms("p50"), run.ids.ms("p99"),
                            f"{ratio:.3f} of bare ASGI; connections per worker"
                            f" {spread_of(run.ids)}", f"≥ {wanted} of bare",
                            bool(run.ids.requests) and ratio >= wanted,
                            run.ids.failed))  # fmt: skip
            rows.append(Row("   bare ASGI app, same bytes (bench/bare.py)", label, run.bare.rps,
                            run.bare.ms("p50"), run.bare.ms("p99"),
                            f"the ceiling; connections per worker {spread_of(run.bare)}",
                            errors=run.bare.failed))  # fmt: skip
    for label, run in runs.items():
        if run.search:
            rows.append(_p99_row("2. search mix, cache off", label, run.search,
                                 repeats(run.search), t["search_p99_ms"]))  # fmt: skip
    embedded = runs.get("embedded")
    if ds is not None:
        if ds.load and embedded and embedded.search:
            ratio = embedded.search.rps / ds.load.rps if ds.load.rps else 0.0
            total = sum(ds.verdicts.values())
            same = ds.verdicts.get("same order", 0) + ds.verdicts.get("same rows", 0)
            sample = (f"sample of {total}: {ds.verdicts.get('same order', 0)} same order,"
                      f" {ds.verdicts.get('same rows', 0)} same rows in another tie order,"
                      f" {ds.verdicts.get('differ', 0)} differ")  # fmt: skip
            rows.append(Row("3. the search mix on datasette", "embedded file", ds.load.rps,
                            ds.load.ms("p50"), ds.load.ms("p99"),
                            f"ours {ratio:.2f}{TIMES} datasette ({ds.load.requests:,} answers);"
                            f" {sample}",
                            f"≥ {t['datasette_ratio']:.0f}{TIMES}, same rows",
                            bool(ds.load.requests) and ratio >= t["datasette_ratio"]
                            and same == total,
                            ds.load.failed))  # fmt: skip
        else:
            rows.append(Row("3. the search mix on datasette", "embedded file", result=ds.skipped,
                            target=f"≥ {t['datasette_ratio']:.0f}{TIMES}, same rows"))  # fmt: skip
    for label, run in runs.items():
        if run.offset:
            rows.append(_p99_row("4. offset 100,000 with a filter", label, run.offset,
                                 "; 5 filter sets, totals kept after each worker's first"
                                 " request, as when paging through one search",
                                 t["offset_p99_ms"]))  # fmt: skip
    for label, run in runs.items():
        if run.radius:
            rows.append(_p99_row("7. radius mix, cache off", label, run.radius,
                                 repeats(run.radius), t["radius_p99_ms"]))  # fmt: skip
    for label, run in runs.items():
        if run.cursor:
            rows.append(_p99_row(f"8. cursor page {cursor_page:,}", label, run.cursor,
                                 f"; {run.cursor_searches} searches, 10 a page",
                                 t["cursor_p99_ms"]))  # fmt: skip
    for label, run in runs.items():
        if run.fields_bytes:
            whole, small = run.fields_bytes
            ratio = whole / max(1.0, small)
            rows.append(Row("9. by id with fields=id,listPrice (bytes)", label,
                            result=f"{ratio:.0f}{TIMES} smaller: median {small:,.0f} bytes"
                            f" against {whole:,.0f} whole (200 ids)",
                            target=f"≥ {t['fields_ratio']:.0f}{TIMES} smaller",
                            met=ratio >= t["fields_ratio"]))  # fmt: skip
    for label, b in builds.items():
        note = (
            f" (built {b.built_at} by {b.commit or 'an older harness'}, reused)" if b.reused else ""
        )
        rate = t["import_rate"] if label == "embedded" else t["import_rate_scaleout"]
        rows.append(Row("5a. import (records/s, generation excluded)", label, b.import_rate,
                        result=f"{b.properties:,} in {b.import_s:.1f} s{note}",
                        target=f"≥ {rate:,}/s", met=b.import_rate >= rate))  # fmt: skip
        if b.total_s:  # the first worker's search index comes after this total
            rows.append(Row("5c. data generate end to end (generate, load, rebuilds)", label,
                            result=f"{b.total_s:.1f} s (generation waited for {b.generate_s:.1f} s,"
                            f" estimates {b.estimates_s:.1f} s){note}",
                            target=f"≤ {t['generate_s']:.0f} s" if label == "embedded" else "—",
                            met=b.total_s <= t["generate_s"] if label == "embedded" else None))  # fmt: skip
        rows.append(Row("5b. market statistics rebuild", label,
                        result=f"{b.rebuild_s:.1f} s for {b.zip_codes:,} ZIP codes{note}",
                        target=f"≤ {t['rebuild_s']:.0f} s",
                        met=b.rebuild_s <= t["rebuild_s"]))  # fmt: skip
    for label, run in runs.items():
        for what, memory in (("after the loads", run.memory),
                             ("with the response cache full", run.memory_full)):  # fmt: skip
            if memory:  # judged by Pss: the mapped search index counts once per host
                worst = max(pss for _, _, pss in memory)
                rows.append(Row(f"6. memory per worker {what}", label, result=_memory(memory),
                                target=f"Pss ≤ {t['rss_mb']:.0f} MB",
                                met=worst <= t["rss_mb"]))  # fmt: skip
    for label, run in runs.items():
        if run.cache:
            answered = run.cache.hits + run.cache.misses
            ratio = run.cache.hits / answered * 100 if answered else 0.0
            rows.append(Row("cache hits (cache on, 20 repeated URLs)", label, run.cache.rps,
                            run.cache.ms("p50"), run.cache.ms("p99"),
                            f"{ratio:.2f} % hits; about the cache, not a miss-path figure",
                            errors=run.cache.failed))  # fmt: skip
    if followed is not None:
        rows += follow.rows(followed)
    return rows


def _p99_row(scenario: str, label: str, load: Load, detail: str, p99_ms: float) -> Row:
    """The row of a load judged by its p99 against `p99_ms`; `detail` follows the figures."""
    p99 = load.ms("p99")
    return Row(scenario, label, load.rps, load.ms("p50"), p99, _p99(load) + detail,
               f"p99 ≤ {p99_ms:.0f} ms", bool(load.requests) and p99 <= p99_ms,
               load.failed)  # fmt: skip


def _p99(load: Load) -> str:
    if not load.requests:
        return "no answer within the run"
    return (f"p99 {load.ms('p99'):,.1f} ms over {load.requests:,} answers;"
            f" connections per worker {spread_of(load)}")  # fmt: skip


def _memory(memory: Sequence[tuple[float, float, float]]) -> str:
    return " / ".join(f"{rss:.0f} MB ({anon:.0f} MB anonymous, Pss {pss:.0f} MB)"
                      for rss, anon, pss in memory)  # fmt: skip


def machine_facts(load_at_start: tuple[float, float, float]) -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    wrk_version = subprocess.run(["wrk", "--version"], capture_output=True, text=True).stdout
    wrk_version = (wrk_version.split("\n")[0].split(" Copyright")[0].strip()) or "wrk"
    return (
        f"nproc {os.cpu_count()}, {cpu}, {mem:.0f} GiB; load average at start"
        f" {load_at_start[0]:.2f} {load_at_start[1]:.2f} {load_at_start[2]:.2f};"
        f" Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, {wrk_version}"
    )


SCENARIO_NOTES = """\
How the figures are made (bench/run.py; request lists from bench/bench_mix.py, rotated by
bench/wrk/rotate.lua, each thread from its own place; a short warm-up precedes every run):

- The server is `propdata serve` (uvicorn, uvloop, httptools) with the worker count above and
  `PROPDATA_CACHE_TTL=0` for every row but the cache row. One enterprise key with a
  per-minute limit of 10^9 and no daily quota, so nothing is throttled but every request
  still passes the key check, the limiter (it records each request) and the metering.
- **1. get by id**: `GET /v1/properties/{id}` over random ids of the store. The bare app
  (bench/bare.py) answers the same paths with the same body bytes and header names on the
  same server and worker count, measured in the same run just before; the target is the
  ratio of the two.
- **2. search mix**: pages of `GET /v1/properties` and `/v1/properties/search`; search i
  always carries filter i mod 14, so every filter is used evenly; most add a place (ZIP 35 %,
  city 25 %, state 20 %; 20 % are national), up to three more filters drawn around a real
  record (price and days-on-market filters with a listing status, never `offMarket`, whose
  records have neither), a random sort and order (defaults sometimes left unstated), page
  sizes up to 100 (half the usual 10, 20, 25, 50, 100; half drawn from 1-100), and in half
  the searches a later page (offset drawn from 1-1,000; datasette, which pages by cursor,
  is asked the first pages). 40,000 distinct searches, so none repeats within a run and no total the
  service keeps for a set of filters is reused. `meta.total` is exact in every answer.
- **3. datasette**: datasette 0.65 in its own environment, serving the same SQLite file
  immutable on the same server settings and worker count, asked the same searches in its
  table filters (`zip_code__exact`, `city_key__exact` (our normalised city), `list_price__gte`,
  …, `_sort`/`_sort_desc`, `_size`, `_col` for our search columns, `_shape=objects`), with its
  count (`filtered_table_rows_count`) on and facet suggestions off. The sample check compares
  totals and ids: datasette orders by the sort column alone (ties in the file's order) and
  puts nulls first in ascending order, where we break ties by id and put nulls last; such
  answers count as "same rows" when totals, the sequence of sort values and the ids of every
  tie group but the page's last are equal (ascending sorts on a nullable column are compared
  against datasette's non-null rows).
- **4. offset**: page 100,000 (sizes 10 to 100) of `status=offMarket`, `status=forSale`,
  `propertyType=singleFamily`, `minBeds=3` or `minYearBuilt=1960`, every sort and order:
  a client paging deep into one search, so the total the service keeps per set of filters
  is counted once per worker and the figure is the cost of the page.
- **7. radius mix**: first pages of radius searches around points drawn from real records
  (moved up to about a mile), radius 0.5 to 25 miles; half add one to three filters drawn
  around the record, half have none; half sort by distance, the rest by a random sort and
  order; one search in seven is a box of the same size instead. Page sizes 10 to 100.
- **8. cursor page N**: page N (10,000 unless `--cursor-page`) of 40 searches by cursor,
  10 a page (no filter, `status=offMarket`, `minYearBuilt=1940`, `propertyType=singleFamily`,
  `minBeds=2`; every sort, random order): each cursor is `meta.nextCursor` of page N - 1,
  asked once by offset before the run. The figure is the cost of one deep page.
- **9. fields**: 200 of the by-id paths asked whole and with `fields=id,listPrice`; the
  ratio of the median sizes of the two answers' bodies.
- **5. import**: `ingest.loader.load` of the synthetic set in one transaction (what
  `propdata data generate` runs), the time spent generating records taken out; then
  `markets.builder.rebuild`. A reused store reports the figures of the build that made it
  (its planner statistics are refreshed as a load by the current code leaves them).
- **6. memory**: VmRSS of each worker after loads 1, 2, 4, 7 and 8 (cache off), and on the
  cache-on server after the cache-hits run, the search mix and get by id (the cache full),
  with the anonymous part and Pss (smaps_rollup), judged by Pss: it counts a shared page (the
  mapped search index snapshot's, held once by the page cache) once over the processes.
- **Cache hits**: cache on; 10 ids and 10 searches, each asked on fresh connections until it is
  a hit eight times running (the cache is per worker), then warm-up and run; wrk counts `X-Cache`.
- **Connections per worker**: wrk's connections each worker held halfway through the run (from
  /proc). The workers race to accept them; `propdata serve` evens the spread out
  (kit/serving/spread.py), and the bare app is served with the same protocol, so alike.
- **5d-5f. data import end to end** (bench/cli_loads.py): the wall time of `propdata data
  import FILE`, process start to exit, on a JSON Lines file of 1, 1,000 or 10,000 new synthetic
  records (1, 10, 100 in a smoke run), each size on a fresh copy of the store (at scale-out the
  bench schema, the records removed again after each size). The load must be finished by the
  stored models (no refit): the command says so and the models' change count grows by the
  records, or the row fails. Beside it, the same file through `pipeline.run` in-process on
  another fresh copy (its phases: load, estimates, markets), the start-up alone (`propdata data
  import --help`, best of three), the same with the pipeline's imports (a process importing
  the CLI and `ingest.pipeline`), and the rest: the store's opening, the first use of the ZIP
  code table (the harness had it in memory), the output.
- **10, 11. --follow** (bench/follow.py; a store copy, own server): records appended to a JSONL
  file at the row's rate as `data import --follow` reads it, one in 20 timed to its commit and to
  GET by id answering it, a probe timing write-lock waits; 11: the search mix at 200 a second.
- **12-16. events** (bench/events_bench.py). 12: `events.produce.evaluate`, the producer's
  pass, on 10,000 records of the store, each changed (a price cut, a sale, a bedroom more, a
  new listing), against 1,000 saved searches of 200 owners whose filters are the search mix's
  (two thirds) and the radius mix's radius searches (a third). The target is the matching
  (the batches and `matches`: which searches each record matches, before and after); the
  whole pass, median of five runs, adds making every event found, about 10 µs each, and the
  search mix's national searches (no place named) match most of the batch. 13: a store copy
  served as above (`PROPDATA_WEBHOOK_ALLOWED_NETWORKS=127.0.0.1/32`), one saved search
  (`status=forSale`) and one endpoint at a local receiver (bench/webhooks.py's); `data import
  --follow` takes one listing at a time, a random 0.5-1.5 s after the last was delivered;
  from its commit (a read-only connection polls for the record every 2 ms) to the receiver's
  first POST of its events, through the server's producer and dispatcher. 14: the same
  server, four endpoints; events for 1.5 times the target rate over the run are committed to
  its event log (as the producer commits them) as wrk starts the search mix at half its
  saturated rate (each connection pausing after an answer), and its dispatcher (in the
  server: one worker of the host holds the dispatcher's turn and shares its loop with
  requests) delivers them; POSTs a second while the mix ran, the mix's figures beside, and
  the rate once it ended. 15: bench/event_log.py, `EventRepository.page` (100
  events) from random cursors of one owner's 1,000,000 events among 250,000 of others' (with
  --scaleout also on PostgreSQL). 16: bench/idle_streams.py, 1,000 idle
  `GET /v1/events/stream` on one worker of an empty store: Pss growth, then one event per
  owner reaching every stream.
- **19-21. bulk export** (bench/export.py): `propdata data export` of the store in a process
  of its own (19: wall time and that process's peak, VmHWM); the search mix (wrk, as row 2)
  on a served copy alone and then again while another export of the store runs (21); the
  largest file of a CSV snapshot downloaded again and again for 10 s through
  `GET /v1/exports/{id}/files/{name}` by one client on loopback (20).
- **22-23. replication** (bench/replication.py): a RESO Web API upstream (the tests' SAP CAP
  OData server) holding new records, pages of 1,000; one `propdata data replicate` pass into
  a copy of the store while wrk runs the search mix against it (22: records a second, the
  mix's p99 beside it against alone), then `--every 5` running while upstream records change
  a random 1-3 s apart (23: from the change to GET by id showing it, and to its webhook POST).
- **17. streams past an account's cap** (bench/stream_caps.py): one worker of an empty store,
  one Enterprise key (100 open streams); 1,000 `GET /v1/events/stream` of it asked for, 10 at
  a time, each on a socket of its own, while a probe asks `/health` every 5 ms on a
  connection of its own; p50 and p99 are /health's, while the streams are asked for and once
  they stand. **18. a long page of saved searches** (bench/search_counts.py): a copy of the
  store, one key's 500 saved searches of 1,000 ids each; after a first listing (which counts
  them all), 59 more `GET /v1/searches?limit=500` (7.6 MB each: the rest of the owner's 60
  management requests of a minute) one after another, with the same /health probe beside.
- Latencies are wrk's, closed loop (each connection waits for its answer), so at saturation
  p99 includes queueing. The machine is shared: compare ratios taken in the same run.
"""


def write_docs(markdown: str, path: Path = DOCS) -> None:
    """Put `markdown` (which starts with SECTION and ends with END) in place of the section's
    generated part: up to END when the file has it, so notes written below it survive a
    rerun; else up to the next "## " heading; appended when the section is missing."""
    text = path.read_text()
    start = text.find("\n" + SECTION + "\n")
    body = markdown.rstrip("\n") + "\n"
    if start == -1:
        path.write_text(text.rstrip("\n") + "\n\n" + body)
        log(f"wrote the table to {path}")
        return
    start += 1
    following = re.search(r"^## ", text[start + len(SECTION) :], flags=re.MULTILINE)
    section_end = start + len(SECTION) + following.start() if following else len(text)
    marker = text.find(END, start, section_end)
    if marker != -1:
        end = marker + len(END)
        rest = text[end:].lstrip("\n")
        text = text[:start] + body + ("\n" + rest if rest else "")
    else:
        text = text[:start] + body + ("\n" + text[section_end:] if following else "")
    path.write_text(text)
    log(f"wrote the table to {path}")


# -- main -------------------------------------------------------------------------------------


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument(
        "--properties", type=int, help="synthetic properties (default 1,000,000; smoke 3,000)"
    )
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--as-of", type=dt.date.fromisoformat, default=dt.date(2026, 11, 21),
                   help="the as-of date of the data (fixed, so a built store can be reused)")  # fmt: skip
    p.add_argument(
        "--duration", type=float, help="seconds of wrk per scenario (default 20; smoke 2)"
    )
    p.add_argument(
        "--warmup", type=float, help="seconds of warm-up before each (default 5; smoke 1)"
    )
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--wrk-threads", type=int, default=1,
                   help="wrk threads (1 leaves the cores to the server; wrk is not the limit)")  # fmt: skip
    p.add_argument("--scaleout", action="store_true", help="also PostgreSQL + Redis")
    p.add_argument("--smoke", action="store_true", help="the small version CI runs")
    p.add_argument("--write-docs", action="store_true", help="put the table in docs/performance.md")
    p.add_argument("--folder", type=Path, default=BENCH / ".data", help="where stores are built")
    p.add_argument("--no-datasette", action="store_true", help="leave the datasette comparison out")
    p.add_argument(
        "--searches",
        type=int,
        help="distinct searches in the mixes (default 40,000: more than a run asks)",
    )
    p.add_argument("--rebuild", action="store_true", help="build the stores even when reusable")
    p.add_argument("--cursor-page", type=int,
                   help="the page the cursor scenario asks (default 10,000; smoke 20)")  # fmt: skip
    p.add_argument("--no-follow", action="store_true", help="leave the --follow rows out")
    p.add_argument("--follow-rate", type=float,
                   help="records a second appended for row 10 (default 2,000; smoke 200)")  # fmt: skip
    p.add_argument("--follow-seconds", type=float,
                   help="seconds of appending for row 10 (default 30; smoke 3)")  # fmt: skip
    p.add_argument("--follow-low-rate", type=float, default=200.0,
                   help="records a second appended during row 11")  # fmt: skip
    p.add_argument("--no-loads", action="store_true",
                   help="leave the rows of `data import FILE` end to end (5d-5f) out")  # fmt: skip
    p.add_argument("--no-events", action="store_true", help="leave the events rows (12-16) out")
    p.add_argument("--no-export", action="store_true", help="leave the export rows (19-21) out")
    p.add_argument("--no-replication", action="store_true",
                   help="leave the replication rows (22-23) out")  # fmt: skip
    args = p.parse_args(argv)
    args.follow_rate = args.follow_rate or (200.0 if args.smoke else float(follow.TARGET_RATE))
    args.follow_seconds = args.follow_seconds or (3.0 if args.smoke else 30.0)
    args.properties = args.properties or (3_000 if args.smoke else 1_000_000)
    args.duration = args.duration or (2.0 if args.smoke else 20.0)
    args.warmup = args.warmup if args.warmup is not None else (1.0 if args.smoke else 5.0)
    args.ids = 200 if args.smoke else 5_000
    args.searches = args.searches or (300 if args.smoke else 40_000)
    args.check = 20 if args.smoke else 100
    args.cursor_page = args.cursor_page or (20 if args.smoke else 10_000)
    args.records, args.changes = (2_000, 3) if args.smoke else (60_000, 30)  # replication's
    return args


def measure_export(
    db_path: Path, reqs: Any, key: str, args: Any, logs: Path
) -> tuple[dict[str, Any], dict[str, Any], exporting.Beside]:
    """Rows 19-21 (bench/export.py): an export of the store alone (time, peak), the search
    mix beside another, and a file's download."""
    import tempfile

    store_env = {"PROPDATA_DATABASE_URL": str(db_path)}
    with tempfile.TemporaryDirectory(dir=db_path.parent, prefix="export-") as scratch:
        figures = exporting.export_of(store_env, Path(scratch))
    with (
        tempfile.TemporaryDirectory(dir=db_path.parent, prefix="export-") as scratch,
        propdata_server("propdata-export", store_env, 0, args, logs) as server,
    ):
        beside = exporting.search_beside(server, store_env, Path(scratch), reqs.search, args, key)
    return figures, exporting.download_rate(db_path), beside


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    command = "python bench/run.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    args.wrk = ensure_wrk()
    args.folder.mkdir(parents=True, exist_ok=True)
    lock = (args.folder / "run.lock").open("w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        # Another run builds or measures these stores: sharing them would corrupt a build,
        # and sharing the cores would spoil both runs' figures.
        log(f"another benchmark run holds {args.folder}; waiting for it to finish")
        fcntl.flock(lock, fcntl.LOCK_EX)
    load_at_start = os.getloadavg()
    started = time.monotonic()
    logs = args.folder / "logs"
    logs.mkdir(exist_ok=True)

    log(f"data: {args.properties:,} properties, seed {args.seed}, as of {args.as_of}")
    builds: dict[str, bench_data.Build] = {}
    sqlite_build = asyncio.run(
        bench_data.ensure_sqlite(
            args.folder, args.properties, args.seed, args.as_of, rebuild=args.rebuild
        )
    )
    builds["embedded"] = sqlite_build
    db_path = Path(sqlite_build.url)
    log(("reused" if sqlite_build.reused else "built") + f" {db_path}: import"
        f" {sqlite_build.import_rate:,.0f} records/s, rebuild {sqlite_build.rebuild_s:.1f} s")  # fmt: skip
    for stale in db_path.parent.glob(db_path.stem + "-usage.db*"):
        stale.unlink()  # the limiter's counters start empty every run
    key = asyncio.run(bench_data.create_key(str(db_path)))
    sample = bench_data.sample(str(db_path), args.ids, 2_000, args.seed)
    reqs = make_requests(args.folder / "requests", sample, args)

    runs: dict[str, StoreRun] = {}
    runs["embedded"] = run_store("embedded", {"PROPDATA_DATABASE_URL": str(db_path)}, key,
                                 reqs, args, logs, None)  # fmt: skip
    ds: DatasetteRun | None = None
    if not args.no_datasette:
        ds = run_datasette(db_path, reqs, runs["embedded"].search_answers, args, logs)
    followed = None if args.no_follow else follow.measure(db_path, reqs, args, logs)
    loaded = [] if args.no_loads else [cli_loads.measure(db_path, args)]
    evented = None if args.no_events else events_bench.measure(db_path, reqs, args, logs)
    exported = None if args.no_export else measure_export(db_path, reqs, key, args, logs)
    replicated = None if args.no_replication else replication.measure(db_path, reqs, args, logs)

    notes: list[str] = []
    if args.scaleout:
        why = scaleout_available()
        if why:
            notes.append(f"Scale-out skipped: PostgreSQL or Redis unreachable ({why}).")
            log(notes[-1])
        else:
            root = args.folder
            pg_build = asyncio.run(
                bench_data.ensure_postgres(
                    root,
                    PG_URL,
                    args.properties,
                    args.seed,
                    args.as_of,
                    throwaway=args.smoke,
                    rebuild=args.rebuild,
                )
            )
            builds["scale-out"] = pg_build
            log(("reused" if pg_build.reused else "built") + f" PostgreSQL: import"
                f" {pg_build.import_rate:,.0f} records/s, rebuild {pg_build.rebuild_s:.1f} s")  # fmt: skip
            pg_key = asyncio.run(bench_data.create_key(pg_build.url))
            notes.append(
                f"Scale-out: {asyncio.run(bench_data.server_versions(PG_URL, REDIS_URL))}."
            )
            env = {"PROPDATA_DATABASE_URL": pg_build.url, "PROPDATA_REDIS_URL": REDIS_URL}
            try:
                runs["scale-out"] = run_store("scale-out", env, pg_key, reqs, args, logs,
                                              runs["embedded"].bodies)  # fmt: skip
                if not args.no_loads:
                    loaded.append(cli_loads.measure_postgres(pg_build.url, args))
            finally:
                forget_redis_key(key_id_of(pg_build.url, pg_key))
                if args.smoke:
                    asyncio.run(bench_data.drop_postgres(PG_URL, pg_build.url))

    rows = build_rows(builds, runs, ds, len(reqs.searches), args.cursor_page, followed)
    for one in loaded:
        rows += cli_loads.rows(one)
    if evented is not None:
        rows += events_bench.rows(evented)
    if exported is not None:
        rows += exporting.rows(*exported)
    if replicated is not None:
        rows += replication.rows(replicated)
    judged = not args.smoke
    size = f"{args.properties:,} properties (seed {args.seed}, as of {args.as_of})"
    heading = (
        f"{SECTION}\n`{command}` ({dt.date.today()}; {size}; {args.duration:g} s of wrk per"
        f" scenario after {args.warmup:g} s of warm-up, {args.connections} connections,"
        f" {args.workers} workers; code at {bench_data.code_version()};"
        f" {time.monotonic() - started:.0f} s in all).\n\n"
        f"Machine: {machine_facts(load_at_start)}.\n\n"
        "Targets are set for the embedded store (SQLite); scale-out rows (PostgreSQL and Redis"
        " on this machine, over loopback) are judged against the same numbers for comparison.\n"
    )
    markdown = heading + "\n" + table(rows, judged) + "\n"
    if notes:
        markdown += "\n" + "\n".join(notes) + "\n"
    if ds and ds.details:
        markdown += "\nSearches whose rows differ from datasette's:\n" + "".join(
            f"- `{d}`\n" for d in ds.details[:10]
        )
    markdown += "\n" + SCENARIO_NOTES + "\n" + END + "\n"
    print(markdown)
    if args.write_docs:
        write_docs(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())

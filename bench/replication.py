"""`propdata data replicate` into the make bench store: its throughput beside the search mix,
and how soon an upstream change is served and sent to a webhook.

    .venv/bin/python bench/replication.py --properties 20000
    .venv/bin/python bench/replication.py --properties 1000000       # what make bench runs

On a copy of the make bench store (bench/.data/sqlite-p{N}-s7-2026-11-21, built when
missing), with `propdata serve --workers 2` (cache off) running on it, and as upstream the
replication tests' OData 4 server (SAP CAP from npm, tests/replication/odata_server.py)
serving `--records` RESO listings that are not in the store (ListingKeys R0000001...,
ZIP codes, cities and coordinates of the store's records, modified over the day before the
run), the server's page limit and the source's `--page-size` both PAGE_SIZE:

1. **Throughput**: the search mix with wrk on the server alone; then `propdata data
   replicate bench` (one pass, the source added with `propdata sources add` and its default
   pacing) while wrk drives the same mix, started 2 s into the pass. The pass's records a
   second (records read over its wall time, as the command prints it) and the mix's p99
   beside the p99 without the replicator.
2. **Freshness**: `propdata data replicate bench --every 5` running; one key with a saved
   search watching the CHANGES records about to change and a webhook endpoint at a local
   receiver (bench/webhooks.py's). One after the other, a random 1-3 s apart, each record's
   ListPrice is cut upstream (an OData PATCH with a new ModificationTimestamp); from the
   PATCH's answer, the time until `GET /v1/properties/{id}` shows the new price (polled
   every 20 ms) and until the receiver gets the POST of its `property.priceChanged` event.
   p50 and p99 of both.

`measure` runs both and `rows` makes their make bench rows.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT))

import bench_data  # noqa: E402
import follow  # noqa: E402
from tests.replication.odata_server import ODataServer, serving  # noqa: E402

SOURCE = "bench"
PAGE_SIZE = 1_000
EVERY = 5
TARGET_RATE = 2_000.0
TARGET_SEARCH_P99_MS = 30.0
TARGET_FRESH_P99_S = 10.0
GIVE_UP_S = 30.0
"""A change not served (or not delivered) this long after its PATCH is missed."""
RATE = re.compile(r"([\d,]+) records read in ([\d,]+) pages .*?, ([\d,]+) records/s")


@dataclass
class Throughput:
    records: int
    read: int = 0
    pages: int = 0
    rate: float = 0.0
    """Records a second of the pass, as `data replicate` reports it (from its first request)."""
    wall_s: float = 0.0
    """The command's wall time, its start (imports, the store opened) included."""
    stored: int = 0
    """The upstream's records in the store after the pass."""
    overlapped: bool = True
    """Whether the pass was still running when wrk finished."""
    search_alone: Any = None
    search_replicating: Any = None
    exit_code: int = 0


@dataclass
class Freshness:
    changes: int
    served: list[float] = field(default_factory=list)
    """Seconds from each PATCH's answer to GET by id showing it."""
    delivered: list[float] = field(default_factory=list)
    """Seconds from each PATCH's answer to its event's POST at the receiver."""
    unserved: int = 0
    undelivered: int = 0


@dataclass
class ReplicationRun:
    throughput: Throughput
    freshness: Freshness | None = None


def _stamp(moment: float) -> str:
    return (
        dt.datetime.fromtimestamp(moment, dt.UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def upstream_rows(store: Path, count: int, seed: int, now: float) -> list[dict[str, Any]]:
    """`count` RESO listings for sale with new keys, placed where the store's records are,
    modified a second apart over the day before `now`."""
    places = bench_data.sample(str(store), 0, 2_000, seed).rows
    rng = random.Random(seed)
    start = now - 86_400
    rows = []
    for n in range(1, count + 1):
        place = rng.choice(places)
        beds = rng.randint(1, 5)
        rows.append({
            "ListingKey": f"R{n:07d}",
            "ModificationTimestamp": _stamp(start + n * 86_000 / count),
            "StandardStatus": "Active", "PropertyType": "Residential",
            "PropertySubType": "SingleFamilyResidence", "StreetNumber": str(rng.randint(1, 9999)),
            "StreetName": f"Replica {n % 500}", "StreetSuffix": "St", "City": place["city"],
            "StateOrProvince": place["state"], "PostalCode": place["zip_code"],
            "ListPrice": rng.randrange(80_000, 900_000, 1_000), "DaysOnMarket": rng.randint(0, 90),
            "BedroomsTotal": beds, "BathroomsTotalInteger": max(1, beds - 1),
            "LivingArea": rng.randrange(600, 4_000, 10), "LotSizeArea": 0.2,
            "LotSizeUnits": "Acres", "YearBuilt": rng.randint(1920, 2024),
            "Latitude": place["latitude"], "Longitude": place["longitude"],
        })  # fmt: skip
    return rows


def _env(store: Path, args: Any) -> dict[str, str]:
    return {**os.environ, "PROPDATA_DATABASE_URL": str(store.resolve()),
            "PROPDATA_AS_OF": args.as_of.isoformat(), "PROPDATA_LOG_LEVEL": "WARNING"}  # fmt: skip


def _propdata() -> str:
    return str(Path(sys.executable).parent / "propdata")


def add_source(store: Path, upstream: ODataServer, args: Any) -> None:
    subprocess.run([_propdata(), "sources", "add", SOURCE, upstream.url, "--page-size",
                    str(PAGE_SIZE)], env=_env(store, args), check=True,
                   capture_output=True)  # fmt: skip


def start_replicator(
    store: Path, folder: Path, args: Any, *options: str
) -> subprocess.Popen[bytes]:
    out = (folder / "replicator.log").open("ab")
    try:
        return subprocess.Popen(
            [_propdata(), "data", "replicate", SOURCE, "--rejects", str(folder / "rejects.csv"),
             *options], env=_env(store, args), stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, cwd=folder,
        )  # fmt: skip
    finally:
        out.close()


def throughput(server: Any, store: Path, folder: Path, reqs: Any, key: str,
               args: Any) -> Throughput:  # fmt: skip
    """Phase 1 (see the module's docstring)."""
    import harness
    from harness import log

    result = Throughput(args.records)
    result.search_alone = harness.measure(server, reqs.search, args, key,
                                          "search mix, no replicator")  # fmt: skip
    server.wait_idle()
    log_path = folder / "replicator.log"
    log_path.write_bytes(b"")
    started = time.monotonic()
    replicator = start_replicator(store, folder, args)
    try:
        time.sleep(2)  # its start (imports, the store opened) is not part of the mix's run
        load = harness.wrk(server.base, reqs.search, args.duration, args, key, server=server)
        result.overlapped = replicator.poll() is None
        result.search_replicating = load
        result.exit_code = replicator.wait(3_600)
    finally:
        if replicator.poll() is None:
            follow.stop_follower(replicator)
    result.wall_s = time.monotonic() - started
    text = log_path.read_text(errors="replace")
    found = RATE.findall(text)
    if result.exit_code != 0 or not found:
        raise RuntimeError(f"data replicate exited {result.exit_code}:\n{text[-2000:]}")
    read, pages, rate = found[-1]
    result.read, result.pages = int(read.replace(",", "")), int(pages.replace(",", ""))
    result.rate = float(rate.replace(",", ""))
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        (result.stored,) = db.execute(
            "SELECT count(*) FROM properties WHERE id LIKE ?", (f"{SOURCE}-%",)
        ).fetchone()
    log(f"replicate: {result.read:,} records in {result.pages} pages at {result.rate:,.0f}"
        f" records/s ({result.wall_s:.1f} s of wall time with its start; {result.stored:,} in"
        f" the store); search mix beside it {load.rps:,.0f} rps, p99 {load.ms('p99'):.2f} ms"
        f" against {result.search_alone.ms('p99'):.2f} ms alone"
        f"{'' if result.overlapped else ' (the pass ended before wrk did)'}")  # fmt: skip
    return result


def _event_pids(accounts: sqlite3.Connection, ids: list[str], watched: set[str]) -> dict[str, str]:
    """The record each of these `property.priceChanged` events is about (event id: record)."""
    marks = ", ".join("?" for _ in ids)
    found = {}
    for event_id, body in accounts.execute(
        f"SELECT id, body FROM events WHERE type = 'property.priceChanged' AND id IN ({marks})",
        ids,
    ):
        for pid in watched:
            if f'"{pid}"' in body:
                found[event_id] = pid
    return found


def freshness(server: Any, store: Path, folder: Path, upstream: ODataServer,
              rows_: list[dict[str, Any]], key: str, args: Any) -> Freshness:  # fmt: skip
    """Phase 2 (see the module's docstring)."""
    from harness import log

    import webhooks
    from propdata.config import accounts_url

    rng = random.Random(args.seed + 1)
    changed = rng.sample(rows_, args.changes)
    watched = {f"{SOURCE}-{row['ListingKey']}": row for row in changed}
    stamps = folder / "received.txt"
    stamps.write_bytes(b"")
    receiver, port = webhooks.start_receiver(stamps)
    result = Freshness(args.changes)
    headers = {"Authorization": f"Bearer {key}"}
    replicator = start_replicator(store, folder, args, "--every", str(EVERY))
    accounts = sqlite3.connect(f"file:{accounts_url(str(store))}?mode=ro", uri=True)
    try:
        with httpx.Client(base_url=server.base, timeout=30, headers=headers) as client:
            made = client.post("/v1/searches", json={"name": "replicated",
                                                     "propertyIds": sorted(watched)})  # fmt: skip
            made.raise_for_status()
            hook = client.post("/v1/webhooks", json={"url": f"http://127.0.0.1:{port}/hook"})
            hook.raise_for_status()
            time.sleep(EVERY + 3)  # its first pass (the overlap re-read) is behind it
            pending: dict[str, tuple[float, int]] = {}
            served: dict[str, float] = {}
            delivered: dict[str, float] = {}
            seen = 0
            queue = list(watched.items())
            due = time.monotonic() + rng.uniform(1, 3)
            while queue or pending:
                if queue and time.monotonic() >= due:
                    pid, row = queue.pop(0)
                    price = int(row["ListPrice"]) - 5_000
                    upstream.patch(row["ListingKey"], ListPrice=price,
                                   ModificationTimestamp=_stamp(time.time()))  # fmt: skip
                    pending[pid] = (time.time(), price)
                    due = time.monotonic() + rng.uniform(1, 3)
                for pid, (at, price) in list(pending.items()):
                    if pid not in served:
                        answer = client.get(f"/v1/properties/{pid}")
                        if (
                            answer.status_code == 200
                            and answer.json()["data"]["listPrice"] == price
                        ):
                            served[pid] = time.time() - at
                got = webhooks.received(stamps)
                fresh, seen = got[seen:], len(got)
                if fresh:
                    about = _event_pids(accounts, [e for _, e in fresh], set(pending))
                    for moment, event_id in fresh:
                        pid = about.get(event_id, "")
                        if pid in pending and pid not in delivered:
                            delivered[pid] = moment - pending[pid][0]
                for pid, (at, _) in list(pending.items()):
                    done = pid in served and pid in delivered
                    if done or time.time() - at > GIVE_UP_S:
                        del pending[pid]
                time.sleep(0.02)
    finally:
        follow.stop_follower(replicator)
        accounts.close()
        receiver.kill()
        receiver.join()
    result.served = [served[p] for p in watched if p in served]
    result.delivered = [delivered[p] for p in watched if p in delivered]
    result.unserved = len(watched) - len(result.served)
    result.undelivered = len(watched) - len(result.delivered)
    q = follow._q
    log(f"freshness, --every {EVERY}: {args.changes} changes; served p50"
        f" {q(result.served, 50):.2f} s, p99 {q(result.served, 99):.2f} s; delivered p50"
        f" {q(result.delivered, 50):.2f} s, p99 {q(result.delivered, 99):.2f} s"
        f"{f'; {result.unserved} not served' if result.unserved else ''}"
        f"{f'; {result.undelivered} not delivered' if result.undelivered else ''}")  # fmt: skip
    return result


def measure(base_store: Path, reqs: Any, args: Any, logs: Path) -> ReplicationRun:
    """Both phases on a copy of `base_store`, with their own server and upstream; `reqs` and
    `args` are bench/run.py's (its request lists and wrk settings) with --records and
    --changes."""
    import harness

    folder = args.folder / "replication"
    store = follow.scratch_store(base_store, folder)
    key = asyncio.run(bench_data.create_key(str(store)))
    rows_ = upstream_rows(store, args.records, args.seed + 30, time.time())
    env = {"PROPDATA_DATABASE_URL": str(store),
           "PROPDATA_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32"}  # fmt: skip
    with (tempfile.TemporaryDirectory(prefix="propdata-upstream-") as scratch,
          serving(Path(scratch), rows_, max_page=PAGE_SIZE) as upstream,
          harness.propdata_server("propdata-replication", env, 0, args, logs) as server):  # fmt: skip
        add_source(store, upstream, args)
        result = ReplicationRun(throughput(server, store, folder, reqs, key, args))
        if args.changes:
            result.freshness = freshness(server, store, folder, upstream, rows_, key, args)
    return result


def rows(result: ReplicationRun, label: str = "embedded") -> list[Any]:
    """The make bench table's rows of `result`."""
    from harness import Row

    out: list[Any] = []
    t = result.throughput
    alone, beside = t.search_alone, t.search_replicating
    if beside is not None and alone is not None:
        p99 = beside.ms("p99")
        complete = t.stored == t.records
        out.append(Row(
            f"22. data replicate of {t.records:,} RESO records (pages of {PAGE_SIZE:,})"
            " beside the search mix", label, t.rate, beside.ms("p50"), p99,
            result=f"{t.read:,} records in {t.pages} pages at {t.rate:,.0f} records/s"
            f" ({t.wall_s:.1f} s with the command's start), {t.stored:,} stored; search mix p99"
            f" {p99:,.1f} ms against {alone.ms('p99'):,.1f} ms without the replicator"
            f" ({beside.rps:,.0f} against {alone.rps:,.0f} rps)"
            f"{'' if t.overlapped else '; the pass ended before the mix did'}",
            target=f"≥ {TARGET_RATE:,.0f} records/s, search p99 ≤ {TARGET_SEARCH_P99_MS:.0f} ms",
            met=complete and t.rate >= TARGET_RATE and p99 <= TARGET_SEARCH_P99_MS,
            errors=beside.failed,
        ))  # fmt: skip
    f = result.freshness
    if f is not None:
        q = follow._q
        worst = max(q(f.served, 99), q(f.delivered, 99))
        out.append(Row(
            f"23. an upstream change served and sent, data replicate --every {EVERY}", label,
            p50_ms=q(f.served, 50) * 1000, p99_ms=q(f.served, 99) * 1000,
            result=f"{f.changes} ListPrice cuts a random 1-3 s apart: GET by id shows it p50"
            f" {q(f.served, 50):.2f} s, p99 {q(f.served, 99):.2f} s; its webhook POST p50"
            f" {q(f.delivered, 50):.2f} s, p99 {q(f.delivered, 99):.2f} s"
            f"{f'; {f.unserved} not served in {GIVE_UP_S:g} s' if f.unserved else ''}"
            f"{f'; {f.undelivered} not delivered in {GIVE_UP_S:g} s' if f.undelivered else ''}",
            target=f"both p99 ≤ {TARGET_FRESH_P99_S:g} s",
            met=not f.unserved and not f.undelivered and worst <= TARGET_FRESH_P99_S,
        ))  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    import harness

    p = harness.script_parser(__doc__)
    p.add_argument("--properties", type=int, default=20_000)
    p.add_argument("--records", type=int, default=60_000, help="RESO records upstream")
    p.add_argument("--changes", type=int, default=30, help="upstream changes timed, phase 2")
    p.add_argument("--duration", type=float, default=20.0, help="seconds of wrk")
    p.add_argument("--warmup", type=float, default=5.0)
    args = harness.served_args(p, argv)
    args.searches, args.cursor_page, args.smoke = 40_000, 10_000, False
    return harness.served_run("replication.py", "replication", argv, args, measure, rows)


if __name__ == "__main__":
    sys.exit(main())

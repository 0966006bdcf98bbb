"""The search mix while a follower commits records, side by side with no writes.

    .venv/bin/python bench/live_search.py --properties 100000 --rate 200 --seconds 20

Builds (or reuses) bench/run.py's synthetic store of `--properties`, copies it to a scratch
file (the follower writes there, never into the reused store), serves it with `propdata
serve` (`--workers`, cache off) and drives make bench's search mix with wrk twice: with no
writes, then while a writer process commits `--rate` records a second, one commit a second
(as `data import --follow` does): three in four new records, the rest records it sent
before with a later lastUpdated (updates that move them in that order), each commit through
`ingest.loader.load`. The search index takes each commit as a delta and folds it into a new
snapshot past `search.live`'s rule; the server's log is counted for the folds.

Prints one table: answers a second, p50 and p99 of each run, and the server's CPU time per
answer (its workers', the delta's upkeep and any snapshot build included: the figure to
compare on a machine other work shares), with the records committed and the folds. Target (docs/measurements.md, "Live data"): at 1,000,000 properties, p99 ≤ 30 ms while
the follower takes 200 records a second.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import msgspec

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bench_data  # noqa: E402
import bench_mix  # noqa: E402

LUA = BENCH / "wrk" / "rotate.lua"
AS_OF = dt.date(2026, 11, 21)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


TICKS = os.sysconf("SC_CLK_TCK")


def server_cpu(pid: int) -> float:
    """CPU seconds of the server and its workers (and the snapshot builds they waited for)."""
    total = 0.0
    pending = [pid]
    while pending:
        at = pending.pop()
        try:
            fields = Path(f"/proc/{at}/stat").read_text().rsplit(")", 1)[1].split()
            children = Path(f"/proc/{at}/task/{at}/children").read_text().split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15]) / TICKS  # utime, stime, cutime, cstime
        pending += [int(c) for c in children]
    return total


def wrk(base: str, paths: Path, seconds: float, connections: int, key: str) -> dict[str, float]:
    command = ["wrk", f"-t{min(2, connections)}", f"-c{connections}", f"-d{round(seconds)}s",
               "--timeout", "30s", "-s", str(LUA), base, "--", str(paths)]  # fmt: skip
    done = subprocess.run(command, env={**os.environ, "BENCH_KEY": key}, capture_output=True,
                          text=True, check=True)  # fmt: skip
    line = next(x for x in done.stdout.splitlines() if x.startswith("BENCH_JSON "))
    figures = json.loads(line.removeprefix("BENCH_JSON "))
    answered = figures["requests"] - sum(figures["errors"].values())
    return {
        "rps": answered / (figures["duration_us"] / 1e6),
        "p50": figures["latency_us"]["p50"] / 1000,
        "p99": figures["latency_us"]["p99"] / 1000,
        "answers": answered,
        "errors": sum(figures["errors"].values()),
    }


async def follow(url: str, rate: int, seconds: float) -> dict[str, float]:
    """Commit `rate` records a second for `seconds` (the writer process)."""
    from propdata.ingest import synthetic
    from propdata.ingest.loader import load
    from propdata.kit.db import connect

    db = await connect(url)
    source = synthetic.generate(int(rate * seconds) + rate, 1234, AS_OF)
    sent: list[object] = []
    committed = rejected = commits = 0
    started = time.monotonic()
    try:
        while time.monotonic() - started < seconds:
            tick = time.monotonic()
            batch = []
            fresh = rate - min(len(sent), rate // 4)
            for _ in range(fresh):
                _, made = next(source)
                made = msgspec.structs.replace(made, id=made.id.replace("syn-", "live-"))
                batch.append(made)
            stamp = (dt.datetime(2026, 11, 21, 12) + dt.timedelta(seconds=commits + 1)).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            )
            for again in sent[: rate - fresh]:
                batch.append(msgspec.structs.replace(again, last_updated=stamp))
            sent = sent[rate - fresh :] + batch[:fresh]
            outcome = await load(db, iter(enumerate(batch, 1)), origin="follow", as_of=AS_OF)
            committed += len(batch) - len(outcome.rejects)
            rejected += len(outcome.rejects)
            commits += 1
            await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
    finally:
        await db.close()
    elapsed = time.monotonic() - started
    return {"committed": committed, "rejected": rejected, "commits": commits, "seconds": elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--properties", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--root", type=Path, default=BENCH / ".data")
    parser.add_argument("--rate", type=int, default=200, help="records committed a second")
    parser.add_argument("--seconds", type=float, default=20.0, help="of each wrk run")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--searches", type=int, default=40_000)
    parser.add_argument("--writer", nargs=3, metavar=("URL", "SECONDS", "REPORT"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args()
    if args.writer:
        url, seconds, report = args.writer
        Path(report).write_text(json.dumps(asyncio.run(follow(url, args.rate, float(seconds)))))
        return

    built = asyncio.run(bench_data.ensure_sqlite(args.root, args.properties, args.seed, AS_OF))
    scratch = args.root / f"live-p{args.properties}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    db_path = scratch / "propdata.db"
    with sqlite3.connect(built.url) as source, sqlite3.connect(db_path) as target:
        source.backup(target)
    sample = bench_data.sample(str(db_path), 10, 2_000, args.seed)
    searches = bench_mix.search_mix(sample.rows, args.searches, args.seed)
    paths = scratch / "search.txt"
    paths.write_text("".join(s.path + "\n" for s in searches))
    key = asyncio.run(bench_data.create_key(str(db_path)))

    env = {k: v for k, v in os.environ.items() if not k.startswith("PROPDATA_")}
    env.update({"PROPDATA_DATABASE_URL": str(db_path), "PROPDATA_CACHE_TTL": "0",
                "PROPDATA_LOG_LEVEL": "INFO", "PROPDATA_AS_OF": AS_OF.isoformat()})  # fmt: skip
    port = free_port()
    log = (scratch / "server.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "propdata", "serve", "--port", str(port), "--workers",
         str(args.workers)], env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    rows: list[tuple[str, dict[str, float]]] = []
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            try:
                if httpx.get(base + "/health", timeout=2).json()["checks"]["searchIndex"] == "ok":
                    break
            except (httpx.TransportError, ValueError, KeyError):
                pass
            time.sleep(0.2)
        time.sleep(2.0)
        wrk(base, paths, 5, args.connections, key)  # warm-up
        before = server_cpu(server.pid)
        rows.append(("no writes", wrk(base, paths, args.seconds, args.connections, key)))
        rows[-1][1]["cpu"] = server_cpu(server.pid) - before
        report = scratch / "writer.json"
        writer = subprocess.Popen(
            [sys.executable, __file__, "--rate", str(args.rate), "--writer", str(db_path),
             str(args.seconds + 8), str(report)], env=env,
        )  # fmt: skip
        time.sleep(3.0)  # the first commits land, the writer at its pace
        before = server_cpu(server.pid)
        rows.append((f"{args.rate} records/s committed",
                     wrk(base, paths, args.seconds, args.connections, key)))  # fmt: skip
        rows[-1][1]["cpu"] = server_cpu(server.pid) - before
        writer.wait(120)
        written = json.loads(report.read_text())
    finally:
        server.terminate()
        server.wait(30)
        log.close()
    text = (scratch / "server.log").read_text()
    folds = text.count("search index snapshot") - 1  # the first is the start's, if built
    print(f"{args.properties:,} properties, {args.workers} workers, {args.connections} "
          f"connections, {args.seconds:.0f} s a run; the writer committed "
          f"{written['committed']:,} records in {written['commits']} commits over "
          f"{written['seconds']:.0f} s ({written['rejected']} rejected); snapshots built "
          f"during the run: {max(folds, 0)}")  # fmt: skip
    print("| run | answers/s | p50 ms | p99 ms | server CPU µs an answer | errors |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, found in rows:
        each = found["cpu"] / max(1.0, found["answers"]) * 1e6
        print(f"| {name} | {found['rps']:,.0f} | {found['p50']:.2f} | {found['p99']:.2f} |"
              f" {each:,.0f} | {found['errors']:.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()

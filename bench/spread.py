"""Connections spread over the workers, with and without `propdata serve`'s evening out.

    .venv/bin/python bench/spread.py --list search --rounds 3 --runs 4 --seconds 5

The workers of one server race to accept each connection, and a keep-alive connection stays
with the worker that won it (kit/serving/spread.py). Each round starts two servers in turn on the
make bench store (bench/.data/sqlite-p1000000-s7-2026-11-21, built by bench/run.py), two
workers each, the response cache off:

- `on`: `propdata serve`, which evens the connections out;
- `off`: the same app and protocol under uvicorn's own supervisor without the workers' file,
  which is `propdata serve` without the evening out.

Each server is warmed up for 3 s, then wrk makes `--runs` runs of `--seconds` on the make
bench request list (16 connections opened at once, fresh for every run). For each run it
prints how many connections each worker held halfway through, the answers a second, p50
and p99.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from propdata.kit.serving.spread import SLOTS_ENV

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bench_data  # noqa: E402
import harness  # noqa: E402

STORE = BENCH / ".data" / "sqlite-p1000000-s7-2026-11-21" / "propdata.db"
PROTOCOL = "propdata.kit.serving.protocol:BoundedHttpToolsProtocol"


def server(variant: str, env: dict[str, str], logs: Path) -> harness.Server:
    port = harness.free_port()
    if variant == "on":
        argv = [str(Path(sys.executable).parent / "propdata"), "serve", "--host", "127.0.0.1",
                "--port", str(port), "--workers", "2"]  # fmt: skip
    else:
        argv = [sys.executable, "-m", "uvicorn", "propdata.app:asgi", "--factory", "--host",
                "127.0.0.1", "--port", str(port), "--workers", "2", "--loop", "uvloop",
                "--http", PROTOCOL, "--log-level", "warning", "--no-access-log"]  # fmt: skip
        env = {**env, "PROPDATA_WORKERS": "2"}  # what `propdata serve` sets
    return harness.Server(f"spread-{variant}", argv, env, port, 2, "/health", logs)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--store", type=Path, default=STORE)
    p.add_argument("--list", default="search", choices=["search", "ids", "offset", "radius"])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--runs", type=int, default=4)
    p.add_argument("--seconds", type=float, default=5.0)
    args: Any = p.parse_args()
    args.wrk, args.connections, args.wrk_threads = harness.ensure_wrk(), 16, 1
    paths = args.store.parent.parent / "requests" / f"{args.list}.txt"
    logs = args.store.parent.parent / "logs"
    logs.mkdir(exist_ok=True)
    env = {**os.environ, "PROPDATA_DATABASE_URL": str(args.store), "PROPDATA_CACHE_TTL": "0",
           "PROPDATA_LOG_LEVEL": "WARNING", "PROPDATA_AS_OF": "2026-11-21"}  # fmt: skip
    env.pop(SLOTS_ENV, None)
    key = asyncio.run(bench_data.create_key(str(args.store)))
    print(f"store {args.store}; list {args.list}; code {bench_data.code_version()};"
          f" load {os.getloadavg()}", flush=True)  # fmt: skip
    for _ in range(args.rounds):
        for variant in ("off", "on"):
            with server(variant, env, logs) as running:
                harness.wrk(running.base, paths, 3, args, key)
                for _ in range(args.runs):
                    running.wait_idle()
                    load = harness.wrk(running.base, paths, args.seconds, args, key,
                                       server=running)  # fmt: skip
                    spread = "/".join(map(str, load.spread))
                    print(f"{variant:>3}: connections {spread:>5}, {load.rps:,.0f} rps,"
                          f" p50 {load.ms('p50'):.2f} ms, p99 {load.ms('p99'):.2f} ms"
                          f"{f', {load.failed} failed' if load.failed else ''}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

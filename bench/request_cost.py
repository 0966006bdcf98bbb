"""Server CPU time per request, for before/after comparisons on a shared machine.

    .venv/bin/python bench/request_cost.py --store bench/.data/sqlite-p1000000-... \
        --requests bench/.data/requests [--python /other/tree/.venv/bin/python] [--rounds 3]

Throughput on a machine other jobs share moves with their load; the CPU seconds the server
process spends per answered request move much less. This serves the store with
`propdata serve --workers 1` (from `--python`'s environment, so two checkouts can be
compared on the same store), drives each request list of `bench/run.py` (ids, search,
offset) with wrk for `--seconds`, and divides the server's user+system CPU time
(/proc/<pid>/stat) by the answers wrk counted. Several rounds, alternating nothing: run it
once per tree, interleaved, and compare medians. PostgreSQL's and Redis's own CPU time are
not included (pass --pg/--redis to serve a scale-out store).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

BENCH = Path(__file__).resolve().parent
LUA = BENCH / "wrk" / "rotate.lua"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_key(python: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [python, "-m", "propdata", "keys", "create", "--plan", "enterprise",
         "--per-minute", "100000000", "--daily", "1000000000", "--name", "request-cost"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="the folder bench/run.py built")
    parser.add_argument("--requests", required=True, help="the folder of request lists")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--pg", help="a postgresql:// URL (with search_path) to serve instead")
    parser.add_argument("--redis", help="a redis:// URL, with --pg")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lists", default="ids,search")
    args = parser.parse_args()

    env = {k: v for k, v in os.environ.items() if not k.startswith("PROPDATA_")}
    env.update({"PROPDATA_CACHE_TTL": "0", "PROPDATA_LOG_LEVEL": "ERROR",
                "PROPDATA_AS_OF": "2026-11-21"})  # fmt: skip
    if args.pg:
        env["PROPDATA_DATABASE_URL"] = args.pg
        if args.redis:
            env["PROPDATA_REDIS_URL"] = args.redis
    else:
        env["PROPDATA_DATABASE_URL"] = str(Path(args.store) / "propdata.db")
    key = make_key(args.python, env)
    port = free_port()
    server = subprocess.Popen(
        [args.python, "-m", "propdata", "serve", "--port", str(port), "--workers", "1"], env=env
    )
    base = f"http://127.0.0.1:{port}"
    results: dict[str, list[float]] = {}
    try:
        for _ in range(600):
            try:
                health = httpx.get(base + "/health", timeout=2).json()
                if health["checks"].get("searchIndex", "ok") in ("ok", "off"):
                    break
            except (httpx.TransportError, ValueError, KeyError):
                pass
            time.sleep(0.2)
        for _ in range(args.rounds):
            for name in args.lists.split(","):
                paths = Path(args.requests) / f"{name}.txt"
                command = ["wrk", "-t1", f"-c{args.connections}", f"-d{round(args.seconds)}s",
                           "-s", str(LUA), base, "--", str(paths)]  # fmt: skip
                before = cpu_seconds(server.pid)
                done = subprocess.run(command, env={**os.environ, "BENCH_KEY": key},
                                      capture_output=True, text=True, check=True)  # fmt: skip
                used = cpu_seconds(server.pid) - before
                line = next(x for x in done.stdout.splitlines() if x.startswith("BENCH_JSON "))
                figures = json.loads(line.removeprefix("BENCH_JSON "))
                answered = figures["requests"] - sum(figures["errors"].values())
                results.setdefault(name, []).append(used / max(1, answered) * 1e6)
    finally:
        server.terminate()
        server.wait(10)
    print(f"| list | server CPU µs per request (median of {args.rounds}) | rounds |")
    print("|---|---|---|")
    for name, values in results.items():
        print(f"| {name} | {statistics.median(values):.0f} | "
              f"{', '.join(f'{v:.0f}' for v in values)} |")  # fmt: skip


if __name__ == "__main__":
    main()

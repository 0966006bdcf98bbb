"""A worker's start-up to searches served by the index, and its memory.

    .venv/bin/python bench/startup.py --workers 1 2 --repeat 5 --scenarios snapshot cold build
    .venv/bin/python bench/startup.py --workers 2 1 --repeat 0 --memory 10 [--cache-ttl 0]

Uses the make bench store (bench/.data/sqlite-p1000000-s7-2026-11-21, built by bench/run.py).
Each start runs `propdata serve --workers N` as an operator does, with the log at INFO; every
line of its log is stamped as it arrives. Figures, in seconds from the start of the command:

- `first ok`: the first /health that says `"searchIndex": "ok"` (polled every 20 ms),
- `all ready`: every worker has logged "search index ready" (its searches use the index).

Scenarios: `plain`, nothing prepared (for a revision without snapshots, whose every start
reads the table); `snapshot`, the host's snapshot of the current data version exists and its pages
are in the page cache (a restart); `cold`, it exists but is evicted from the page cache first
(posix_fadvise DONTNEED on its files, nothing else); `build`, there is none (the first start
after a load).

With --memory S, one more start per worker count, with the response cache on (TTL 3600 s,
or --cache-ttl): S seconds each of the search mix, get by id, offset 100,000 and the radius
mix (wrk, 16 connections, the make bench request lists), enough to fill each worker's share
of PROPDATA_CACHE_MB, each followed by every worker's anonymous memory and Pss; then each
worker's /proc/<pid>/smaps_rollup (Rss, Pss, Anonymous) and, from /proc/<pid>/smaps, what the
index snapshot's mapped files add to its Rss and Pss, and its largest mappings by Pss. It also prints the start's times, which
worker held the snapshot's lock (had it built: remove the store's `<name>-index` folder
first for a start that builds), and each worker's memory once every index is ready.

To measure another revision, put its source first: PYTHONPATH=<its tree>/src.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bench_data  # noqa: E402
import harness  # noqa: E402

STORE = BENCH / ".data" / "sqlite-p1000000-s7-2026-11-21" / "propdata.db"
READY = re.compile(r"search index ready")


class Started:
    """One `propdata serve`, its log lines stamped with seconds since its start."""

    def __init__(self, args: Any, env: dict[str, str]) -> None:
        self.port = harness.free_port()
        argv = [str(Path(sys.executable).parent / "propdata"), "serve", "--host", "127.0.0.1",
                "--port", str(self.port), "--workers", str(args.workers_now)]  # fmt: skip
        self.lines: list[tuple[float, str]] = []
        self.spawned: float | None = None
        """When the worker processes were first seen (the command's own start-up before)."""
        self.answered: float | None = None
        """The first /health answer of any kind (a worker's app has started)."""
        self.builders: set[int] = set()
        """Workers seen holding a snapshot's lock file open (the one that has it built)."""
        self.started = time.monotonic()
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.append((time.monotonic() - self.started, raw.decode(errors="replace")))

    def ready_times(self) -> list[float]:
        return [t for t, line in self.lines if READY.search(line)]

    def worker_pids(self, workers: int) -> list[int]:
        if workers == 1:
            return [self.proc.pid]
        found = harness.children(self.proc.pid)
        return [p for p in found if "spawn_main" in harness.cmdline(p)]

    def note_builders(self, workers: int) -> None:
        for pid in self.worker_pids(workers):
            with contextlib.suppress(OSError):
                fds = Path(f"/proc/{pid}/fd")
                if any(os.readlink(fd).endswith(".lock") for fd in fds.iterdir()):
                    self.builders.add(pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._reader.join(5)


def start(args: Any, env: dict[str, str], timeout: float = 300) -> tuple[Started, float, float]:
    """A server, the time of the first /health with the index ok, and of every worker ready."""
    server = Started(args, env)
    base = f"http://127.0.0.1:{server.port}"
    first_ok = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError("".join(line for _, line in server.lines[-30:]))
        now = time.monotonic() - server.started
        if server.spawned is None and len(server.worker_pids(args.workers_now)) >= min(
            args.workers_now, 2
        ):
            server.spawned = now  # the supervisor has started the worker processes
        server.note_builders(args.workers_now)
        if first_ok is None:
            try:
                answer = httpx.get(base + "/health", timeout=5)
                if server.answered is None:
                    server.answered = time.monotonic() - server.started
                if answer.json().get("checks", {}).get("searchIndex") == "ok":
                    first_ok = time.monotonic() - server.started
            except (httpx.TransportError, ValueError):
                pass
        ready = server.ready_times()
        if first_ok is not None and len(ready) >= args.workers_now:
            return server, first_ok, ready[args.workers_now - 1]
        time.sleep(0.02)
    server.stop()
    raise RuntimeError("the index was not ready in time")


def snapshot_folder(store: Path) -> Path:
    return store.with_name(store.stem + "-index")


def evict(folder: Path) -> int:
    """Drop the snapshot's files from the page cache; returns the bytes advised."""
    advised = 0
    for file in folder.rglob("*.npy"):
        fd = os.open(file, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            advised += os.fstat(fd).st_size
        finally:
            os.close(fd)
    return advised


def smaps(pid: int, marker: str) -> dict[str, float]:
    """smaps_rollup's Rss, Pss and Anonymous, and the Rss and Pss of mappings whose path
    contains `marker` (the snapshot's files), in MB."""
    found: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("Rss", "Pss", "Anonymous", "Pss_Anon", "Pss_File"):
            found[name] = int(rest.split()[0]) / 1024
    index_rss = index_pss = 0.0
    inside = False
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if head and re.fullmatch(r"[0-9a-f]+-[0-9a-f]+", head[0]):
            inside = marker in line
        elif inside and head[0] == "Rss:":
            index_rss += int(head[1]) / 1024
        elif inside and head[0] == "Pss:":
            index_pss += int(head[1]) / 1024
    found["index_rss"], found["index_pss"] = index_rss, index_pss
    return found


def by_mapping(pid: int, top: int = 8) -> str:
    """The mappings of /proc/<pid>/smaps with the most Pss, MB: the heap, anonymous memory,
    the index snapshot's files, and each library grouped by its package."""
    found: dict[str, float] = {}
    name = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if head and re.fullmatch(r"[0-9a-f]+-[0-9a-f]+", head[0]):
            path = head[5] if len(head) > 5 else "[anonymous]"
            package = re.search(r"site-packages/([^/.]+)", path)
            name = ("index snapshot" if "-index/" in path else
                    package.group(1) if package else Path(path).name)  # fmt: skip
        elif head and head[0] == "Pss:":
            found[name] = found.get(name, 0.0) + int(head[1]) / 1024
    biggest = sorted(found.items(), key=lambda item: -item[1])[:top]
    return ", ".join(f"{name} {mb:.1f}" for name, mb in biggest)


def memory_run(args: Any, env: dict[str, str], key: str) -> list[dict[str, float]]:
    requests = args.store.parent.parent / "requests"
    args.wrk, args.connections, args.wrk_threads = harness.ensure_wrk(), 16, 1
    server, first_ok, all_ready = start(args, {**env, "PROPDATA_CACHE_TTL": str(args.cache_ttl)})
    base = f"http://127.0.0.1:{server.port}"
    try:
        pids = server.worker_pids(args.workers_now)
        built = [n for n, pid in enumerate(pids, 1) if pid in server.builders]
        sources = [line.split("search index ready", 1)[1].strip()
                   for _, line in server.lines if READY.search(line)]  # fmt: skip
        print(f"  started: first ok {first_ok:.2f} s, all ready {all_ready:.2f} s"
              f" ({'; '.join(sources)}); the snapshot's lock held by worker(s) {built or '-'}",
              flush=True)  # fmt: skip
        time.sleep(1)
        ready = [smaps(pid, "-index/") for pid in pids]
        anonymous = ", ".join(f"{m['Anonymous']:.0f}" for m in ready)
        pss = ", ".join(f"{m['Pss']:.0f}" for m in ready)
        print(f"  once ready: anonymous {anonymous} MB, Pss {pss} MB", flush=True)
        for name in ("search", "ids", "offset", "radius"):
            load = harness.wrk(base, requests / f"{name}.txt", args.memory, args, key)
            after = [smaps(pid, "-index/") for pid in server.worker_pids(args.workers_now)]
            anonymous = ", ".join(f"{m['Anonymous']:.0f}" for m in after)
            pss = ", ".join(f"{m['Pss']:.0f}" for m in after)
            print(f"  {name}: {load.rps:,.0f} rps, p99 {load.ms('p99'):.1f} ms; then anonymous"
                  f" {anonymous} MB, Pss {pss} MB", flush=True)  # fmt: skip
        time.sleep(1)
        for n, pid in enumerate(server.worker_pids(args.workers_now), 1):
            print(f"  worker {n}'s Pss by mapping (MB): {by_mapping(pid)}", flush=True)
        return [smaps(pid, "-index/") for pid in server.worker_pids(args.workers_now)]
    finally:
        server.stop()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--store", type=Path, default=STORE)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--scenarios", nargs="+", default=["snapshot", "cold", "build"],
                   choices=["snapshot", "cold", "build", "plain"])  # fmt: skip
    p.add_argument("--memory", type=float, default=0.0, help="seconds of each load (0: none)")
    p.add_argument("--cache-ttl", type=float, default=3600.0,
                   help="PROPDATA_CACHE_TTL of the memory run (0: the cache off)")  # fmt: skip
    args = p.parse_args()
    env = {**os.environ, "PROPDATA_DATABASE_URL": str(args.store), "PROPDATA_LOG_LEVEL": "INFO",
           "PROPDATA_CACHE_TTL": "0", "PROPDATA_AS_OF": "2026-11-21"}  # fmt: skip
    folder = snapshot_folder(args.store)
    print(f"store {args.store}; code {bench_data.code_version()}; PYTHONPATH "
          f"{os.environ.get('PYTHONPATH', '-')}; load {os.getloadavg()}", flush=True)  # fmt: skip
    for workers in args.workers:
        args.workers_now = workers
        for scenario in args.scenarios if args.repeat else []:
            firsts, alls = [], []
            for _ in range(args.repeat):
                if scenario == "build":
                    shutil.rmtree(folder, ignore_errors=True)
                elif scenario == "cold":
                    evict(folder)
                server, first_ok, all_ready = start(args, env)
                server.stop()
                firsts.append(first_ok)
                alls.append(all_ready)
                sources = [line.split("search index ready", 1)[1].strip()
                           for _, line in server.lines if READY.search(line)]  # fmt: skip
                print(f"{workers} worker(s), {scenario}: workers started {server.spawned or 0:.2f}"
                      f" s, first answer {server.answered or 0:.2f} s, first ok {first_ok:.2f} s,"
                      f" all ready {all_ready:.2f} s ({'; '.join(sources)})", flush=True)  # fmt: skip
            print(f"== {workers} worker(s), {scenario}: median first ok"
                  f" {statistics.median(firsts):.2f} s, all ready {statistics.median(alls):.2f} s"
                  f" over {len(alls)} (min {min(alls):.2f}, max {max(alls):.2f})", flush=True)  # fmt: skip
        if args.memory:
            key = asyncio.run(bench_data.create_key(str(args.store)))
            for n, found in enumerate(memory_run(args, env, key), 1):
                print(f"== {workers} worker(s), memory of worker {n}: Rss {found['Rss']:.0f} MB,"
                      f" Pss {found['Pss']:.0f} MB, Anonymous {found['Anonymous']:.0f} MB;"
                      f" the index's mapped files: Rss {found['index_rss']:.0f} MB, Pss"
                      f" {found['index_pss']:.0f} MB", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`propdata data import --follow` under a steady stream, beside a running server.

    .venv/bin/python bench/follow.py --properties 100000 --rate 2000 --seconds 30
    .venv/bin/python bench/follow.py --properties 1000000            # what make bench runs

On a copy of the make bench store (bench/.data/sqlite-p{N}-s7-2026-11-21, built when
missing), with `propdata serve` (cache off) running on it:

1. **Sustained**: a writer appends synthetic records (new ids) to a JSON Lines file at
   `--rate` records a second for `--seconds`, in bursts every 50 ms, while `propdata data
   import --follow` reads it. One record in SAMPLE is watched: when it is in the store (a
   read-only connection polls every 20 ms) and when `GET /v1/properties/{id}` answers it
   (polled every 20 ms). The figures: records committed a second over the run, the lag at
   its end (appended and not committed), and the seconds from append to commit and from
   commit to served (p50, p99, max). A probe takes the SQLite write lock (BEGIN IMMEDIATE,
   ROLLBACK) every 100 ms and records how long it waited: how long a commit holds it.
2. **Search while following**: the make bench search mix with wrk, first on the server
   alone, then while the writer appends `--low-rate` records a second (200) to the file the
   follower reads; p99 of both, side by side. Run before the sustained phase, so both search
   runs meet the store as it came.

`bench/run.py` runs the same (`measure`) and puts both in the make bench table (`rows`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import msgspec

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bench_data  # noqa: E402

SAMPLE = 20
"""One appended record in SAMPLE is watched until it is committed and served."""
TARGET_RATE = 2_000
TARGET_SERVED_S = 1.0
TARGET_SEARCH_P99_MS = 30.0


@dataclass
class Sustained:
    rate: float
    """Records a second the writer was asked to append."""
    seconds: float
    appended: int = 0
    committed: int = 0
    """Appended records in the store at the end of the run (the watched ones tell)."""
    to_commit: list[float] = field(default_factory=list)
    to_served: list[float] = field(default_factory=list)
    lock_waits: list[float] = field(default_factory=list)
    unserved: int = 0
    """Watched records committed but not served within 10 s."""

    @property
    def committed_rate(self) -> float:
        return self.committed / self.seconds if self.seconds else 0.0

    @property
    def kept_up(self) -> bool:
        """The backlog at the end is at most two seconds of input."""
        return self.appended - self.committed <= 2 * self.rate


@dataclass
class FollowRun:
    sustained: Sustained | None = None
    search_alone: Any = None
    search_following: Any = None
    low_rate: float = 200
    follower_log: str = ""


def _q(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return (
        statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]
        if q < 100
        else max(values)
    )


def scratch_store(base: Path, folder: Path) -> Path:
    """A copy of the (checkpointed) store at `base`, with its search index snapshots."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    bench_data.checkpoint(base)
    target = bench_data.copy_store(base, folder / "propdata.db")
    index = base.parent / "propdata-index"
    if index.is_dir():
        shutil.copytree(index, folder / "propdata-index")
    return target


def new_lines(count: int, seed: int, as_of: dt.date) -> list[bytes]:
    """`count` synthetic records as JSON lines, ids live-0000001...."""
    from propdata.ingest import synthetic

    encode = msgspec.json.Encoder().encode
    return [
        encode(msgspec.structs.replace(record, id=f"live-{n:07d}")) + b"\n"
        for n, record in synthetic.generate(count, seed, as_of)
    ]


class Writer(threading.Thread):
    """Appends `lines` to `path` at `rate` a second, in bursts every 50 ms, for `seconds`;
    remembers when each watched record (every SAMPLE-th) was appended."""

    def __init__(self, path: Path, lines: list[bytes], rate: float, seconds: float) -> None:
        super().__init__(daemon=True)
        self.path, self.lines, self.rate, self.seconds = path, lines, rate, seconds
        self.appended = 0
        self.watched: dict[str, float] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        with self.path.open("ab", buffering=0) as out:
            while not self.stop.is_set():
                elapsed = time.monotonic() - start
                if elapsed >= self.seconds:
                    break
                due = min(len(self.lines), int(elapsed * self.rate))
                if due > self.appended:
                    now = time.monotonic()
                    out.write(b"".join(self.lines[self.appended : due]))
                    for n in range(self.appended, due):
                        if n % SAMPLE == 0:
                            self.watched[f"live-{n + 1:07d}"] = now
                    self.appended = due
                self.stop.wait(0.05)


class Watcher(threading.Thread):
    """Notes when each watched id is in the store, and when GET by id answers it."""

    def __init__(self, db_path: Path, base: str, key: str, writer: Writer) -> None:
        super().__init__(daemon=True)
        self.db_path, self.base, self.key, self.writer = db_path, base, key, writer
        self.committed: dict[str, float] = {}
        self.served: dict[str, float] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        conn = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True)
        headers = {"Authorization": f"Bearer {self.key}"}
        with (httpx.Client(base_url=self.base, headers=headers, timeout=30) as client,
              ThreadPoolExecutor(16) as pool):  # fmt: skip
            # Side by side: a commit brings many watched ids at once, and asking them one
            # after another would count the wait for the others as theirs.
            def served(pid: str) -> tuple[str, float | None]:
                answer = client.get(f"/v1/properties/{pid}")
                return pid, time.monotonic() if answer.status_code == 200 else None

            while not self.stop.is_set():
                waiting = [i for i in list(self.writer.watched) if i not in self.committed]
                for start in range(0, len(waiting), 500):
                    part = waiting[start : start + 500]
                    marks = ", ".join("?" for _ in part)
                    rows = conn.execute(f"SELECT id FROM properties WHERE id IN ({marks})", part)
                    now = time.monotonic()
                    for (found,) in rows.fetchall():
                        self.committed[found] = now
                asked = [i for i, at in self.committed.items()
                         if i not in self.served and time.monotonic() - at <= 10]  # fmt: skip
                for pid, at in pool.map(served, asked):
                    if at is not None:
                        self.served[pid] = at
                self.stop.wait(0.02)
        conn.close()


class LockProbe(threading.Thread):
    """Takes the SQLite write lock every 100 ms and records the seconds it waited for it."""

    def __init__(self, db_path: Path) -> None:
        super().__init__(daemon=True)
        self.db_path = db_path
        self.waits: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        conn = sqlite3.connect(self.db_path, isolation_level=None, timeout=60)
        while not self.stop.is_set():
            start = time.monotonic()
            conn.execute("BEGIN IMMEDIATE")
            self.waits.append(time.monotonic() - start)
            conn.execute("ROLLBACK")
            self.stop.wait(0.1)
        conn.close()


def start_follower(db_path: Path, feed: Path, log: Path, as_of: dt.date) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PROPDATA_DATABASE_URL": str(db_path), "PROPDATA_AS_OF": as_of.isoformat(),
           "PROPDATA_LOG_LEVEL": "WARNING"}  # fmt: skip
    out = log.open("ab")
    try:
        return subprocess.Popen(
            [str(Path(sys.executable).parent / "propdata"), "data", "import", "--follow", str(feed)],
            env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    finally:
        out.close()


def stop_follower(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the group this script started
        return proc.wait(10)


def sustained(db_path: Path, base: str, key: str, folder: Path, rate: float, seconds: float,
              as_of: dt.date, seed: int) -> tuple[Sustained, str]:  # fmt: skip
    """Phase 1 (see the module's docstring)."""
    from harness import log

    lines = new_lines(int(rate * seconds) + 1, seed, as_of)
    feed = folder / "sustained.jsonl"
    feed.write_bytes(b"")
    follower_log = folder / "follower.log"
    follower = start_follower(db_path, feed, follower_log, as_of)
    time.sleep(3)  # its start (imports, store open) is not part of the run
    writer = Writer(feed, lines, rate, seconds)
    watcher = Watcher(db_path, base, key, writer)
    probe = LockProbe(db_path)
    for t in (writer, watcher, probe):
        t.start()
    writer.join()
    time.sleep(2)  # what was appended last gets its commit (the lag is measured after it)
    watcher.stop.set()
    probe.stop.set()
    watcher.join()
    probe.join()
    code = stop_follower(follower)
    result = Sustained(rate, seconds, appended=writer.appended)
    done = [i for i in writer.watched if i in watcher.committed]
    # The last watched id in the store tells how far the commits got.
    if done:
        result.committed = min(writer.appended, max(int(i.split("-")[1]) for i in done))
    result.to_commit = [watcher.committed[i] - writer.watched[i] for i in done]
    result.to_served = [
        watcher.served[i] - watcher.committed[i] for i in done if i in watcher.served
    ]
    result.unserved = sum(1 for i in done if i not in watcher.served)
    result.lock_waits = probe.waits
    text = follower_log.read_text(errors="replace")
    log(f"follow at {rate:,.0f}/s: {result.committed:,} of {result.appended:,} committed;"
        f" append to commit p99 {_q(result.to_commit, 99):.2f} s, commit to served p99"
        f" {_q(result.to_served, 99):.3f} s; write lock wait max {max(probe.waits, default=0):.3f} s;"
        f" follower exit {code}")  # fmt: skip
    return result, text


def measure(base_store: Path, reqs: Any, args: Any, logs: Path) -> FollowRun:
    """Both phases on a copy of `base_store`, with their own server; `reqs` and `args` are
    bench/run.py's (its request lists, wrk settings, --follow-rate, --follow-seconds)."""
    import harness
    from harness import log

    folder = args.folder / "follow"
    db_path = scratch_store(base_store, folder)
    key = asyncio.run(bench_data.create_key(str(db_path)))
    result = FollowRun(low_rate=args.follow_low_rate)
    env = {"PROPDATA_DATABASE_URL": str(db_path)}
    with harness.propdata_server("propdata-follow", env, 0, args, logs) as server:
        # The search rows first, both on the store as it came: after the sustained phase it
        # has that phase's WAL and a fold behind it, which would be measured instead.
        result.search_alone = harness.measure(server, reqs.search, args, key,
                                              "search mix, no follower")  # fmt: skip
        lines = new_lines(int(args.follow_low_rate * (args.duration + args.warmup + 30)),
                          args.seed + 11, args.as_of)  # fmt: skip
        lines = [line.replace(b'"live-', b'"slow-', 1) for line in lines]
        feed = folder / "slow.jsonl"
        feed.write_bytes(b"")
        follower = start_follower(db_path, feed, folder / "follower-slow.log", args.as_of)
        writer = Writer(feed, lines, args.follow_low_rate, args.duration + args.warmup + 30)
        writer.start()
        try:
            time.sleep(5)  # the follower is up and committing
            # Not `harness.measure`: it waits for idle workers, and these never are (each
            # commit reaches them).
            warm = harness.wrk(server.base, reqs.search, args.warmup, args, key)
            load = harness.wrk(server.base, reqs.search, args.duration, args, key, server=server)
            load.warmup_requests = warm.requests
            result.search_following = load
            log(f"search mix, --follow taking {args.follow_low_rate:,.0f} records/s:"
                f" {load.rps:,.0f} rps, p99 {load.ms('p99'):.2f} ms")  # fmt: skip
        finally:
            writer.stop.set()
            writer.join()
            stop_follower(follower)
        result.sustained, result.follower_log = sustained(
            db_path, server.base, key, folder, args.follow_rate, args.follow_seconds,
            args.as_of, args.seed + 10,
        )  # fmt: skip
    return result


def rows(result: FollowRun, label: str = "embedded") -> list[Any]:
    """The make bench table's rows of `result`."""
    from harness import Row

    out: list[Any] = []
    s = result.sustained
    if s is not None:
        served_p99 = _q(s.to_served, 99)
        met = s.kept_up and s.rate >= TARGET_RATE and not s.unserved and (
            max(s.to_served, default=0.0) <= TARGET_SERVED_S)  # fmt: skip
        out.append(Row(
            f"10. data import --follow at {s.rate:,.0f} records/s", label, s.committed_rate,
            result=(
                f"{s.committed:,} of {s.appended:,} appended in {s.seconds:g} s committed"
                f" ({'kept up' if s.kept_up else 'fell behind'}); append to commit p50"
                f" {_q(s.to_commit, 50):.2f} s, p99 {_q(s.to_commit, 99):.2f} s; commit to"
                f" served (GET by id) p99 {served_p99:.3f} s, max"
                f" {max(s.to_served, default=float('nan')):.3f} s"
                f"{f', {s.unserved} not served' if s.unserved else ''}; write lock waited"
                f" p99 {_q(s.lock_waits, 99) * 1000:.0f} ms, max"
                f" {max(s.lock_waits, default=0.0) * 1000:.0f} ms"
            ),
            target=f"≥ {TARGET_RATE:,}/s, each served ≤ {TARGET_SERVED_S:g} s after its commit",
            met=met,
        ))  # fmt: skip
    alone, following = result.search_alone, result.search_following
    if alone is not None and following is not None:
        p99 = following.ms("p99")
        out.append(Row(
            f"11. search mix while --follow takes {result.low_rate:,.0f} records/s", label,
            following.rps, following.ms("p50"), p99,
            result=f"p99 {p99:,.1f} ms against {alone.ms('p99'):,.1f} ms without the follower"
            f" ({alone.rps:,.0f} rps)",
            target=f"p99 ≤ {TARGET_SEARCH_P99_MS:.0f} ms", met=p99 <= TARGET_SEARCH_P99_MS,
            errors=following.failed,
        ))  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    import harness

    p = harness.script_parser(__doc__)
    p.add_argument("--properties", type=int, default=1_000_000)
    p.add_argument("--rate", type=float, default=TARGET_RATE, help="records a second, phase 1")
    p.add_argument("--seconds", type=float, default=30.0, help="length of phase 1")
    p.add_argument("--low-rate", type=float, default=200, help="records a second, phase 2")
    p.add_argument("--duration", type=float, default=20.0, help="seconds of wrk, phase 2")
    p.add_argument("--warmup", type=float, default=5.0)
    args = harness.served_args(p, argv)
    args.follow_rate, args.follow_seconds, args.follow_low_rate = (
        args.rate, args.seconds, args.low_rate)  # fmt: skip
    args.searches, args.cursor_page, args.smoke = 40_000, 10_000, False
    return harness.served_run("follow.py", "follow", argv, args, measure, rows)


if __name__ == "__main__":
    sys.exit(main())

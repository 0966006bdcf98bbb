"""What the benchmark scripts share: the table's rows, servers under test, wrk and its
request lists, ports, processes and their memory.

`bench/run.py` (make bench) is made of these, and the scripts that measure one part alone
(follow, cli_loads, events_bench, idle_streams, spread, startup, ...) use the same pieces, so
their figures are taken the way make bench takes them. Nothing here imports another bench
script but the data and mix modules.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

import bench_data  # noqa: E402  (bench/ is not a package)
import bench_mix as scenarios  # noqa: E402

LUA = BENCH / "wrk" / "rotate.lua"
PG_URL = os.environ.get("BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("BENCH_REDIS", "redis://127.0.0.1:6379/0")
TIMES = "\u00d7"


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- figures and the table ----------------------------------------------------------------


@dataclass
class Row:
    scenario: str
    store: str
    rps: float | None = None
    p50_ms: float | None = None
    p99_ms: float | None = None
    result: str = ""
    target: str = "—"
    met: bool | None = None
    errors: int = 0


@dataclass
class Load:
    """What one wrk run measured."""

    requests: int
    seconds: float
    errors: dict[str, int]
    latency_us: dict[str, float]
    hits: int = 0
    misses: int = 0
    """X-Cache HIT and MISS answers, counted only when asked (the cache scenario)."""
    warmup_requests: int = 0
    spread: list[int] = field(default_factory=list)
    """Connections each worker held halfway through the run, most first (the accept race
    and kit/serving/spread.py's evening out decide it)."""

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def failed(self) -> int:
        return sum(self.errors.values())

    def ms(self, which: str) -> float:
        return self.latency_us[which] / 1000


def _n(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "—"
    if digits == 0 and value < 10:
        digits = 1  # a search that takes seconds still shows its rate
    return f"{value:,.{digits}f}"


def quantile(values: Sequence[float], q: float) -> float:
    """The `q` quantile (0.5, 0.99) of `values`, inclusive; nan of none."""
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def table(rows: Sequence[Row], judged: bool) -> str:
    lines = [
        "| scenario | store | rps | p50 ms | p99 ms | result | target | met? |",
        "|---|---|---:|---:|---:|---|---|---|",
    ]
    for r in rows:
        if r.met is None:
            met = "—"
        elif not judged:
            met = "n/a (smoke)"
        else:
            met = "**yes**" if r.met else "**no**"
        result = r.result + (f"; {r.errors:,} failed requests" if r.errors else "")
        lines.append(
            f"| {r.scenario} | {r.store} | {_n(r.rps, 0)} | {_n(r.p50_ms, 2)} | {_n(r.p99_ms, 2)}"
            f" | {result} | {r.target} | {met} |"
        )
    return "\n".join(lines)


# -- processes ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_one(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int]:
    """`propdata serve` (one worker, its output dropped) with `env` added to this process's,
    once it answers /health: the process and its port."""
    port = free_port()
    full = {**os.environ, "PROPDATA_LOG_LEVEL": "WARNING", **env}
    argv = [str(Path(sys.executable).parent / "propdata"), "serve", "--port", str(port)]
    server = subprocess.Popen(argv, env=full, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                break
        time.sleep(0.05)
    return server, port


def children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def connections(port: int, pids: Sequence[int]) -> list[int]:
    """Established connections each process holds on the server side of `port`, most first."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "01" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    held = []
    for pid in pids:
        count = 0
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    count += os.readlink(fd) in inodes
        held.append(count)
    return sorted(held, reverse=True)


def memory_mb(pid: int) -> tuple[float, float, float]:
    """VmRSS, RssAnon and Pss of a process, MB. The difference between the first two is
    file pages (the search index's snapshot, mapped by every worker, among them), which the
    page cache shares between processes; Pss counts each shared page divided by the number
    of processes mapping it, so the snapshot counts once over all the workers."""
    found = {"VmRSS": 0.0, "RssAnon": 0.0, "Pss": 0.0}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name = line.split(":", 1)[0]
        if name in found:
            found[name] = int(line.split()[1]) / 1024
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                found["Pss"] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return found["VmRSS"], found["RssAnon"], found["Pss"]


def _search_index(answer: httpx.Response) -> str | None:
    """The searchIndex check of our /health (None for the other servers' probes)."""
    try:
        body = answer.json()
    except ValueError:
        return None
    checks = body.get("checks") if isinstance(body, dict) else None
    return checks.get("searchIndex") if isinstance(checks, dict) else None


class Server:
    """A uvicorn server in its own process group, with N workers (or one process)."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], port: int,
                 workers: int, probe: str, logs: Path) -> None:  # fmt: skip
        self.name, self.argv, self.env, self.port = name, argv, env, port
        self.workers, self.probe = workers, probe
        self.base = f"http://127.0.0.1:{port}"
        self.log_path = logs / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Server:
        log(f"starting {self.name} on :{self.port}")
        out = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            self.argv, env=self.env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
            start_new_session=True,
        )  # fmt: skip
        out.close()
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited; see {self.log_path}:\n{self._tail()}")
            if len(self.worker_pids()) == self.workers and self._answers():
                break
            time.sleep(0.2)
        else:
            self.__exit__()
            raise RuntimeError(f"{self.name} did not start; see {self.log_path}")
        # Each worker opens its stores in its lifespan: ask until every one has answered,
        # and (our API) until every worker's search index is built: 8 answers in a row from
        # new connections, which the kernel spreads over the workers.
        deadline, in_a_row = time.monotonic() + 600, 0
        while in_a_row < self.workers * 8:
            with httpx.Client(base_url=self.base, timeout=60) as client:
                answer = client.get(self.probe)
            index = _search_index(answer)
            in_a_row = in_a_row + 1 if index in (None, "ok", "off") else 0
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: the search index was not built in 600 s")
            if in_a_row == 0:
                time.sleep(0.5)
        return self

    def _answers(self) -> bool:
        try:
            return httpx.get(self.base + self.probe, timeout=30).status_code == 200
        except httpx.TransportError:
            return False

    def _tail(self) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-30:])
        except OSError:
            return ""

    def worker_pids(self) -> list[int]:
        assert self.proc is not None
        if self.workers == 1:
            return [self.proc.pid]
        return [p for p in children(self.proc.pid) if "spawn_main" in cmdline(p)]

    def cpu_seconds(self) -> float:
        ticks = 0
        for pid in self.worker_pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        return ticks / os.sysconf("SC_CLK_TCK")

    def wait_idle(self, timeout: float = 300) -> None:
        """Wait until the workers have finished what they were asked (no CPU for 0.3 s).

        A worker runs its queries on its event loop, so requests a finished wrk left behind
        (a warm-up of slow searches leaves one a connection) would be served inside the
        next measured run and count against it.
        """
        deadline = time.monotonic() + timeout
        before = self.cpu_seconds()
        while time.monotonic() < deadline:
            time.sleep(0.3)
            now = self.cpu_seconds()
            if now - before < 0.015:
                return
            before = now
        log(f"{self.name} still busy after {timeout:.0f} s; measuring anyway")

    def memory(self) -> list[tuple[float, float, float]]:
        return [memory_mb(pid) for pid in self.worker_pids()]

    def __exit__(self, *_: object) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)  # uvicorn's graceful stop, workers included
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the group this script started
            self.proc.wait(10)


def propdata_server(name: str, store_env: dict[str, str], cache_ttl: float, args: Any,
                    logs: Path) -> Server:  # fmt: skip
    """`propdata serve` exactly as an operator runs it, on a free port."""
    port = free_port()
    env = {**os.environ, **store_env, "PROPDATA_CACHE_TTL": str(cache_ttl),
           "PROPDATA_LOG_LEVEL": "WARNING", "PROPDATA_AS_OF": args.as_of.isoformat()}  # fmt: skip
    if env["PROPDATA_DATABASE_URL"].startswith("postgres"):
        # The search index's snapshots: with the run's stores, not in var/ of the checkout
        # (the default at scale-out); embedded, they sit beside the SQLite file.
        env.setdefault("PROPDATA_INDEX_DIR", str(args.folder / "index"))
    argv = [str(Path(sys.executable).parent / "propdata"), "serve", "--host", "127.0.0.1",
            "--port", str(port), "--workers", str(args.workers)]  # fmt: skip
    return Server(name, argv, env, port, args.workers, "/health", logs)


def uvicorn_server(name: str, python: Path, app: str, env: dict[str, str], workers: int,
                   probe: str, logs: Path, factory: bool = False,
                   http: str = "httptools") -> Server:  # fmt: skip
    """Another app on the server settings `propdata serve` uses. `http`: uvicorn's protocol
    (the bare app gets ours, with its workers' slots: the same server, connections spread
    the same way)."""
    port = free_port()
    if http != "httptools":
        from propdata.kit.serving import spread

        slots = logs / f"{name}-workers"
        spread.WorkerSlots.create(slots, workers)
        env = {**env, spread.SLOTS_ENV: str(slots)}
    argv = [str(python), "-m", "uvicorn", app, "--app-dir", str(BENCH), "--host", "127.0.0.1",
            "--port", str(port), "--workers", str(workers), "--loop", "uvloop", "--http",
            http, "--log-level", "warning", "--no-access-log"]  # fmt: skip
    if factory:
        argv.append("--factory")
    return Server(name, argv, {**os.environ, **env}, port, workers, probe, logs)


# -- wrk ----------------------------------------------------------------------------------


def ensure_wrk() -> str:
    """wrk's path; installs the Debian package when it is missing and we may."""
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise SystemExit("wrk is missing: install it (Debian/Ubuntu: apt-get install wrk)")
    log("wrk is missing; installing the Debian package")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # apt's chatter goes to stderr: stdout carries only the table (the smoke test reads it).
    apt = {"env": env, "stdout": sys.stderr}
    if subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], **apt).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], check=True, **apt)
        subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=True, **apt)
    found = shutil.which("wrk")
    if not found:
        raise SystemExit("wrk could not be installed")
    return found


def wrk(base: str, paths: Path, seconds: float, args: Any, key: str | None,
        count_cache: bool = False, server: Server | None = None,
        delay_ms: int = 0) -> Load:  # fmt: skip
    """One wrk run; with `server`, how its connections were spread over the workers; with
    `delay_ms`, each connection waits that long after an answer (a rate below saturation)."""
    command = [args.wrk, f"-t{min(args.wrk_threads, args.connections)}",
               f"-c{args.connections}", f"-d{max(1, round(seconds))}s", "--timeout", "30s",
               "-s", str(LUA), base, "--", str(paths)]  # fmt: skip
    env = {**os.environ, "BENCH_KEY": key or "", "BENCH_DELAY_MS": str(delay_ms)}
    if count_cache:
        env["BENCH_COUNT_CACHE"] = "1"
    done = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    spread: list[int] = []
    try:
        if server is not None:
            time.sleep(max(1, round(seconds)) / 2)
            spread = connections(server.port, server.worker_pids())
        stdout, stderr = done.communicate(timeout=seconds + 120)
    finally:
        if done.poll() is None:
            done.kill()
            done.wait()
    line = next((x for x in stdout.splitlines() if x.startswith("BENCH_JSON ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({done.returncode}):\n{stdout}\n{stderr}")
    figures = json.loads(line.removeprefix("BENCH_JSON "))
    return Load(
        requests=figures["requests"], seconds=figures["duration_us"] / 1e6,
        errors=figures["errors"], latency_us=figures["latency_us"],
        hits=figures.get("hits", 0), misses=figures.get("misses", 0), spread=spread,
    )  # fmt: skip


def spread_of(load: Load) -> str:
    """The connections each worker held, as "8/8"."""
    return "/".join(map(str, load.spread)) or "—"


def measure(server: Server, paths: Path, args: Any, key: str | None, what: str,
            count_cache: bool = False) -> Load:  # fmt: skip
    """A short warm-up, then the measured run, each on a server that has nothing left to do."""
    server.wait_idle()
    warm = wrk(server.base, paths, args.warmup, args, key)
    server.wait_idle()
    load = wrk(server.base, paths, args.duration, args, key, count_cache, server)
    load.warmup_requests = warm.requests
    log(f"{what}: {load.rps:,.0f} rps, p50 {load.ms('p50'):.2f} ms, p99 {load.ms('p99'):.2f} ms"
        f", connections {spread_of(load)}{f', {load.failed} failed' if load.failed else ''}")  # fmt: skip
    return load


def write_paths(path: Path, paths: Sequence[str]) -> Path:
    path.write_text("".join(p + "\n" for p in paths))
    return path


def fetch_all(base: str, paths: Sequence[str], key: str | None) -> list[httpx.Response]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}

    def one(client: httpx.Client, path: str) -> httpx.Response:
        return client.get(path, headers=headers)

    with httpx.Client(base_url=base, timeout=120) as client, ThreadPoolExecutor(8) as pool:
        return list(pool.map(lambda p: one(client, p), paths))


def check_ok(base: str, paths: Sequence[str], key: str | None, what: str) -> list[httpx.Response]:
    """Every path must answer 200 before its load counts."""
    answers = fetch_all(base, paths, key)
    bad = [(p, a.status_code, a.text[:200]) for p, a in zip(paths, answers, strict=True)
           if a.status_code != 200]  # fmt: skip
    if bad:
        raise RuntimeError(f"{what}: {len(bad)} of {len(paths)} requests failed, e.g. {bad[:3]}")
    return answers


# -- the runs -----------------------------------------------------------------------------


@dataclass
class Requests:
    """The request lists of one run, written under the data folder."""

    ids: Path
    search: Path
    offset: Path
    cache: Path
    radius: Path
    id_paths: list[str]
    searches: list[scenarios.Search]
    offsets: list[scenarios.Search]
    cached: list[str]
    radii: list[scenarios.Search]
    deep: list[tuple[scenarios.Search, int]]


def make_requests(folder: Path, sample: bench_data.Sample, args: Any) -> Requests:
    folder.mkdir(parents=True, exist_ok=True)
    id_paths = scenarios.id_paths(sample.ids)
    searches = scenarios.search_mix(sample.rows, args.searches, args.seed)
    offsets = scenarios.offset_mix(args.searches, args.seed + 1)
    radii = scenarios.radius_mix(sample.rows, args.searches, args.seed + 2)
    deep = scenarios.deep_cursor_searches(40, args.seed + 3, args.cursor_page)
    cached = id_paths[:10] + [s.path for s in searches[:10]]
    return Requests(
        ids=write_paths(folder / "ids.txt", id_paths),
        search=write_paths(folder / "search.txt", [s.path for s in searches]),
        offset=write_paths(folder / "offset.txt", [s.path for s in offsets]),
        cache=write_paths(folder / "cache.txt", cached),
        radius=write_paths(folder / "radius.txt", [s.path for s in radii]),
        id_paths=id_paths, searches=searches, offsets=offsets, cached=cached, radii=radii,
        deep=deep,
    )  # fmt: skip


def prepared(args: Any, name: str) -> tuple[Path, Requests]:
    """The SQLite bench store of `args` (built once per size and seed) and the requests of
    the `name` run, made from a sample of it."""
    build = asyncio.run(
        bench_data.ensure_sqlite(args.folder, args.properties, args.seed, args.as_of)
    )
    db_path = Path(build.url)
    sample = bench_data.sample(str(db_path), 200, 2_000, args.seed)
    return db_path, make_requests(args.folder / f"requests-{name}", sample, args)


def script_parser(doc: str | None) -> argparse.ArgumentParser:
    """The options of a stand-alone script, described by its docstring's first paragraph."""
    return argparse.ArgumentParser(description=(doc or "").split("\n\n")[0],
                                   formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip


def served_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> Any:
    """`parser`'s options with those of every script that serves the bench store to wrk (the
    data's seed and day, wrk's connections and threads, the workers, the data folder), parsed."""
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--as-of", type=dt.date.fromisoformat, default=dt.date(2026, 11, 21))
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--wrk-threads", type=int, default=1)
    parser.add_argument("--folder", type=Path, default=BENCH / ".data")
    return parser.parse_args(argv)


def served_run(script: str, name: str, argv: Sequence[str] | None, args: Any,
               measure: Callable[[Path, Requests, Any, Path], Any],
               rows: Callable[[Any], Sequence[Row]], judged: bool = True) -> int:  # fmt: skip
    """A served script's run: wrk found, the store and the `name` run's requests prepared,
    `measure(db_path, requests, args, logs)`, and its `rows` reported under the command."""
    args.wrk = ensure_wrk()
    logs = args.folder / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    db_path, reqs = prepared(args, name)
    report(script, argv, args, rows(measure(db_path, reqs, args, logs)), judged=judged)
    return 0


async def probe_health(base: str, into: list[float], stop: asyncio.Event,
                       every: float = 0.005) -> None:  # fmt: skip
    """Time `GET /health` every `every` seconds into `into` (ms) until `stop` is set."""
    async with httpx.AsyncClient(base_url=base, timeout=10) as client:
        while not stop.is_set():
            started = time.perf_counter()
            answer = await client.get("/health")
            into.append((time.perf_counter() - started) * 1000)
            assert answer.status_code == 200, answer.text
            await asyncio.sleep(every)


def report(script: str, argv: Sequence[str] | None, args: Any, found: Sequence[Row],
           judged: bool) -> None:  # fmt: skip
    """Print the command that made the figures, the day, the size and the code, and the table."""
    command = f"python bench/{script} " + " ".join(argv if argv is not None else sys.argv[1:])
    print(f"`{command}` ({dt.date.today()}; {args.properties:,} properties; code at"
          f" {bench_data.code_version()})\n")  # fmt: skip
    print(table(found, judged=judged))


def deep_cursors(base: str, deep: Sequence[tuple[scenarios.Search, int]], key: str,
                 path: Path) -> Path:  # fmt: skip
    """The cursor paths of page N of each search: `meta.nextCursor` of page N - 1 (asked by
    offset once, where the walk would have taken N - 1 requests). Searches with fewer pages
    are left out."""
    answers = check_ok(base, [f"{s.path}&offset={offset}" for s, offset in deep], key,
                       "deep pages by offset")  # fmt: skip
    paths = [f"{s.path}&cursor={quote(a.json()['meta']['nextCursor'])}"
             for (s, _), a in zip(deep, answers, strict=True)
             if a.json()["meta"]["nextCursor"]]  # fmt: skip
    if not paths:
        raise RuntimeError("no search of the cursor scenario is that deep")
    check_ok(base, paths, key, "deep pages by cursor")
    return write_paths(path, paths)


def answer_bytes(base: str, id_paths: Sequence[str], key: str) -> tuple[float, float]:
    """Median bytes of these by-id answers, whole and with `fields=id,listPrice`."""
    whole = check_ok(base, id_paths, key, "by id, whole")
    small = check_ok(base, [f"{p}?fields=id,listPrice" for p in id_paths], key, "by id, fields")
    return (statistics.median(len(a.content) for a in whole),
            statistics.median(len(a.content) for a in small))  # fmt: skip


def scaleout_available() -> str:
    """'' when PostgreSQL and Redis answer, else why not."""
    import asyncpg
    import redis

    async def pg() -> None:
        conn = await asyncpg.connect(PG_URL, timeout=5)
        await conn.close()

    try:
        asyncio.run(pg())
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    except Exception as exc:  # any failure: say which
        return f"{type(exc).__name__}: {exc}"
    return ""

"""One bulk export (`propdata data export`) of a store of N properties: its wall time, the
peak memory of the process that makes it, and the snapshot's size.

    .venv/bin/python bench/export.py --properties 100000
    .venv/bin/python bench/export.py --store var/propdata.db --format csv
    .venv/bin/python bench/export.py --properties 100000 --download   # and a file's download rate
    .venv/bin/python bench/export.py --store var/propdata.db --beside  # row 21 alone: the mix beside

`--beside` serves the store (two workers, make bench's search mix) and runs `search_beside`
on it, then a lone export, `--rounds` times; with `--code A/src B/src` each round runs the
export with each checkout's code in turn (its PYTHONPATH), the server the same:

    .venv/bin/python bench/export.py --store S --beside --rounds 2 --code ../main/src src

Without `--store`, a store of N synthetic properties (seed 1) is generated once under
var/bench-export-N/ and kept for the next run. The export runs as the command does, in a
process of its own, so its peak (VmHWM) is that process's alone.

For make bench (bench/run.py): `export_of` on its store, `download_rate`, and
`search_beside` (the search mix with wrk while an export of the served store runs) make
the figures, and `rows` the table's rows.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bench_data
import harness
import httpx

PROPDATA = Path(sys.executable).with_name("propdata")
TARGET_S = 60.0
"""The export of 1,000,000 properties: at most a minute..."""
TARGET_PEAK_MB = 1000.0
"""... in at most 1 GB (the export process's VmHWM)."""
TARGET_DOWNLOAD_MB_S = 200.0
"""A snapshot file's download, one worker, loopback."""
TARGET_SEARCH_P99_MS = 30.0
"""The search mix's p99 while an export runs beside it."""
BEFORE_WRK_S = 2.0
"""Seconds an export runs before wrk starts beside it (past its start-up, into the records)."""


def ensure_store(properties: int) -> Path:
    folder = harness.ROOT / "var" / f"bench-export-{properties}"
    store = folder / "propdata.db"
    if not (folder / "made").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        harness.log(f"generating {properties:,} properties into {store}")
        subprocess.run(
            [str(PROPDATA), "data", "generate", "--properties", str(properties)],
            env={**os.environ, "PROPDATA_DATABASE_URL": str(store)}, check=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        (folder / "made").touch()
    return store


def export(store: Path, fmt: str) -> dict[str, Any]:
    """One export of the SQLite store at `store`, in a scratch folder beside it: its figures."""
    return export_of({"PROPDATA_DATABASE_URL": str(store)}, store.parent, fmt)


def export_of(store_env: dict[str, str], scratch: Path, fmt: str = "parquet") -> dict[str, Any]:
    """One export of the store of `store_env` (PROPDATA_* variables), written under a
    temporary folder in `scratch`, which goes afterwards: its figures."""
    return Exporting(store_env, scratch, fmt).finish()


PEAK_EVERY = 0.1
"""Seconds between two reads of the export's high-water mark as `finish` waits for it."""


def _high_water_kb(pid: int) -> int:
    """VmHWM of a running process, in KiB (0 once it has none: exiting)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return int(found.group(1)) if found else 0


class Exporting:
    """`propdata data export` running in a process of its own, started at once, at its
    default (idle) CPU priority or `--priority normal`."""

    def __init__(self, store_env: dict[str, str], scratch: Path, fmt: str = "parquet",
                 priority: str = "idle") -> None:  # fmt: skip
        self.fmt = fmt
        self._out = tempfile.TemporaryDirectory(dir=scratch)
        self._said = tempfile.TemporaryFile()  # noqa: SIM115 (closed by finish)
        self.started = time.perf_counter()
        self._peak_kb = 0
        self.child = subprocess.Popen(
            [str(PROPDATA), "data", "export", "--format", fmt, "--out", self._out.name,
             "--priority", priority],
            env={**os.environ, **store_env}, stdout=subprocess.PIPE,
            stderr=self._said, text=True,
        )  # fmt: skip

    def running(self) -> bool:
        """Whether the export has not ended yet (the process is left for `finish` to reap:
        its peak is read as it is)."""
        ended = os.waitid(os.P_PID, self.child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if ended is None:
            self._peak_kb = max(self._peak_kb, _high_water_kb(self.child.pid))
        return ended is None

    def finish(self) -> dict[str, Any]:
        """Wait for the export to end: its figures (the snapshot is removed)."""
        try:
            # The child's own peak is its memory's high-water mark (VmHWM), read while it
            # runs: a process's rusage peak keeps, across exec, the RSS of the process it was
            # forked from (make bench's, gigabytes after building a store).
            while self.running():
                time.sleep(PEAK_EVERY)
            _, status, usage = os.wait4(self.child.pid, 0)
            self.child.returncode = os.waitstatus_to_exitcode(status)
            if self.child.returncode != 0:
                raise subprocess.CalledProcessError(self.child.returncode, self.child.args)
            seconds = time.perf_counter() - self.started
            assert self.child.stdout is not None  # a line, the snapshot's folder: no pipe fills
            folder = Path(self.child.stdout.read().strip().splitlines()[-1])
            manifest = json.loads((folder / "manifest.json").read_text())
        finally:
            if self.child.returncode is None:
                self.child.kill()
                self.child.wait()
            if self.child.stdout is not None:
                self.child.stdout.close()
            self._out.cleanup()
        self._said.seek(0)
        said = self._said.read().decode(errors="replace")
        self._said.close()
        gave_way = re.search(r"gave way to other work ([0-9,]+) times, ([0-9,.]+) s", said)
        paused = float(gave_way.group(2).replace(",", "")) if gave_way else 0.0
        size = sum(f["bytes"] for f in manifest["files"])
        return {"format": self.fmt, "properties": manifest["rows"],
                "seconds": round(seconds, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
                "peak_mb": round(self._peak_kb / 1024), "paused_s": paused,
                "files": len(manifest["files"]), "snapshot_mb": round(size / 1e6, 1),
                "records_per_s": round(manifest["rows"] / seconds)}  # fmt: skip


@dataclass
class Beside:
    """The search mix alone and beside an export, and that export's figures."""

    alone: harness.Load
    during: harness.Load
    export: dict[str, Any]
    outlasted: bool
    """Whether the export was still running when wrk stopped (the whole run was beside it)."""


def search_beside(
    server: harness.Server, store_env: dict[str, str], scratch: Path, paths: Path, args: Any,
    key: str, fmt: str = "parquet", priority: str = "idle",
) -> Beside:  # fmt: skip
    """The search mix (`paths`, wrk as `harness.measure` runs it) on `server` alone, then
    again while an export of the same store (`store_env`) runs in a process of its own
    (at `priority`), started BEFORE_WRK_S before wrk."""
    alone = harness.measure(server, paths, args, key, "search mix alone")
    server.wait_idle()
    running = Exporting(store_env, scratch, fmt, priority)
    try:
        time.sleep(BEFORE_WRK_S)
        during = harness.wrk(server.base, paths, args.duration, args, key, server=server)
        outlasted = running.running()
    finally:
        figures = running.finish()
    harness.log(f"search mix beside an export: p99 {during.ms('p99'):.2f} ms (alone"
                f" {alone.ms('p99'):.2f} ms); the export {figures['seconds']} s")  # fmt: skip
    return Beside(alone, during, figures, outlasted)


def download_rate(store: Path, seconds: float = 10.0) -> dict[str, Any]:
    """Serve the store with `propdata serve` (one worker) and download the largest file of a
    CSV snapshot of it through GET /v1/exports/{id}/files/{name} with an Enterprise key, again
    and again for `seconds`, by curl: MB/s on loopback, curl's own time of each download."""
    exports = store.parent / "exports"
    env = {**os.environ, "PROPDATA_DATABASE_URL": str(store), "PROPDATA_EXPORT_DIR": str(exports)}
    if not any(exports.glob("*/manifest.json")):
        subprocess.run([str(PROPDATA), "data", "export", "--format", "csv"], env=env,
                       check=True, capture_output=True)  # fmt: skip
    # An Enterprise key whose per-minute limit no run reaches (a Pro key's 429s would end
    # the run on a small store's files, downloaded hundreds of times a minute).
    key = asyncio.run(bench_data.create_key(str(store)))
    port = harness.free_port()
    argv = [str(PROPDATA), "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    logs = store.parent
    with harness.Server("export-download", argv, {**env, "PROPDATA_LOG_LEVEL": "WARNING"}, port,
                        1, "/health", logs) as server:  # fmt: skip
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base, headers=headers, timeout=60) as http:
            newest = http.get("/v1/exports").json()["data"][0]
            largest = max(newest["files"], key=lambda f: f["bytes"])
            url = f"{server.base}/v1/exports/{newest['id']}/files/{largest['name']}"
        # curl reads it: httpx in this process tops out near 100 MB/s, the client's own
        # limit, where curl takes what the server sends (about 750 MB/s here).
        sent, spent, times, started = 0, 0.0, 0, time.perf_counter()
        each: list[float] = []
        while time.perf_counter() - started < seconds:
            done = subprocess.run(
                ["curl", "--silent", "--show-error", "--fail", "--output", "/dev/null",
                 "--header", "@-", "--write-out", "%{size_download} %{time_total}", url],
                input=f"Authorization: Bearer {key}\n", capture_output=True, text=True,
                check=True,
            )  # fmt: skip
            size, took = done.stdout.split()
            sent, spent, times = sent + int(size), spent + float(took), times + 1
            each.append(int(size) / 1e6 / max(float(took), 1e-9))
        elapsed = spent
    # The first download and the slowest beside the rate: a file read from disk, not from
    # the page cache, shows as a slow first one.
    return {"file": largest["name"], "file_mb": round(largest["bytes"] / 1e6, 1),
            "downloads": times, "mb_per_s": round(sent / 1e6 / elapsed),
            "first_mb_per_s": round(each[0]), "slowest_mb_per_s": round(min(each))}  # fmt: skip


def rows(
    figures: dict[str, Any], download: dict[str, Any] | None = None,
    beside: Beside | None = None, label: str = "embedded",
) -> list[Any]:  # fmt: skip
    """The make bench table's rows: the export of `figures` (`export_of`), a file's
    `download` (`download_rate`) and the search mix `beside` an export, those measured."""
    from harness import Row

    n, seconds, peak = figures["properties"], figures["seconds"], figures["peak_mb"]
    out = [Row(
        f"19. data export of {n:,} properties ({figures['format']})", label,
        result=f"{seconds:g} s ({figures['records_per_s']:,} records/s), peak {peak:,} MB;"
        f" {figures['files']} files, {figures['snapshot_mb']:g} MB",
        target=f"≤ {TARGET_S:g} s and ≤ 1 GB at 1,000,000",
        met=seconds <= TARGET_S and peak <= TARGET_PEAK_MB if n >= 1_000_000 else None,
    )]  # fmt: skip
    if download is not None:
        rate = download["mb_per_s"]
        out.append(Row(
            "20. an export file's download (one worker, loopback)", label,
            result=f"{rate:,} MB/s: {download['file']} ({download['file_mb']:g} MB)"
            f" {download['downloads']} times (the first at {download['first_mb_per_s']:,},"
            f" the slowest {download['slowest_mb_per_s']:,} MB/s)",
            target=f"≥ {TARGET_DOWNLOAD_MB_S:g} MB/s", met=rate >= TARGET_DOWNLOAD_MB_S,
        ))  # fmt: skip
    if beside is not None:
        during, alone, made = beside.during, beside.alone, beside.export
        p99 = during.ms("p99")
        whole = "" if beside.outlasted else "; **the export ended before wrk did**"
        out.append(Row(
            f"21. search mix beside a data export of {made['properties']:,} properties", label,
            during.rps, during.ms("p50"), p99,
            result=f"p99 {p99:,.1f} ms against {alone.ms('p99'):,.1f} ms alone"
            f" ({alone.rps:,.0f} rps); the export took {made['seconds']:g} s beside it{whole}",
            target=f"p99 ≤ {TARGET_SEARCH_P99_MS:g} ms",
            met=p99 <= TARGET_SEARCH_P99_MS and beside.outlasted, errors=during.failed,
        ))  # fmt: skip
    return out


def beside(store: Path, rounds: int, priority: str, codes: list[str]) -> None:
    """`search_beside` on `store`, served as make bench serves it, and an export alone
    (`export_of`), `rounds` times with each of `codes` (PYTHONPATH's first entry for the
    export; "" for this environment's): a line of figures each (JSON), with the load
    averages before and after."""
    import bench_mix

    args = argparse.Namespace(
        workers=2, connections=16, wrk_threads=1, duration=20.0, warmup=5.0, seed=7,
        as_of=dt.date(2026, 11, 21), folder=store.parent, wrk=harness.ensure_wrk(),
    )  # fmt: skip
    sample = bench_data.sample(str(store), 0, 2_000, args.seed)
    paths = harness.write_paths(
        store.parent / "search.txt",
        [s.path for s in bench_mix.search_mix(sample.rows, 40_000, args.seed)],
    )
    key = asyncio.run(bench_data.create_key(str(store)))
    store_env = {"PROPDATA_DATABASE_URL": str(store)}
    logs = store.parent / "logs"
    logs.mkdir(exist_ok=True)
    python_path = os.environ.get("PYTHONPATH", "")
    with harness.propdata_server("export-beside", store_env, 0, args, logs) as server:
        for _, code in ((n, c) for n in range(rounds) for c in codes):
            env = {**store_env, "PYTHONPATH": f"{code}:{python_path}" if code else python_path}
            load = os.getloadavg()
            found = search_beside(server, env, store.parent, paths, args, key,
                                  priority=priority)  # fmt: skip
            lone = export_of(env, store.parent)
            print(json.dumps({
                "code": code, "priority": priority,
                "p99_beside_ms": round(found.during.ms("p99"), 1),
                "p99_alone_ms": round(found.alone.ms("p99"), 1),
                "rps_beside": round(found.during.rps), "rps_alone": round(found.alone.rps),
                "export_s": found.export["seconds"], "export_cpu_s": found.export["cpu_s"],
                "paused_s": found.export["paused_s"], "outlasted": found.outlasted,
                "export_alone_s": lone["seconds"], "export_alone_paused_s": lone["paused_s"],
                "export_alone_cpu_s": lone["cpu_s"], "load_before": [round(v, 2) for v in load],
                "load_after": [round(v, 2) for v in os.getloadavg()],
            }), flush=True)  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--properties", type=int, default=100_000)
    p.add_argument("--store", type=Path, help="a SQLite store to export (default: generated)")
    p.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    p.add_argument("--download", action="store_true", help="also a file's download rate")
    p.add_argument("--beside", action="store_true",
                   help="instead, the search mix alone and beside an export (row 21)")  # fmt: skip
    p.add_argument("--rounds", type=int, default=1, help="of --beside")
    p.add_argument("--priority", choices=("idle", "normal"), default="idle")
    p.add_argument("--code", nargs="+", default=[""], help="of --beside: checkouts' src folders")
    args = p.parse_args()
    store = args.store or ensure_store(args.properties)
    if args.beside:
        beside(store, args.rounds, args.priority, args.code)
        return 0
    figures = export(store, args.format)
    if args.download:
        figures["download"] = download_rate(store)
        harness.log(f"download: {figures['download']}")
    harness.log(
        f"export of {figures['properties']:,} properties ({args.format}): {figures['seconds']} s"
        f" ({figures['cpu_s']} s CPU),"
        f" peak {figures['peak_mb']} MB, {figures['files']} files, {figures['snapshot_mb']} MB"
    )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

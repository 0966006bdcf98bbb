"""One bulk export (`propdata data export`) of a store of N properties: its wall time, the
peak memory of the process that makes it, and the snapshot's size.

    .venv/bin/python bench/export.py --properties 100000
    .venv/bin/python bench/export.py --store var/propdata.db --format csv
    .venv/bin/python bench/export.py --properties 100000 --download   # and a file's download rate

Without `--store`, a store of N synthetic properties (seed 1) is generated once under
var/bench-export-N/ and kept for the next run. The export runs as the command does, in a
process of its own, so its peak (VmHWM) is that process's alone.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness
import httpx

PROPDATA = Path(sys.executable).with_name("propdata")


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


def export(store: Path, fmt: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory(dir=store.parent) as out:
        started = time.perf_counter()
        with tempfile.TemporaryFile("w+") as printed:
            child = subprocess.Popen(
                [str(PROPDATA), "data", "export", "--format", fmt, "--out", out],
                env={**os.environ, "PROPDATA_DATABASE_URL": str(store)},
                stdout=printed, stderr=subprocess.DEVNULL, text=True,
            )  # fmt: skip
            # This child's own peak: RUSAGE_CHILDREN would also hold the generator's.
            _, status, usage = os.wait4(child.pid, 0)
            child.returncode = os.waitstatus_to_exitcode(status)
            if child.returncode != 0:
                raise subprocess.CalledProcessError(child.returncode, child.args)
            seconds = time.perf_counter() - started
            printed.seek(0)
            folder = Path(printed.read().strip().splitlines()[-1])
        peak_mb = usage.ru_maxrss / 1024
        manifest = json.loads((folder / "manifest.json").read_text())
        size = sum(f["bytes"] for f in manifest["files"])
    return {"format": fmt, "properties": manifest["rows"], "seconds": round(seconds, 1),
            "peak_mb": round(peak_mb), "files": len(manifest["files"]),
            "snapshot_mb": round(size / 1e6, 1),
            "records_per_s": round(manifest["rows"] / seconds)}  # fmt: skip


def download_rate(store: Path, seconds: float = 10.0) -> dict[str, object]:
    """Serve the store with `propdata serve` (one worker) and download the largest file of a
    CSV snapshot of it through GET /v1/exports/{id}/files/{name} with a Pro key, again and
    again for `seconds`: MB/s on loopback."""
    exports = store.parent / "exports"
    env = {**os.environ, "PROPDATA_DATABASE_URL": str(store), "PROPDATA_EXPORT_DIR": str(exports)}
    if not any(exports.glob("*/manifest.json")):
        subprocess.run([str(PROPDATA), "data", "export", "--format", "csv"], env=env,
                       check=True, capture_output=True)  # fmt: skip
    key = subprocess.run(
        [str(PROPDATA), "keys", "create", "--plan", "pro"],
        env=env, check=True, capture_output=True, text=True,
    ).stdout.strip().splitlines()[-1]  # fmt: skip
    port = harness.free_port()
    argv = [str(PROPDATA), "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    logs = store.parent
    with harness.Server("export-download", argv, {**env, "PROPDATA_LOG_LEVEL": "WARNING"}, port,
                        1, "/health", logs) as server:  # fmt: skip
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base, headers=headers, timeout=60) as http:
            newest = http.get("/v1/exports").json()["data"][0]
            largest = max(newest["files"], key=lambda f: f["bytes"])
            url = f"/v1/exports/{newest['id']}/files/{largest['name']}"
            sent, started, times = 0, time.perf_counter(), 0
            while time.perf_counter() - started < seconds:
                with http.stream("GET", url) as answer:
                    assert answer.status_code == 200, answer.status_code
                    for chunk in answer.iter_raw(1 << 20):
                        sent += len(chunk)
                times += 1
            elapsed = time.perf_counter() - started
    return {"file": largest["name"], "file_mb": round(largest["bytes"] / 1e6, 1),
            "downloads": times, "mb_per_s": round(sent / 1e6 / elapsed)}  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--properties", type=int, default=100_000)
    p.add_argument("--store", type=Path, help="a SQLite store to export (default: generated)")
    p.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    p.add_argument("--download", action="store_true", help="also a file's download rate")
    args = p.parse_args()
    store = args.store or ensure_store(args.properties)
    figures = export(store, args.format)
    if args.download:
        figures["download"] = download_rate(store)
        harness.log(f"download: {figures['download']}")
    harness.log(
        f"export of {figures['properties']:,} properties ({args.format}): {figures['seconds']} s,"
        f" peak {figures['peak_mb']} MB, {figures['files']} files, {figures['snapshot_mb']} MB"
    )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

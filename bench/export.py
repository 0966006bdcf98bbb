"""One bulk export (`propdata data export`) of a store of N properties: its wall time, the
peak memory of the process that makes it, and the snapshot's size.

    .venv/bin/python bench/export.py --properties 100000
    .venv/bin/python bench/export.py --store var/propdata.db --format csv

Without `--store`, a store of N synthetic properties (seed 1) is generated once under
var/bench-export-N/ and kept for the next run. The export runs as the command does, in a
process of its own, so its peak (VmHWM) is that process's alone.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness

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
        done = subprocess.run(
            [str(PROPDATA), "data", "export", "--format", fmt, "--out", out],
            env={**os.environ, "PROPDATA_DATABASE_URL": str(store)}, check=True,
            capture_output=True, text=True,
        )  # fmt: skip
        seconds = time.perf_counter() - started
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        folder = Path(done.stdout.strip().splitlines()[-1])
        manifest = json.loads((folder / "manifest.json").read_text())
        size = sum(f["bytes"] for f in manifest["files"])
    return {"format": fmt, "properties": manifest["rows"], "seconds": round(seconds, 1),
            "peak_mb": round(peak_mb), "files": len(manifest["files"]),
            "snapshot_mb": round(size / 1e6, 1),
            "records_per_s": round(manifest["rows"] / seconds)}  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--properties", type=int, default=100_000)
    p.add_argument("--store", type=Path, help="a SQLite store to export (default: generated)")
    p.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    args = p.parse_args()
    store = args.store or ensure_store(args.properties)
    figures = export(store, args.format)
    harness.log(
        f"export of {figures['properties']:,} properties ({args.format}): {figures['seconds']} s,"
        f" peak {figures['peak_mb']} MB, {figures['files']} files, {figures['snapshot_mb']} MB"
    )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A disk that fills during a load: a clean error, and the old data whole."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.factories import AS_OF

pytestmark = pytest.mark.slow


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 6 MB filesystem (tmpfs; this needs root, which CI has)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)],
                          capture_output=True, text=True)  # fmt: skip
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _propdata(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PROPDATA_DATABASE_URL": str(path), "PROPDATA_AS_OF": AS_OF.isoformat()}
    return subprocess.run([sys.executable, "-m", "propdata", *args], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def test_a_full_disk_during_a_load_leaves_the_old_data_whole(small_disk: Path) -> None:
    store = small_disk / "propdata.db"
    first = _propdata(store, "data", "generate", "--properties", "300")
    assert first.returncode == 0, first.stderr[-2000:]
    full = _propdata(store, "data", "generate", "--properties", "40000", "--seed", "2")
    assert full.returncode == 1, full.stderr[-2000:]
    said = " ".join(full.stderr.split())  # rich wraps its lines
    assert "Traceback" not in said and "database or disk is full" in said
    assert "Nothing of this step was stored" in said
    status = _propdata(store, "data", "status")
    assert "properties: 300" in status.stdout and "rebuild: done" in status.stdout
    conn = sqlite3.connect(store)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()

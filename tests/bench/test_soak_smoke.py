"""The soak's short version (make soak runs it for 5 minutes with faults): 20 s past every
key's limit on the embedded store and on two PostgreSQL + Redis instances; no 5xx, no
over-admission, nothing lost or doubled."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.slow
def test_soak_smoke() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "soak.py"), "--smoke"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = done.stdout
    assert "| embedded, 1 x 2 workers |" in table and "| PostgreSQL + Redis" in table

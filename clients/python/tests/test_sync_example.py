"""The sync program of docs/clients.md ("Keeping a copy in sync"), as the page prints it,
run against a live server before and after loads that add, change and remove records."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.factories import record

from propdata_client import Client

pytestmark = pytest.mark.slow

if TYPE_CHECKING:
    from conftest import Live

DOCS = Path(__file__).resolve().parents[3] / "docs" / "clients.md"


def program() -> str:
    """The first python block of the section "Keeping a copy in sync"."""
    text = DOCS.read_text()
    section = text.split("\n## Keeping a copy in sync\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "no python block in the section"
    return found.group(1)


def run(script: Path, copy: Path, live: Live, key: str) -> str:
    env = {**os.environ, "PROPDATA_API_KEY": key, "PROPDATA_BASE_URL": live.base_url}
    done = subprocess.run([sys.executable, str(script), str(copy)], env=env, cwd=script.parent,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def served(live: Live, key: str) -> dict[str, Any]:
    """Every record the API serves, as the program stores them (`to_dict()`, through JSON)."""
    with Client(api_key=key, base_url=live.base_url) as client:
        ids = [item.id for item in client.properties.search_all(page_size=100)]
        records = {i: client.properties.get(i).to_dict() for i in ids}
    result: dict[str, Any] = json.loads(json.dumps(records))
    return result


def test_the_documented_sync_program_keeps_a_copy(own_live: Live, tmp_path: Path) -> None:
    key = own_live.key("enterprise", per_minute=1_000_000)
    script = tmp_path / "sync.py"
    script.write_text(program())
    copy = tmp_path / "propdata-copy.json"

    out = run(script, copy, own_live, key)
    state = json.loads(copy.read_text())
    assert state["records"] == served(own_live, key)
    assert len(state["records"]) >= 42 and state["cursor"]
    assert f"records in {copy}" in out

    # nothing new: no change applied, the same cursor
    cursor = state["cursor"]
    assert run(script, copy, own_live, key).startswith("0 changes applied")
    assert json.loads(copy.read_text())["cursor"] == cursor

    # a load adds and changes records; a demo rebuild adds one and removes it again
    own_live.load([record("t-sync-1"), record("t-012", list_price=121_212)])
    own_live.load([record("d-sync-1")], origin="demo")
    own_live.load([record("d-sync-2")], origin="demo", replace_origin=True)
    out = run(script, copy, own_live, key)
    assert out.startswith("5 changes applied")
    state = json.loads(copy.read_text())
    assert state["records"] == served(own_live, key)
    assert state["records"]["t-012"]["listPrice"] == 121_212
    assert "t-sync-1" in state["records"] and "d-sync-2" in state["records"]
    assert "d-sync-1" not in state["records"]  # removed: its 404 deleted it from the copy
    assert state["cursor"] != cursor

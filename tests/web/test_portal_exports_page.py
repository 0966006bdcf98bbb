"""GET /dashboard/exports in a real browser at a desktop's and a phone's width: a Pro
account sees each snapshot with its size, rows and date and a download link per file (the
file downloads whole, its checksum the manifest's); a Free account is told which plan gives
exports. Screenshots land in var/screenshots/ (not kept)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_store, drop_store, new_store
from tests.live import run_apart, running_server
from tests.web.conftest import PASSWORD, ROOT, sign_up

pytestmark = pytest.mark.slow

SHOTS = ROOT / "var" / "screenshots"
PRO = "pro-exports@example.com"


def propdata(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    done = subprocess.run([sys.executable, "-m", "propdata", *args], env={**os.environ, **env},
                          input=stdin, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("exports-page")
    store = run_apart(new_store("embedded", folder))
    run_apart(build_store(store))
    env = {**store.env(), "PROPDATA_CACHE_TTL": "0", "PROPDATA_EXPORT_DIR": str(folder / "x")}
    propdata(env, "data", "export")
    propdata(env, "data", "export", "--format", "csv")
    propdata(env, "accounts", "create", PRO, stdin=PASSWORD + "\n")
    propdata(env, "keys", "create", "--plan", "pro", "--account", PRO)
    try:
        with running_server(env) as base:
            yield base, folder / "x"
    finally:
        run_apart(drop_store(store))


@pytest.mark.parametrize("width", [1280, 390])
def test_a_pro_account_lists_snapshots_and_downloads_a_file(
    browser: Any, served: tuple[str, Path], width: int
) -> None:
    base, root = served
    phone = width < 700
    context = browser.new_context(viewport={"width": width, "height": 844 if phone else 900},
                                  is_mobile=phone, accept_downloads=True)  # fmt: skip
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(base + "/login")
    page.fill("#email", PRO)
    page.fill("#password", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(base + "/dashboard")
    page.get_by_role("link", name="Exports").first.click()
    page.wait_for_url(base + "/dashboard/exports")
    rows = page.get_by_test_id("export-row")
    assert rows.count() == 2
    newest = rows.first.inner_text()
    assert "42 properties" in newest and "CSV" in newest and "kB" in newest
    manifests = sorted((json.loads(p.read_text()) for p in root.glob("*/manifest.json")),
                       key=lambda m: m["createdAt"], reverse=True)  # fmt: skip
    assert manifests[0]["createdAt"][:10] in newest
    listed = next(f for f in manifests[0]["files"] if f["name"] == "markets.csv")
    with page.expect_download() as waiting:
        rows.first.get_by_role("link", name="markets.csv").click()
    saved = waiting.value.path()
    assert hashlib.sha256(Path(saved).read_bytes()).hexdigest() == listed["sha256"]
    if phone:
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"portal-{'phone-' if phone else ''}exports.png"),
                    full_page=True)  # fmt: skip
    assert problems == []
    context.close()


def test_a_free_account_is_told_which_plan_gives_exports(
    browser: Any, served: tuple[str, Path]
) -> None:
    base, _ = served
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    sign_up(page, base, "free-exports@example.com")
    page.goto(base + "/dashboard/exports")
    said = page.get_by_test_id("exports-refused").inner_text()
    assert "Pro" in said and "Free" in said
    assert page.get_by_test_id("export-row").count() == 0
    answer = page.request.get(base + "/dashboard/exports/x/files/markets.parquet")
    assert answer.status == 403
    page.screenshot(path=str(SHOTS / "portal-exports-free.png"), full_page=True)
    context.close()

"""Pages are tested in a real browser: Debian's chromium driven by Playwright.

Playwright's own browser download is unreachable here, so it drives /usr/bin/chromium
(`executable_path`). `.ci/run` installs chromium with apt; without it (a laptop without
chromium) these tests skip, unless CI is set, where they fail.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Store, build_store, drop_store, new_store
from tests.live import run_apart, running_server

ROOT = Path(__file__).resolve().parent.parent.parent
IMAGES = ROOT / "docs" / "images"
PASSWORD = "correct horse battery staple 42"
"""The password of every account the browser tests sign up."""
FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        message = "Debian's chromium is not installed (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One Chromium per test module: Playwright's sync API keeps an event loop running on
    this thread while it lives, which other modules' asyncio.run() calls would trip on."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=FLAGS)
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def serving_store(folder: Path, env: dict[str, str] | None = None) -> Iterator[tuple[str, Store]]:
    """A built embedded store in `folder` served by `propdata serve` with `env` added: its
    base URL and the store, dropped afterwards."""
    store: Store = run_apart(new_store("embedded", folder))
    run_apart(build_store(store))
    try:
        with running_server({**store.env(), **(env or {})}) as base:
            yield base, store
    finally:
        run_apart(drop_store(store))


def sign_up(page: Any, server: str, address: str) -> None:
    """Sign `address` up (with PASSWORD) in the browser's `page`; it ends on the dashboard."""
    page.goto(server + "/signup")
    page.fill("#email", address)
    page.fill("#password", PASSWORD)
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url(server + "/dashboard")


def save_search(page: Any, **fields: str) -> None:
    """Fill the saved-search form (`minBeds="3"` fills #f-minBeds) and press Save search."""
    for name, value in fields.items():
        page.fill(f"#f-{name}", value)
    page.get_by_role("button", name="Save search").click()

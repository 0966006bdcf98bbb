"""The account pages in a real browser (Debian's chromium through Playwright), at a desktop's
and a phone's width: a key reads "never used", a paid plan is confirmed on its own page and the
dashboard says what changed, the billing statement, and the error pages' way forward. At a
phone's width the usage chart opens at its recent end and the audit table fits. Screenshots
land in docs/images/ for docs/portal.md."""

from __future__ import annotations

import email
import email.policy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.web.conftest import IMAGES, serving_store, sign_up


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    uncached = {"PROPDATA_CACHE_TTL": "0"}  # every request the page makes below is counted
    with serving_store(tmp_path_factory.mktemp("accounts"), uncached) as (base, store):
        yield base, store.folder / "outbox"


def verify_link(outbox: Path, address: str) -> str:
    for path in sorted(outbox.glob("*.eml"), reverse=True):
        mail = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)  # type: ignore[arg-type]
        if mail["To"] == address:
            found = re.search(r"https?://\S+/verify/\S+", mail.get_content())  # type: ignore[attr-defined]
            if found:
                return found.group(0)
    raise AssertionError(f"no verification mail to {address}")


def inside(page: Any, locator: Any, width: int) -> bool:
    box = locator.bounding_box()
    return box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width


@pytest.mark.parametrize("width", [1280, 390])
def test_account_pages(browser: Any, served: tuple[str, Path], width: int) -> None:
    server, outbox = served
    phone = width < 700
    prefix = "portal-phone-" if phone else "portal-"
    context = browser.new_context(viewport={"width": width, "height": 844 if phone else 900},
                                  is_mobile=phone)  # fmt: skip
    page = context.new_page()

    def shot(name: str, full: bool = False) -> None:
        if phone:
            assert page.evaluate("document.documentElement.scrollWidth") <= width, name
        page.screenshot(path=str(IMAGES / f"{prefix}{name}.png"), full_page=full)

    address = f"pages{width}@example.com"
    sign_up(page, server, address)
    key = page.get_by_test_id("new-key").inner_text().strip()
    row = page.get_by_test_id("key-row")
    assert "never used" in row.inner_text() and "last used" not in row.inner_text()
    for n in range(3):
        answer = httpx.get(
            f"{server}/v1/properties/t-00{n}", headers={"Authorization": f"Bearer {key}"}
        )
        assert answer.status_code == 200
    page.goto(verify_link(outbox, address))
    # a paid plan: the confirmation page first, then the dashboard says what changed
    page.goto(server + "/dashboard")
    page.select_option("select[name=plan]", "pro")
    page.get_by_role("button", name="Change plan…").click()
    assert "/plan?plan=pro" in page.url
    assert "$199 a month" in page.get_by_test_id("plan-offer").inner_text()
    shot("plan-confirm")
    page.get_by_role("button", name="Move to Pro").click()
    page.wait_for_url(server + "/dashboard")
    notice = page.get_by_test_id("notice")
    assert "Pro" in notice.inner_text() and "500" in notice.inner_text()
    if phone:  # the chart opens at its recent end; the audit table needs no sideways scroll
        bars = page.get_by_test_id("usage-chart").locator("rect.chart-bar")
        assert inside(page, bars.nth(23), width) and inside(page, bars.nth(53), width)
        table = page.locator("table.audit")
        assert table.evaluate("t => t.scrollWidth <= t.clientWidth + 1")
        assert inside(page, table, width)
    shot("dashboard-plan-changed", full=True)
    page.goto(server + "/dashboard/billing")
    # Free, then Pro, this month; the Free row only when its span lasted a whole timestamp
    # step (a fast run moves to Pro within the second the key was made).
    billed = page.get_by_test_id("billing-row").all_inner_texts()
    assert 1 <= len(billed) <= 2 and "Pro" in billed[-1], billed
    shot("billing", full=True)
    with page.expect_download() as download:
        page.get_by_role("link", name="Download CSV").click()
    assert download.value.suggested_filename == "propdata-billing.csv"
    # error pages lead a signed-in person onwards, never to "Log in"
    page.goto(server + "/admin")
    assert page.get_by_role("heading", name="Not allowed").is_visible()
    assert page.get_by_role("link", name="Log in").count() == 0
    assert page.get_by_role("link", name="Go to your dashboard").is_visible()
    shot("forbidden")
    answer = page.goto(server + "/no/such/page")
    assert answer is not None and answer.status == 404
    assert page.get_by_role("heading", name="Not found").is_visible()
    shot("not-found")
    context.close()

"""Saved searches and webhooks in a real browser (Debian's chromium through Playwright), at a
desktop's and a phone's width: a person saves a search and sees its match count, adds a
webhook endpoint on a local receiver, copies its secret shown once, sends a test event and
sees the delivery row. Nothing needs a sideways scroll on a phone. Screenshots land in
docs/images/ for docs/portal.md."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.portal.conftest import Receiver
from tests.web.conftest import IMAGES, save_search, serving_store, sign_up


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    env = {"PROPDATA_CACHE_TTL": "0", "PROPDATA_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32"}
    with serving_store(tmp_path_factory.mktemp("events"), env) as (base, _):
        yield base


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """One a test: the retry of the failed attempt one width's run leaves pending goes to its
    own receiver, never into the next run's count."""
    with Receiver() as made:
        yield made


@pytest.mark.parametrize("width", [1280, 390])
def test_save_a_search_and_watch_a_webhook_deliver(
    browser: Any, served: str, receiver: Receiver, width: int
) -> None:
    server = served
    phone = width < 700
    prefix = "portal-phone-" if phone else "portal-"
    context = browser.new_context(viewport={"width": width, "height": 844 if phone else 900},
                                  is_mobile=phone)  # fmt: skip
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))

    def fits(name: str) -> None:
        if phone:
            wide = page.evaluate(
                "[...document.querySelectorAll('body *')].filter(e =>"
                f" e.getBoundingClientRect().right > {width} + 1).map(e => e.tagName + '.'"
                " + e.className + '#' + (e.id || e.dataset.testid || '')).slice(0, 8)"
            )
            assert page.evaluate("document.documentElement.scrollWidth") <= width, (name, wide)

    def shot(name: str) -> None:
        fits(name)
        page.screenshot(path=str(IMAGES / f"{prefix}{name}.png"), full_page=True)

    sign_up(page, server, f"events{width}@example.com")

    # a saved search, from the dashboard's navigation
    page.get_by_role("link", name="Saved searches").click()
    page.wait_for_url(server + "/dashboard/searches")
    assert page.get_by_test_id("empty").is_visible()
    fits("searches-empty")
    save_search(page, name="Family homes in Ames", city="Ames", state="IA", minBeds="3")
    page.wait_for_url(server + "/dashboard/searches")
    row = page.get_by_test_id("search-row")
    assert row.count() == 1 and "Family homes in Ames" in row.inner_text()
    count = row.get_by_test_id("match-count").inner_text()
    assert count.replace(",", "").isdigit()
    save_search(page, name="Broken", minBeds="three")
    error = page.get_by_test_id("form-error")
    assert error.inner_text() == "Beds, at least: a whole number, such as 3."
    assert page.input_value("#f-minBeds") == "three"
    page.goto(server + "/dashboard/searches")
    shot("searches")

    # a webhook endpoint on the local receiver; its secret shown once
    page.get_by_role("link", name="Webhooks").click()
    page.wait_for_url(server + "/dashboard/webhooks")
    assert page.get_by_test_id("empty").is_visible()
    page.fill("#w-url", receiver.url)
    page.fill("#w-description", "Local receiver")
    page.get_by_label("webhook.test").check()
    page.get_by_label("search.entered").check()
    page.get_by_role("button", name="Add endpoint").click()
    page.wait_for_url(server + "/dashboard/webhooks")
    secret = page.get_by_test_id("webhook-secret").inner_text().strip()
    assert secret.startswith("whsec_")
    page.locator("[data-copy='#webhook-secret']").click()
    assert page.evaluate("navigator.clipboard.readText()") == secret
    shot("webhook-secret")

    # a test event reaches the receiver; the page shows its delivery
    seen = len(receiver.received)
    page.get_by_role("button", name="Send a test event").click()
    page.wait_for_url(server + "/dashboard/webhooks")
    assert page.get_by_test_id("webhook-secret").count() == 0  # shown once
    for _ in range(100):
        delivery = page.get_by_test_id("attempt-row")
        if delivery.count() and "succeeded" in delivery.first.inner_text():
            break
        time.sleep(0.2)
        page.reload()
    else:
        raise AssertionError(
            "no delivery shown: " + page.get_by_test_id("webhook-row").inner_text()
        )
    assert "webhook.test" in delivery.first.inner_text()
    assert "HTTP 204" in delivery.first.get_by_test_id("delivery-response").inner_text()
    assert len(receiver.received) == seen + 1
    assert receiver.received[-1].headers["webhook-signature"].startswith("v1,")
    shot("webhooks")

    # a receiver that fails: the failed attempt has its own row, beside the one to come
    receiver.status = 500
    try:
        page.get_by_role("button", name="Send a test event").click()
        page.wait_for_url(server + "/dashboard/webhooks")
        for _ in range(100):
            rows = page.get_by_test_id("attempt-row")
            if "HTTP 500" in rows.nth(1).inner_text():
                break
            time.sleep(0.2)
            page.reload()
        else:
            raise AssertionError("no failed attempt shown: " + rows.first.inner_text())
    finally:
        receiver.status = 204
    assert "pending" in rows.nth(0).inner_text() and "next try" in rows.nth(0).inner_text()
    assert "failed" in rows.nth(1).inner_text()
    assert "succeeded" in rows.nth(2).inner_text()
    shot("webhooks-attempts")
    assert problems == []
    context.close()

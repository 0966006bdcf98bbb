"""What a new user meets, in a real browser (Debian's chromium through Playwright) at a
desktop's and a phone's width: the landing page's plans with every column, price included;
a Free account at each of its limits (a second Free key, 3 saved searches, 1 webhook
endpoint) told why and what raises it, never offered a form that must fail; a refused field
said in its label; the webhook URL's hint as the operator's allowed networks make it; a
signed-in person's 404. Screenshots of the pages docs/portal.md shows land in docs/images/,
the rest in var/screenshots/ (not kept)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from propdata.plans import PLANS
from tests.conftest import Store, build_store, drop_store, new_store
from tests.live import run_apart, running_server
from tests.web.conftest import IMAGES, ROOT, save_search, sign_up

pytestmark = pytest.mark.slow

SHOTS = ROOT / "var" / "screenshots"
SHOWN = {"dashboard-key-limit", "searches-limit", "search-form-error", "webhooks-limit"}
"""The screenshots docs/portal.md shows."""
each_width = pytest.mark.parametrize("width", [1280, 390])
"""A desktop's width and a phone's."""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Two servers: one whose operator allows no network for webhooks (the default), one
    that allows loopback (a service run on a developer's own machine)."""
    stores: list[Store] = []
    try:
        for name in ("public", "loopback"):
            store = run_apart(new_store("embedded", tmp_path_factory.mktemp(name)))
            run_apart(build_store(store))
            stores.append(store)
        env = {"PROPDATA_CACHE_TTL": "0"}
        loopback = {**env, "PROPDATA_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8"}
        with (
            running_server({**stores[0].env(), **env}) as public,
            running_server({**stores[1].env(), **loopback}) as local,
        ):
            yield {"public": public, "loopback": local}
    finally:
        for store in stores:
            run_apart(drop_store(store))


class Visit:
    """A browser at one width, signed up on one server, taking screenshots."""

    def __init__(self, browser: Any, server: str, width: int) -> None:
        self.server, self.width = server, width
        self.phone = width < 700
        self.context = browser.new_context(
            viewport={"width": width, "height": 844 if self.phone else 900}, is_mobile=self.phone
        )
        self.page = self.context.new_page()
        self.problems: list[str] = []
        self.page.on("pageerror", lambda error: self.problems.append(str(error)))

    @classmethod
    def signed_up(cls, browser: Any, server: str, width: int, address: str) -> Visit:
        visit = cls(browser, server, width)
        sign_up(visit.page, server, address)
        return visit

    def shot(self, name: str) -> Path:
        """A full-page screenshot, after checking nothing runs off a phone's screen."""
        if self.phone:
            wide = self.page.evaluate("document.documentElement.scrollWidth")
            assert wide <= self.width, f"{name} is {wide} px wide"
        folder = IMAGES if name in SHOWN else SHOTS
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"portal-{'phone-' if self.phone else ''}{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def inside(self, locator: Any) -> bool:
        box = locator.bounding_box()
        return box is not None and box["x"] >= 0 and box["x"] + box["width"] <= self.width

    def add_the_one_endpoint(self, url: str) -> None:
        """Add a webhook endpoint to `url`: the Free plan's one, so the form gives way."""
        self.page.fill("#w-url", url)
        self.page.get_by_role("button", name="Add endpoint").click()
        self.page.wait_for_url(self.server + "/dashboard/webhooks")
        assert self.page.get_by_test_id("webhook-row").count() == 1
        assert self.page.get_by_role("button", name="Add endpoint").count() == 0

    def close(self) -> None:
        assert self.problems == []
        self.context.close()


@each_width
def test_the_landing_pages_plans_show_every_column(
    browser: Any, served: dict[str, str], width: int
) -> None:
    visit = Visit(browser, served["public"], width)
    visit.page.goto(visit.server + "/")
    rows = visit.page.get_by_test_id("plan-row")
    assert rows.count() == 4
    prices = visit.page.get_by_test_id("plan-price")
    assert [text.strip() for text in prices.all_inner_texts()] == [
        "Custom" if plan.price_usd is None else str(plan.price_usd) for plan in PLANS
    ]
    for n in range(4):
        price = prices.nth(n)
        assert price.is_visible() and visit.inside(price), n
        if visit.phone:  # a card per plan: each value beside its column's name
            assert "USD / month" in price.evaluate("e => getComputedStyle(e, '::before').content")
    curl = visit.page.locator("ol.steps pre").inner_text()
    assert "$PROPDATA_API_KEY" in curl and "$PROPDATA_BASE_URL/v1/" in curl
    visit.shot("home")
    visit.close()


@each_width
def test_a_free_account_at_its_limits_is_told_why_and_what_raises_them(
    browser: Any, served: dict[str, str], width: int
) -> None:
    visit = Visit.signed_up(browser, served["public"], width, f"limits{width}@example.com")
    page = visit.page

    # A second Free key can never be made: no form, the reason and the way out instead.
    assert page.get_by_role("button", name="Create key").count() == 0
    why = page.get_by_test_id("limit-reached")
    assert "at most one active Free key" in why.inner_text()
    assert "“Default key”" in why.inner_text() and "paid plan" in why.inner_text()
    visit.shot("dashboard-key-limit")

    # A refused field is said in its label, and the form keeps what was typed.
    page.goto(visit.server + "/dashboard/searches")
    save_search(page, name="Texas homes", state="Texas")
    error = page.get_by_test_id("form-error")
    assert error.inner_text() == "State: the two-letter code, such as TX."
    assert error.get_attribute("data-field") == "filters.state"
    assert page.input_value("#f-state") == "Texas"
    assert page.locator("#f-state").get_attribute("aria-invalid") == "true"
    visit.shot("search-form-error")

    # Three saved searches fill the Free plan: the form gives way to the limit.
    for n, state in enumerate(("IA", "TX", "WA")):
        assert page.get_by_role("button", name="Save search").count() == 1, n
        save_search(page, name=f"Homes in {state}", state=state)
        page.wait_for_url(visit.server + "/dashboard/searches")
    assert page.get_by_test_id("search-row").count() == 3
    assert page.get_by_role("button", name="Save search").count() == 0
    why = page.get_by_test_id("limit-reached").inner_text()
    assert "The Free plan holds at most 3 saved searches; the Developer plan holds 25" in why
    link = page.get_by_role("link", name="Change a key's plan")
    assert link.get_attribute("href") == "/dashboard#keys"
    visit.shot("searches-limit")

    # Webhooks, where the operator allows no network: the hint says so and how to receive
    # events locally; a local URL is refused naming the setting.
    page.goto(visit.server + "/dashboard/webhooks")
    hint = page.get_by_test_id("receive-help").inner_text()
    assert "propdata-client listen" in hint and "public addresses only" in hint
    assert "docs/events.md" in hint and "verify_webhook" in hint
    assert "to a public address)" in page.locator("label[for=w-url]").inner_text()
    page.fill("#w-url", "http://127.0.0.1:3000/hook")
    page.get_by_role("button", name="Add endpoint").click()
    error = page.get_by_test_id("form-error")
    assert "PROPDATA_WEBHOOK_ALLOWED_NETWORKS" in error.inner_text()
    visit.shot("webhook-url-error")
    visit.add_the_one_endpoint("https://93.184.215.14/hook")
    why = page.get_by_test_id("limit-reached").inner_text()
    assert "The Free plan holds at most 1 webhook endpoint; the Developer plan holds 5" in why
    assert "propdata-client listen" in page.get_by_test_id("receive-help").inner_text()
    visit.shot("webhooks-public-limit")

    # A signed-in person's 404 leads to the dashboard and keeps "Log out".
    answer = page.goto(visit.server + "/no/such/page")
    assert answer is not None and answer.status == 404
    assert page.get_by_role("button", name="Log out").is_visible()
    assert page.get_by_role("link", name="Go to your dashboard").is_visible()
    assert page.get_by_role("link", name="Log in").count() == 0
    visit.shot("not-found-signed-in")
    visit.close()


@each_width
def test_where_loopback_is_allowed_the_hint_offers_a_local_receiver(
    browser: Any, served: dict[str, str], width: int
) -> None:
    visit = Visit.signed_up(browser, served["loopback"], width, f"local{width}@example.com")
    page = visit.page
    page.goto(visit.server + "/dashboard/webhooks")
    label = page.locator("label[for=w-url]").inner_text()
    assert "http:// to a receiver on this service's machine" in label
    assert page.locator("#w-url").get_attribute("placeholder") == "http://127.0.0.1:3000/hook"
    hint = page.get_by_test_id("receive-help").inner_text()
    assert "public addresses only" not in hint and "verify_webhook" in hint
    visit.shot("webhooks-loopback")
    visit.add_the_one_endpoint("http://127.0.0.1:3000/hook")
    assert "at most 1 webhook endpoint" in page.get_by_test_id("limit-reached").inner_text()
    visit.shot("webhooks-limit")
    visit.close()

"""The portal in a real browser (Debian's chromium through Playwright): a person signs up
with JavaScript on, copies the key shown once, uses it, sees the usage, changes nothing
without a form token; and the same flow works with JavaScript off. Screenshots land in
docs/images/ for the README and docs/portal.md."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.web.conftest import IMAGES, PASSWORD, serving_store, sign_up

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving_store(tmp_path_factory.mktemp("portal")) as (base, _):
        yield base


def watch(page: Any, server: str) -> tuple[list[str], list[str]]:
    outside: list[str] = []
    problems: list[str] = []
    page.on(
        "request",
        lambda r: outside.append(r.url) if not r.url.startswith((server, "data:")) else None,
    )
    # A form answered 400 (shown again with its error) is logged by Chromium as a failed
    # load; anything else on the console (a CSP refusal, a script error) is a problem.
    page.on("console", lambda m: problems.append(m.text) if m.type == "error"
            and "server responded with a status of 4" not in m.text else None)  # fmt: skip
    page.on("pageerror", lambda error: problems.append(str(error)))
    return outside, problems


def test_sign_up_copy_the_key_and_see_usage(browser: Any, server: str) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    page = context.new_page()
    outside, problems = watch(page, server)
    page.goto(server + "/")
    assert page.get_by_role("heading", name="Plans").is_visible()
    page.screenshot(path=str(IMAGES / "portal-home.png"), full_page=True)
    page.get_by_role("link", name="Get a free API key").click()
    page.fill("#email", "Ada@Example.com")
    page.fill("#password", "short")
    page.get_by_role("button", name="Create account").click()
    error = page.get_by_test_id("form-error")
    assert "12" in error.inner_text()
    assert page.input_value("#email") == "Ada@Example.com" and page.input_value("#password") == ""
    page.fill("#password", PASSWORD)
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url(server + "/dashboard")
    key = page.get_by_test_id("new-key").inner_text().strip()
    assert key.startswith("pmd_live_")
    page.get_by_role("button", name="Copy").first.click()
    assert page.evaluate("navigator.clipboard.readText()") == key
    page.screenshot(path=str(IMAGES / "portal-new-key.png"), full_page=True)
    # use the key, then the dashboard shows the counted requests
    for path in ("/v1/properties/t-000", "/v1/properties/t-001", "/v1/properties/nope"):
        httpx.get(server + path, headers={"Authorization": f"Bearer {key}"})
    page.reload()
    assert page.get_by_test_id("new-key").count() == 0  # shown once
    row = page.get_by_test_id("key-row")
    assert row.get_by_test_id("usage-minute").inner_text() == "2 / 10"
    assert row.get_by_test_id("usage-day").inner_text() == "2 / 100"
    chart = row.get_by_test_id("usage-chart")
    assert chart.is_visible() and chart.locator("rect.chart-bar").count() == 54
    page.screenshot(path=str(IMAGES / "portal-dashboard.png"), full_page=True)
    # revoke, confirming the dialog; the key stops at once
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Revoke").click()
    page.wait_for_load_state()
    assert page.get_by_test_id("key-status").inner_text() == "revoked"
    answer = httpx.get(server + "/v1/properties/t-000", headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 401 and answer.json()["error"]["code"] == "revoked_api_key"
    assert not outside, outside
    assert not problems, problems  # a CSP refusal shows up here
    context.close()


def test_every_form_works_without_javascript(browser: Any, server: str) -> None:
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1000, "height": 800}
    )
    page = context.new_page()
    sign_up(page, server, "nojs@example.com")
    assert page.get_by_test_id("new-key").inner_text().startswith("pmd_live_")
    # a second Free key could never be made: the dashboard says why instead of a form
    assert page.get_by_role("button", name="Create key").count() == 0
    assert "at most one active Free key" in page.get_by_test_id("limit-reached").inner_text()
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(server + "/")
    page.goto(server + "/login")
    page.fill("#email", "nojs@example.com")
    page.fill("#password", "wrong password 99")
    page.get_by_role("button", name="Log in").click()
    assert page.get_by_test_id("form-error").is_visible()
    page.screenshot(path=str(IMAGES / "portal-login-error.png"))
    page.fill("#password", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(server + "/dashboard")
    assert page.get_by_test_id("key-row").count() == 1
    context.close()


def test_pages_fit_a_phone(browser: Any, server: str) -> None:
    """At a phone's width (390 px) nothing runs off the side; errors read in place."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()

    def fits(name: str) -> None:
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{name} is {width} px wide"
        page.screenshot(path=str(IMAGES / f"portal-phone-{name}.png"), full_page=True)

    page.goto(server + "/")
    fits("home")
    page.goto(server + "/signup")
    page.fill("#email", "not an address")
    page.fill("#password", PASSWORD)
    page.get_by_role("button", name="Create account").click()
    assert page.get_by_test_id("form-error").is_visible()
    fits("signup-error")
    page.fill("#email", "phone@example.com")
    page.fill("#password", PASSWORD)
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url(server + "/dashboard")
    fits("dashboard")
    context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_home_page_leads_with_a_real_house(browser: Any, server: str, width: int) -> None:
    """The landing page's lookup is a real Durham sale (docs/data.md), and at a phone's
    width nothing runs off the screen."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(server + "/")
    features = page.locator("section.features")
    assert "streetAddress=1616 Pinecrest Rd&city=Durham&state=NC" in features.inner_text()
    steps = page.locator("ol.steps").inner_text()
    assert "lookup?streetAddress=1616%20Pinecrest%20Rd&city=Durham&state=NC" in steps
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shots = IMAGES.parent.parent / "var" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / f"portal-home-{width}.png"), full_page=True)
    context.close()

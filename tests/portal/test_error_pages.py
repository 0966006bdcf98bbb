"""A browser gets an HTML page, with the right way forward, for unknown paths and refusals;
API clients keep the JSON error body."""

from __future__ import annotations

from typing import Any

from tests.portal.conftest import Person

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def nav(page: str) -> str:
    return page.split("<nav>")[1].split("</nav>")[0]


async def test_an_unknown_path_is_a_page_for_a_browser(person: Person) -> None:
    for path in ("/nowhere", "/dashboard/nothing-here", "/logout"):
        page = await person.client.get(path, headers=BROWSER)
        assert page.status_code in (404, 405), path
        assert page.headers["content-type"].startswith("text/html"), path
        assert "<h1>" in page.text and 'href="/"' in page.text, path
        assert "content-security-policy" in page.headers
    api = await person.client.get("/v1/nowhere", headers=BROWSER)
    assert api.status_code == 404 and api.json()["error"]["code"] == "not_found"
    plain = await person.client.get("/nowhere")
    assert plain.status_code == 404 and plain.json()["error"]["code"] == "not_found"


async def test_a_signed_in_person_is_never_sent_to_log_in_on_a_403(person: Person) -> None:
    await person.sign_up("kim@example.com")
    refused = await person.client.get("/admin", headers=BROWSER)
    assert refused.status_code == 403 and refused.headers["content-type"].startswith("text/html")
    assert "Log in" not in refused.text and 'href="/dashboard"' in refused.text
    assert "Log out" in nav(refused.text)
    forged = await person.client.post("/dashboard/keys", data={"csrf_token": "x", "name": "y"},
                                      headers=BROWSER)  # fmt: skip
    assert forged.status_code == 403 and "Log in" not in forged.text
    assert 'href="/dashboard"' in forged.text
    missing = await person.client.get("/nowhere", headers=BROWSER)
    assert missing.status_code == 404 and "Log in" not in missing.text


async def test_a_signed_in_persons_404_and_405_lead_to_the_dashboard_and_keep_log_out(
    person: Person,
) -> None:
    """No handler of the portal takes these requests, so nothing had looked the session up
    when the page was drawn."""
    await person.sign_up("lee@example.com")
    for method, path in (("GET", "/no/such/page"), ("GET", "/dashboard/nothing-here"),
                         ("PUT", "/dashboard"), ("GET", "/logout")):  # fmt: skip
        page = await person.client.request(method, path, headers=BROWSER)
        assert page.status_code in (404, 405) and page.headers["content-type"].startswith(
            "text/html"
        ), (method, path)
        assert "Log out" in nav(page.text) and "Log in" not in page.text, (method, path)
        assert 'href="/dashboard"' in page.text.split("</nav>")[1], (method, path)
        assert "Go to the home page" not in page.text, (method, path)
    api = await person.client.get("/v1/nowhere", headers=BROWSER)
    assert api.status_code == 404 and api.json()["error"]["code"] == "not_found"


async def test_a_visitor_refused_is_shown_where_to_log_in(person: Person, fresh: Any) -> None:
    refused = await person.client.get("/admin", headers=BROWSER)
    assert refused.status_code == 403 and 'href="/login"' in refused.text

"""GET /docs in a real browser: the reference renders, and nothing comes from elsewhere.

Its scripts come from the service itself: a script from a public CDN, with no integrity
check, would run on the very page where a person may paste a key.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.web.conftest import IMAGES, serving_store

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving_store(tmp_path_factory.mktemp("docs")) as (base, _):
        yield base


def test_docs_render_from_the_service_alone(browser: Any, server: str) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    requested: list[str] = []
    problems: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(server + "/docs")
    page.wait_for_selector("text=propdata: US property and market data API", timeout=20_000)
    page.get_by_text("/v1/properties/lookup", exact=True).wait_for()
    page.screenshot(path=str(IMAGES / "docs.png"))
    outside = [url for url in requested if not url.startswith((server, "data:"))]
    assert not outside, outside
    assert not problems, problems  # a CSP refusal shows up here
    page.close()


def test_pages_carry_the_security_headers(server: str) -> None:
    response = httpx.get(server + "/docs")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    policy = response.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy
    assert "http" not in policy  # no other origin anywhere in it
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["referrer-policy"] == "same-origin"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "cdn" not in response.text and "//" not in response.text.replace("<!doctype", "")
    asset = httpx.get(server + "/static/docs/swagger-ui-bundle.js")
    assert asset.status_code == 200 and "max-age=86400" in asset.headers["cache-control"]

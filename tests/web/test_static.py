"""No path reaches a 500: hostile names under /static and the portal's paths are 4xx."""

from __future__ import annotations

from typing import Any

import pytest

HOSTILE = [
    "/static/%00", "/static/portal.css%00", "/static/%00/portal.css", "/static/" + "a" * 300,
    "/static/" + "a/" * 2_000, "/static/" + "%41" * 4_000, "/static/%ff%fe", "/static/%C0%AE%C0%AE/",
    "/static/..%2f..%2fetc%2fpasswd", "/static/.%2e/.%2e/etc/passwd", "/static/docs/%00",
    "/%00", "/dashboard/%00", "/reset/%00", "/docs/%00", "/login%00", "/" + "b" * 300,
]  # fmt: skip


@pytest.mark.parametrize("path", HOSTILE)
async def test_hostile_paths_are_never_a_500(client: Any, path: str) -> None:
    response = await client.get(path)
    assert 400 <= response.status_code < 500, (path[:60], response.status_code)
    assert "Traceback" not in response.text


async def test_the_assets_are_still_served(client: Any) -> None:
    response = await client.get("/static/portal.css")
    assert response.status_code == 200 and "max-age=86400" in response.headers["cache-control"]

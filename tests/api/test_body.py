"""Every write under /v1 that takes a JSON body keeps the rules of `api.body.document`, on
both stores: nested at most 32 levels, no name twice in one object, no bidirectional control
character in any text. Each break is a 400 naming the field, never a 500, and changes
nothing."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from propdata.api.body import MAX_DEPTH
from propdata.events import cursor
from tests.conftest import KeyMaker

PUBLIC = "https://93.184.215.14/hook"
SEARCH = {"name": "Ames", "filters": {"city": "Ames", "state": "IA"}}
WRITES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/searches"): {**SEARCH},
    ("PATCH", "/v1/searches/{id}"): {"name": "Ames again"},
    ("POST", "/v1/webhooks"): {"url": PUBLIC},
    ("PATCH", "/v1/webhooks/{id}"): {"description": "ours"},
    ("POST", "/v1/webhooks/{id}/rotate-secret"): {"graceSeconds": 60},
    ("POST", "/v1/webhooks/{id}/replay"): {"since": cursor.encode(0)},
}
"""Each write that takes a body, with a body it takes."""


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def nested(good: dict[str, Any], levels: int) -> bytes:
    """`good` with a field `x` holding an array `levels` deep (`[[...]]`), written as text:
    Python's own encoder stops near 1,000 levels."""
    return json.dumps({**good, "x": 0}).replace("0}", "[" * levels + "]" * levels + "}").encode()


@dataclass(frozen=True)
class Write:
    """One write of WRITES with a key of its own, `url` its path with the key's ids."""

    method: str
    path: str
    secret: str
    url: str

    @property
    def good(self) -> dict[str, Any]:
        """The body of WRITES it takes."""
        return WRITES[(self.method, self.path)]


@pytest.fixture(params=list(WRITES), ids=[" ".join(w) for w in WRITES])
async def write(request: pytest.FixtureRequest, client: Any, make_key: KeyMaker) -> Write:
    """Each write, on a new key holding one saved search and one webhook endpoint."""
    method, path = request.param
    secret = await make_key()
    search = await client.post("/v1/searches", json=SEARCH, headers=bearer(secret))
    webhook = await client.post("/v1/webhooks", json={"url": PUBLIC}, headers=bearer(secret))
    assert search.status_code == webhook.status_code == 201, (search.text, webhook.text)
    ids = {"searches": search.json()["data"]["id"], "webhooks": webhook.json()["data"]["id"]}
    return Write(method, path, secret, path.replace("{id}", ids[path.split("/")[2]]))


async def _state(client: Any, secret: str) -> tuple[Any, Any]:
    searches = await client.get("/v1/searches", headers=bearer(secret))
    webhooks = await client.get("/v1/webhooks", headers=bearer(secret))
    return searches.json()["data"], webhooks.json()["data"]


async def test_the_table_holds_every_write_that_takes_a_body(client: Any) -> None:
    document = (await client.get("/openapi.json")).json()
    writes = {
        (method.upper(), path)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if method in ("post", "put", "patch") and "requestBody" in operation
    }
    assert writes == set(WRITES)


def _bad_bodies(good: dict[str, Any]) -> list[tuple[bytes, str, str]]:
    """(body, the parameter its 400 names, a word of its message) for each rule."""
    first = next(iter(good))
    text = next((name for name, value in good.items() if isinstance(value, str)), None)
    repeated = json.dumps(good)[:-1] + f", {json.dumps(first)}: {json.dumps(good[first])}}}"
    bodies = [
        (nested(good, 1_000), "body", "deeper than 32"),
        (nested(good, MAX_DEPTH), "body", "deeper than 32"),  # the body itself is a level
        (repeated.encode(), first, "more than once"),
        (b'{"a": {"b": 1, "b": 2}}', "a.b", "more than once"),
        ('["\u202e"]'.encode(), "body", "bidirectional"),
    ]
    if text is not None:
        for bidi in ("\u202a", "\u202e", "\u2066", "\u2069"):
            spoofed = {**good, text: f"{good[text]}{bidi}gpj.exe"}
            bodies.append((json.dumps(spoofed, ensure_ascii=False).encode(), text, "bidirectional"))
    return bodies


async def test_a_body_past_the_rules_is_a_400_naming_the_field_and_changes_nothing(
    client: Any, write: Write
) -> None:
    secret = write.secret
    before = await _state(client, secret)
    for body, parameter, said in _bad_bodies(write.good):
        answer = await client.request(write.method, write.url, content=body, headers={
            **bearer(secret), "Content-Type": "application/json"})  # fmt: skip
        assert answer.status_code == 400, (body[:80], answer.text)
        error = answer.json()["error"]
        assert (error["code"], error["parameter"]) == ("invalid_parameter", parameter), body[:80]
        assert said in error["message"], error
    assert await _state(client, secret) == before


async def test_a_body_within_the_rules_is_taken(client: Any, write: Write) -> None:
    """Each write's own body; right-to-left text without controls; 32 levels."""
    secret = write.secret
    answer = await client.request(write.method, write.url, json=write.good, headers=bearer(secret))
    assert answer.status_code in (200, 201, 202), answer.text
    if (write.method, write.path) == ("POST", "/v1/searches"):
        arabic = {**SEARCH, "name": "منازل أميس"}
        named = await client.post("/v1/searches", json=arabic, headers=bearer(secret))
        assert named.status_code == 201 and named.json()["data"]["name"] == "منازل أميس"
        deep = nested({**SEARCH, "filters": {"city": "Ames", "state": "IA"}}, MAX_DEPTH - 1)
        refused = await client.post("/v1/searches", content=deep, headers={
            **bearer(secret), "Content-Type": "application/json"})  # fmt: skip
        assert refused.json()["error"]["parameter"] == "x"  # its own rule at 32 levels, not depth

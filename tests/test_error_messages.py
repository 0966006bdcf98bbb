"""Error messages say what is expected in the API's own words: every bad value of every
parameter of every operation (read from the app's OpenAPI document) is answered with a
message that names the parameter, lists the allowed values of an enumeration, and cites
neither a file of the repository nor a validator's wording."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest

from propdata.app import create_app
from propdata.config import Settings

FORBIDDEN = [
    re.compile(r"\.md\b"),
    re.compile(r"\bdocs/"),
    re.compile(r"`"),  # msgspec quotes types in backticks: "Expected `int`, got `str`"
    re.compile(r"\bExpected\b"),
    re.compile(r"\bgot\b"),
    re.compile(r"enum value", re.I),
    re.compile(r"\$\."),  # a validator's path into a document ("at `$.limit`")
    re.compile(r"\b(?:regex|msgspec|litestar|pydantic|Traceback)\b", re.I),
]
BAD_VALUES = ["x", "-1", "0", "1.5", "99999999999999999999", "", "a" * 2100, "\x01", "sold", "ZZ"]
"""Wrong type, negative, zero, a fraction, too big, empty, too long, a control character,
and words no enumeration, state or ZIP code holds."""


STREAMS = {"/v1/events/stream"}
"""Answers that never end, which this in-process client would wait for: the stream's bad
values are checked on a real server (tests/events/test_stream.py)."""


@pytest.fixture(scope="module")
def operations(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    path = tmp_path_factory.mktemp("messages") / "x.db"
    document = create_app(Settings(database_url=str(path))).openapi_schema.to_schema()
    found = []
    for route, item in document["paths"].items():
        if route.startswith("/v1") and route not in STREAMS:
            # The GETs: every path parameter of a write is also a GET's (the same id), and a
            # write's body has its own tests (tests/events, tests/webhooks).
            found += [{"path": route, **op} for method, op in item.items() if method == "get"]
    return found


def _enum(parameter: dict[str, Any]) -> list[str]:
    schema = parameter["schema"]
    values = schema.get("enum") or [
        v for one in schema.get("oneOf", []) for v in one.get("enum", [])
    ]
    return [value for value in values if value is not None]


def _request(operation: dict[str, Any], changes: dict[str, str | None]) -> str:
    """The operation's URL with its required parameters filled and `changes` applied."""
    values: dict[str, str | None] = {}
    for parameter in operation.get("parameters", []):
        if parameter.get("required"):
            examples = parameter.get("examples", {})
            values[parameter["name"]] = next(iter(examples.values()))["value"]
    values.update(changes)
    path = operation["path"]
    query = []
    for parameter in operation.get("parameters", []):
        name, value = parameter["name"], values.get(parameter["name"])
        if value is None:
            continue
        if parameter["in"] == "path":
            # a parameter that takes slashes (a snapshot's file name) is sent with them
            slashes = "/" in parameter.get("schema", {}).get("pattern", "")
            path = path.replace("{" + name + "}", quote(value, safe="/" if slashes else ""))
        else:
            query.append(f"{quote(name)}={quote(value, safe='')}")
    return path + ("?" + "&".join(query) if query else "")


def check(message: str, where: str) -> None:
    for pattern in FORBIDDEN:
        assert not pattern.search(message), (where, message)


async def test_every_bad_value_gets_a_message_in_the_apis_words(
    client: Any, auth: dict[str, str], operations: list[dict[str, Any]]
) -> None:
    answers = 0
    for operation in operations:
        parameters = operation.get("parameters", [])
        for parameter in parameters:
            name = parameter["name"]
            allowed = _enum(parameter)
            tries: list[dict[str, str | None]] = [{name: value} for value in BAD_VALUES]
            if parameter.get("required") and parameter["in"] == "query":
                tries.append({name: None})
            for change in tries:
                url = _request(operation, change)
                response = await client.get(url, headers=auth)
                assert response.status_code < 500, (url, response.text)
                if response.status_code != 400:
                    continue
                answers += 1
                error = response.json()["error"]
                check(error["message"], url)
                if error["parameter"] == name:
                    assert name in error["message"], (url, error)
                    if allowed and change[name] != "\x01":  # the control-character rule
                        assert all(value in error["message"] for value in allowed), (url, error)
        # An unknown parameter, and one given twice.
        base = _request(operation, {})
        joint = "&" if "?" in base else "?"
        query = [p["name"] for p in parameters if p["in"] == "query"]
        urls = [base + joint + "colour=red"]
        if query:
            urls.append(f"{base}{joint}{query[0]}=1&{query[0]}=2")
        for url in urls:
            response = await client.get(url, headers=auth)
            assert response.status_code == 400, (url, response.text)
            check(response.json()["error"]["message"], url)
    assert answers > 200


async def test_other_errors_are_in_the_apis_words(client: Any, auth: dict[str, str]) -> None:
    for url, headers, status in [
        ("/v1/properties", {}, 401),
        ("/v1/properties", {"Authorization": "Bearer nope"}, 401),
        ("/v1/properties/x-000", auth, 404),
        ("/v1/nothing", auth, 404),
        ("/v1/markets/99999", auth, 404),
        ("/v1/properties/lookup?streetAddress=5+Broadway&city=New+York&state=NY", auth, 409),
    ]:
        response = await client.get(url, headers=headers)
        assert response.status_code == status, (url, response.text)
        check(response.json()["error"]["message"], url)
    response = await client.post("/v1/properties", headers=auth)
    assert response.status_code == 405
    check(response.json()["error"]["message"], "POST /v1/properties")

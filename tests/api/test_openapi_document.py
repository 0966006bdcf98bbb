"""The OpenAPI document's answers, read in-process: every error answer of every operation is
the contract's error body with real examples of its own status; nothing of Litestar's own
validation body and no generated example is left."""

from __future__ import annotations

import re
from typing import Any

import pytest

from propdata import errors
from propdata.app import create_app
from propdata.config import Settings

CODES = {
    cls.code: cls.status
    for cls in vars(errors).values()
    if isinstance(cls, type)
    and issubclass(cls, errors.ServiceError)
    and cls is not errors.ServiceError
} | {"headers_too_large": 431, "internal_error": 500}
EVERY_V1 = {"200", "400", "401", "431", "500", "503"}
MANAGED = ("/v1/webhooks", "/v1/searches")
"""Paths whose requests are not counted but are limited per minute (429, never 304)."""


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("document") / "x.db"
    schema: dict[str, Any] = create_app(Settings(database_url=str(path))).openapi_schema.to_schema()
    return schema


def _operations(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(path, op) for path, item in document["paths"].items() for op in item.values()]


def test_every_error_answer_is_the_error_body_with_real_examples(document: dict[str, Any]) -> None:
    for path, operation in _operations(document):
        for status, response in operation["responses"].items():
            if int(status) < 400 or (path == "/health" and status == "503"):
                continue
            media = response["content"]["application/json"]
            assert media["schema"] == {"$ref": "#/components/schemas/ErrorResponse"}, (path, status)
            assert media["examples"], (path, status)
            for name, example in media["examples"].items():
                body = example["value"]["error"]
                assert body["status"] == int(status), (path, status, name)
                assert CODES[body["code"]] == int(status), (path, status, name)
                assert re.fullmatch(r"req_[0-9a-f]{16}", body["requestId"])
                assert ("parameter" in body) == (status == "400"), (path, status, name)
                assert body["message"].endswith("."), (path, status, body["message"])


NEVER_COUNTED = {"/v1/auth/status", "/v1/exports"}
"""Verified, never counted nor limited: no 429, and no ETag to answer 304 with."""


def test_every_operation_lists_what_it_can_answer(document: dict[str, Any]) -> None:
    for path, operation in _operations(document):
        statuses = set(operation["responses"])
        if path == "/health":
            assert statuses == {"200", "431", "500", "503"}
            assert operation["security"] == []
            continue
        counted = path not in NEVER_COUNTED
        metered = counted and not path.startswith(MANAGED)
        streamed = path == "/v1/events/stream"  # no ETag: never the same answer twice
        success = {s for s in statuses if s.startswith("2")}
        ranged = path == "/v1/exports/{exportId}/files/{name}"  # 206 answers a Range
        assert success == ({"200", "206"} if ranged else success) and len(success) == 1 + ranged, (
            path
        )
        expected = EVERY_V1 - {"200"} | success | ({"304"} if metered and not streamed else set())
        assert expected | ({"429"} if counted else set()) <= statuses, path
        assert "304" not in statuses or not streamed, path
        retry = {
            s for s, r in operation["responses"].items() if "Retry-After" in r.get("headers", {})
        }
        assert retry == {"429", "503"} & statuses, path
    assert "MethodNotAllowed" in document["components"]["responses"]


def test_no_litestar_validation_body_and_no_generated_examples(document: dict[str, Any]) -> None:
    text = str(document)
    for leftover in ("status_code", "'detail'", "'extra'", "Validation Exception"):
        assert leftover not in text
    for name, schema in document["components"]["schemas"].items():
        assert "examples" not in schema, name


def test_a_change_of_the_feed_is_created_updated_or_removed(document: dict[str, Any]) -> None:
    change = document["components"]["schemas"]["PropertyChange"]["properties"]["changeType"]
    assert sorted(change["enum"]) == ["created", "removed", "updated"]


def test_no_choice_of_one_schema(document: dict[str, Any]) -> None:
    """A field a PATCH body may leave out (`X | UnsetType`) is X's schema, not `oneOf: [X]`."""
    lonely: list[str] = []

    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            lonely.extend(
                f"{where}/{k}" for k in ("oneOf", "anyOf") if len(node.get(k, [1, 2])) < 2
            )
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{where}/{index}")

    walk(document, "#")
    assert not lonely
    change = document["components"]["schemas"]["EndpointChange"]
    assert "url" not in change["required"]
    assert change["properties"]["url"] == {
        "type": "string", "minLength": 1, "maxLength": 2048, "description": "https:// URL",
    }  # fmt: skip
    assert change["properties"]["status"] == {"type": "string", "enum": ["enabled", "disabled"]}


def test_the_introduction_names_every_write_and_the_405_for_the_rest(
    document: dict[str, Any],
) -> None:
    """The introduction says which methods the API takes, from the routes: every write the
    document holds, and no other."""
    said = document["info"]["description"]
    named = set(re.findall(r"`((?:POST|PUT|PATCH|DELETE) /v1/[^`]*)`", said))
    writes = {
        f"{method.upper()} {path}"
        for path, item in document["paths"].items()
        for method in item
        if method not in ("get", "head")
    }
    assert writes and named == writes
    assert "405" in said and "any method but GET" not in said.lower()
    assert "Any method but GET" not in str(document["components"]["responses"])


def test_every_component_schema_is_reached_from_an_operation(document: dict[str, Any]) -> None:
    """A schema no operation reaches is a type a generated client makes for nothing (and a
    body described inline beside its own unused component)."""
    schemas = document["components"]["schemas"]
    reached: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
                name = ref.rsplit("/", 1)[-1]
                if name not in reached:
                    reached.add(name)
                    walk(schemas[name])
            for item in value.values():
                walk(item)

    walk(document["paths"])
    walk(document["components"].get("responses", {}))
    walk(document["components"].get("headers", {}))
    assert set(schemas) - reached == set()

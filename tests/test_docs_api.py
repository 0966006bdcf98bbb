"""docs/api.md cannot fall behind the code: every path, parameter, field, value and code is in it.

The names come from the app's own OpenAPI document (built in-process, no server, no store)
and from propdata.errors, so a new parameter, response field, enum value or error code
fails this test until the reference describes it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from propdata import errors
from propdata.app import create_app
from propdata.config import Settings

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"

# contract.md's error table: every code the API answers with.
CONTRACT_CODES = {
    "invalid_parameter", "missing_api_key", "invalid_api_key", "revoked_api_key", "not_found",
    "ambiguous_address", "method_not_allowed", "rate_limit_exceeded", "quota_exceeded",
    "internal_error", "service_unavailable",
}  # fmt: skip
HEADERS = {
    "Authorization", "WWW-Authenticate", "X-Request-Id", "X-RateLimit-Limit",
    "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-Quota-Limit", "X-Quota-Remaining",
    "X-Quota-Reset", "X-Cache", "Retry-After", "Allow", "ETag",
}  # fmt: skip
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)+")


@pytest.fixture(scope="module")
def schema(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("docs") / "x.db"
    document: dict[str, Any] = create_app(
        Settings(database_url=str(path))
    ).openapi_schema.to_schema()
    return document


@pytest.fixture(scope="module")
def text() -> str:
    return DOC.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def code_tokens(text: str) -> set[str]:
    return _inline_tokens(text)


def _inline_tokens(text: str) -> set[str]:
    """Every identifier written as inline code in prose or tables (examples do not count)."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    spans = _CODE_SPAN.findall(prose)
    # A dotted name stands for its parts (`limits.perMinute`) and, whole, for a value that
    # holds dots (the event type `property.listed`).
    return {token for span in spans for token in _TOKEN.findall(span) + _DOTTED.findall(span)}


def _operations(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (path, operation)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if method == "get"
    ]


def _sections(text: str) -> dict[str, str]:
    """Text under each heading that names an operation ("GET /v1/..."), keyed by path."""
    sections: dict[str, str] = {}
    lines = text.splitlines()
    for index, line in enumerate(lines):
        heading = re.match(r"^(#+)\s", line)
        if not heading:
            continue
        level = len(heading.group(1))
        end = next(
            (
                j
                for j in range(index + 1, len(lines))
                if (m := re.match(r"^(#+)\s", lines[j])) and len(m.group(1)) <= level
            ),
            len(lines),
        )
        body = "\n".join(lines[index:end])
        for path in re.findall(r"GET (/[A-Za-z0-9_/{}]*)", line):
            sections.setdefault(path, body)
    return sections


def _walk(node: Any, fields: set[str], values: set[str]) -> None:
    """Property names and string enum values anywhere in a JSON Schema."""
    if isinstance(node, dict):
        for name, sub in node.get("properties", {}).items():
            fields.add(name)
            _walk(sub, fields, values)
        for value in node.get("enum", []):
            if isinstance(value, str):
                values.add(value)
        for key, sub in node.items():
            if key not in ("properties", "enum"):
                _walk(sub, fields, values)
    elif isinstance(node, list):
        for item in node:
            _walk(item, fields, values)


def test_every_operation_has_its_own_section(schema: dict[str, Any], text: str) -> None:
    sections = _sections(text)
    missing = [path for path, _ in _operations(schema) if path not in sections]
    assert not missing, f"docs/api.md has no '### GET <path>' section for {missing}"


def test_every_parameter_is_described_in_its_section(schema: dict[str, Any], text: str) -> None:
    sections = _sections(text)
    missing = []
    for path, operation in _operations(schema):
        section = sections.get(path, "")
        names = _inline_tokens(section)
        for parameter in operation.get("parameters", []):
            if parameter["name"] not in names:
                missing.append(f"{path}: {parameter['name']}")
    assert not missing, f"parameters not in their endpoint's section: {missing}"


def test_every_response_field_and_value_is_documented(
    schema: dict[str, Any], code_tokens: set[str]
) -> None:
    fields: set[str] = set()
    values: set[str] = set()
    for component in schema["components"]["schemas"].values():
        _walk(component, fields, values)
    for _, operation in _operations(schema):
        for parameter in operation.get("parameters", []):
            _walk(parameter.get("schema", {}), set(), values)
    assert len(fields) > 60  # the walk found the schemas
    missing = sorted(fields - code_tokens)
    assert not missing, f"response fields missing from docs/api.md: {missing}"
    missing = sorted(values - code_tokens)
    assert not missing, f"enum values missing from docs/api.md: {missing}"


def test_every_error_code_is_documented(code_tokens: set[str]) -> None:
    in_code = {
        cls.code
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, errors.ServiceError)
    }
    codes = CONTRACT_CODES | in_code | set(errors.STATUS_CODES.values())
    missing = sorted(codes - code_tokens)
    assert not missing, f"error codes missing from docs/api.md: {missing}"


LIMITS = Path(__file__).resolve().parents[1] / "src" / "propdata" / "kit" / "serving" / "limits.py"


def _kinds(cls: type[errors.ServiceError]) -> list[type[errors.ServiceError]]:
    return [cls, *(kind for sub in cls.__subclasses__() for kind in _kinds(sub))]


def test_the_error_table_has_one_row_for_each_answer_of_errors_py(text: str) -> None:
    """The table's statuses and codes are those of errors.py's API errors and the server's own
    refusals (kit/serving/limits.py), each pair on one row."""
    section = text.split("\n## Errors\n", 1)[1].split("\n## ", 1)[0]
    rows = [(int(status), code) for status, code in
            re.findall(r"^\| (\d{3}) \| `([a-z_]+)` \|", section, re.M)]  # fmt: skip
    assert len(rows) == len(set(rows)), sorted(r for r in rows if rows.count(r) > 1)
    answered = {(kind.status, kind.code) for kind in _kinds(errors.ServiceError)
                if kind not in errors.PORTAL_ONLY}  # fmt: skip
    server = {(int(status), code) for status, code in
              re.findall(r'_refuse\(\s*(\d{3}),\s*"([a-z_]+)"', LIMITS.read_text())}  # fmt: skip
    assert server and set(rows) == answered | server


def test_every_header_is_documented(schema: dict[str, Any], code_tokens: set[str]) -> None:
    declared = {
        name
        for _, operation in _operations(schema)
        for response in operation["responses"].values()
        for name in response.get("headers", {})
    }
    assert declared <= HEADERS, f"new response headers: {declared - HEADERS}"
    missing = sorted(HEADERS - code_tokens)
    assert not missing, f"headers missing from docs/api.md: {missing}"


def test_interactive_docs_and_openapi_are_named(text: str) -> None:
    assert "/openapi.json" in text and "/docs" in text

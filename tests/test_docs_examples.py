"""Every example of the README, docs/*.md and the SDKs' READMEs answers with data, on a demo
built on another day than today.

The demo is what `make run` builds (`propdata data demo`, its default synthetic set), built
as of a day that is not today: the synthetic homes are the same on any day, the real ones
are the sources', so an example written on one day must still answer on every other.
Run: each `curl` of the API in a shell block (GETs; the writes, streams and documented
errors are listed in NOT_DATA with the reason), each SDK call naming a property, an address
or a ZIP code, and each lookup written inline as `GET /v1/properties/lookup?...`.
"""

from __future__ import annotations

import datetime as dt
import re
import shlex
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.live import BUILT, serving_demo
from tests.test_docs_names import BASE, KEY, ROOT

TEXTS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "clients").glob("*/README.md")),
]

NOT_DATA = {
    " -X ": "a write (POST, PATCH, DELETE): not a question the demo's data answers",
    " -N ": "an event stream: it stays open",
    "/v1/events": "the event log: empty until a saved search sees a change",
    "offset=100000": "documents the empty page past the end",
    "curl -i ": "documents the 401 without a key",
    "/v1/exports": "a snapshot's id is its own: tests/exports/test_guide.py makes one and runs"
    " the guide's listing and downloads",
}
"""An example containing the key is not run, for the reason given."""


@dataclass
class Example:
    where: str
    text: str
    path: str
    params: list[tuple[str, str]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    lookup: bool = False

    def __str__(self) -> str:
        return f"{self.where}: {self.text[:160]}"


def _shell_blocks(text: str) -> Iterator[str]:
    fence: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("```"):
            if fence is None:
                fence, lines = line[3:].strip(), []
            else:
                if fence in ("sh", "bash", "shell", "console", ""):
                    yield "\n".join(lines)
                fence = None
        elif fence is not None:
            lines.append(line)


def _curl(where: str, command: str) -> Example:
    if any(key in command for key in NOT_DATA):  # not run: no need to read it
        path = re.search(r"/v1/[^\s\"'?]*", command)
        return Example(where, command.strip(), path[0] if path else "")
    words = shlex.split(command.replace(f"${KEY}", "KEY").replace(f"${BASE}", "http://base"))
    url, params, headers = "", [], {}
    words = words[words.index("curl") + 1 :]
    i = 0
    while i < len(words):
        word = words[i]
        if word == "-H":
            name, _, value = words[i + 1].partition(":")
            headers[name.strip()] = value.strip()
            i += 1
        elif word == "--data-urlencode":
            name, _, value = words[i + 1].partition("=")
            params.append((name, value))
            i += 1
        elif word.startswith("http://base"):
            url = word
        i += 1
    parts = urllib.parse.urlsplit(url)
    params = urllib.parse.parse_qsl(parts.query, keep_blank_values=True) + params
    return Example(where, command.strip(), parts.path, params, headers,
                   lookup=parts.path.endswith("/lookup"))  # fmt: skip


SDK_CALLS = [
    (re.compile(r"properties\.(get|history|valuation)\(\s*[\"']([\w.-]+)[\"']"), "record"),
    (
        re.compile(r"properties\.lookup\(\s*\"([^\"]+)\",\s*\"([^\"]+)\",\s*\"([A-Za-z]{2})\""),
        "lookup",
    ),
    (
        re.compile(
            r"lookup\(\{\s*streetAddress:\s*\"([^\"]+)\",\s*city:\s*\"([^\"]+)\","
            r"\s*state:\s*\"([A-Za-z]{2})\""
        ),
        "lookup",
    ),
    (
        re.compile(r"lookup\((?:\{\s*)?(address|parcel_id|parcelId)(?:=|:\s*)\"([^\"]+)\""),
        "lookup-one",
    ),
    (re.compile(r"markets\.(get|history)\(\s*\"(\d{5})\""), "market"),
]
INLINE_LOOKUP = re.compile(r"`GET (/v1/properties/lookup\?[^`]+)`")


def examples() -> list[Example]:
    found: list[Example] = []
    for path in TEXTS:
        where = str(path.relative_to(ROOT))
        text = path.read_text(encoding="utf-8")
        for block in _shell_blocks(text):
            for command in block.replace("\\\n", " ").splitlines():
                if "curl" in command and "/v1/" in command:
                    found.append(_curl(where, command))
        for pattern, kind in SDK_CALLS:
            for match in pattern.finditer(text):
                groups = match.groups()
                if kind == "record":
                    method, pid = groups
                    tail = "" if method == "get" else f"/{method}"
                    found.append(Example(where, match[0], f"/v1/properties/{pid}{tail}"))
                elif kind == "lookup":
                    street, city, state = groups
                    params = [("streetAddress", street), ("city", city), ("state", state)]
                    found.append(Example(where, match[0], "/v1/properties/lookup", params,
                                         lookup=True))  # fmt: skip
                elif kind == "lookup-one":
                    name = "parcelId" if groups[0].startswith("parcel") else "address"
                    found.append(Example(where, match[0], "/v1/properties/lookup",
                                         [(name, groups[1])], lookup=True))  # fmt: skip
                else:
                    method, zip_code = groups
                    tail = "" if method == "get" else "/history"
                    found.append(Example(where, match[0], f"/v1/markets/{zip_code}{tail}"))
        for match in INLINE_LOOKUP.finditer(text):
            parts = urllib.parse.urlsplit(match[1])
            params = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
            if params and all(value and "…" not in value for _, value in params):
                found.append(Example(where, match[0], parts.path, params, lookup=True))
    return found


def not_data(example: Example) -> str | None:
    for key, reason in NOT_DATA.items():
        if key in example.text or key == example.path:
            return reason
    return None


def test_the_examples_are_found() -> None:
    found = examples()
    wheres = {e.where for e in found}
    assert {"README.md", "docs/api.md", "clients/python/README.md",
            "clients/typescript/README.md"} <= wheres  # fmt: skip
    assert len([e for e in found if not not_data(e)]) > 30
    assert any(e.lookup and e.where == "README.md" for e in found)


@pytest.fixture(scope="module")
def demo(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """A server of the default demo built as of BUILT, and an Enterprise key."""
    folder = tmp_path_factory.mktemp(f"examples-{backend}")
    with serving_demo(backend, folder, timeout=60) as client:
        yield client


def _has_data(body: Any) -> bool:
    data = body.get("data") if isinstance(body, dict) else None
    return bool(data)


@pytest.mark.slow
def test_every_example_answers_with_data(demo: httpx.Client) -> None:
    assert dt.date.today() != BUILT
    failures: list[str] = []
    cursor: str | None = None
    for example in examples():
        if not_data(example):
            continue
        params = [(k, cursor or "" if v == "$NEXT" else v) for k, v in example.params]
        headers = {k: v for k, v in example.headers.items() if k.lower() != "authorization"}
        response = demo.get(example.path, params=params, headers=headers)
        body = response.json() if response.content else None
        if isinstance(body, dict):
            cursor = (body.get("meta") or {}).get("nextCursor") or cursor
        if response.status_code == 200 and _has_data(body):
            continue
        error = body.get("error", {}) if isinstance(body, dict) else {}
        if example.lookup and response.status_code == 409 and error.get("candidates"):
            continue  # the documented ambiguous address: its candidates are the data
        failures.append(f"{example} -> {response.status_code} {response.text[:200]}")
    assert not failures, "\n".join(failures)

"""Every doc and example names the API key `PROPDATA_API_KEY` and the service's address
`PROPDATA_BASE_URL` (the names the SDKs and `propdata-client` read), and `make run` prints
both, with the port it was given.

Read: the README, docs/*.md, the SDKs' READMEs and sources, the portal's pages, the Makefile
and the OpenAPI document's introduction."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

from propdata.app import create_app
from propdata.config import ENV, Settings

ROOT = Path(__file__).resolve().parents[1]
KEY, BASE = "PROPDATA_API_KEY", "PROPDATA_BASE_URL"
SOURCES = [
    ROOT / "README.md", ROOT / "Makefile",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "clients").glob("*/README.md")),
    *sorted((ROOT / "clients" / "python" / "src").rglob("*.py")),
    *sorted((ROOT / "clients" / "typescript" / "src").rglob("*.ts")),
    *sorted((ROOT / "src" / "propdata" / "portal" / "templates").glob("*.html")),
]  # fmt: skip

_NAME = r"([A-Z][A-Z0-9_]*)"
VARIABLES = [
    re.compile(r"\$\{?" + _NAME),  # $NAME, ${NAME}: a shell's
    re.compile(r"(?:^|[\s;(])(?:export\s+)?" + _NAME + r"=", re.M),  # NAME=value
    re.compile(r"process\.env\.?\[?[\"']?" + _NAME),  # Node's
    re.compile(r"(?:environ(?:\.get)?\(?\[?|getenv\()[\"']" + _NAME),  # Python's
]
"""Where a text names an environment variable."""
URL_SETTINGS = {name for name in ENV.values() if name.endswith("_URL")}
"""Settings whose values are URLs of other things (the database, Redis, mail, the portal)."""


def variables(text: str) -> set[str]:
    return {name for pattern in VARIABLES for name in pattern.findall(text)}


def the_key(name: str) -> bool:
    return "KEY" in name.split("_")


def the_address(name: str) -> bool:
    """A name that stands for where the API is: BASE, API_URL, PROPDATA_URL, ... (the
    settings that hold other URLs are not it)."""
    parts = name.split("_")
    return name not in URL_SETTINGS and ("BASE" in parts or "URL" in parts)


@pytest.fixture(scope="module")
def texts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    found = {str(path.relative_to(ROOT)): path.read_text(encoding="utf-8") for path in SOURCES}
    store = tmp_path_factory.mktemp("names") / "x.db"
    document = create_app(Settings(database_url=str(store))).openapi_schema.to_schema()
    found["the OpenAPI introduction"] = document["info"]["description"]
    return found


def test_the_texts_are_found(texts: dict[str, str]) -> None:
    assert len(texts) > 20 and all(texts.values())
    assert any(KEY in text for name, text in texts.items() if name.startswith("docs/"))


def test_every_text_names_the_key_and_the_address_one_way(texts: dict[str, str]) -> None:
    wrong = {
        (where, name)
        for where, text in texts.items()
        for name in variables(text)
        if (the_key(name) and name != KEY) or (the_address(name) and name != BASE)
    }
    assert not wrong, sorted(wrong)


def test_the_checks_catch_the_other_names() -> None:
    """What a reader once found: four names for the key, and $BASE beside the base URL."""
    for said in ('curl -H "Authorization: Bearer $KEY"', "export API_KEY=pmd_live_x",
                 "Bearer ${PROPDATA_KEY}", "process.env.API_KEY", 'os.environ["MY_API_KEY"]',
                 'curl "$BASE/v1/properties"', "export API_URL=http://127.0.0.1:8000"):  # fmt: skip
        names = variables(said)
        assert any(the_key(n) or the_address(n) for n in names) and not names & {KEY, BASE}, said
    assert not any(
        the_address(n) for n in variables("PROPDATA_DATABASE_URL=x PROPDATA_PUBLIC_URL=y")
    )


_COMMAND = re.compile(r"^\s*(curl\b(?:[^\n]*\\\n)*[^\n]*)", re.M)


def test_every_curl_of_the_api_reads_the_base_url(texts: dict[str, str]) -> None:
    """No example hard-codes where the API is (http://127.0.0.1:8000 after `make run
    PORT=8200` is a connection refused): each curl of a /v1 path goes to $PROPDATA_BASE_URL."""
    wrong = [
        (where, command.splitlines()[0][:100])
        for where, text in texts.items()
        for command in _COMMAND.findall(text)
        if "/v1" in command and f"${BASE}/v1" not in command and f"${{{BASE}}}/v1" not in command
    ]
    assert not wrong, wrong


def test_make_run_prints_the_exports_with_the_port_it_was_given(tmp_path: Path) -> None:
    """`make run PORT=8200` prints the two exports and a curl line that reads them; a stand-in
    `propdata` prints a key and serves nothing."""
    fake = tmp_path / "propdata"
    fake.write_text('#!/bin/sh\n[ "$1 $2" = "keys create" ] && echo pmd_live_FAKE\nexit 0\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    stamp = tmp_path / "installed"  # newer than pyproject.toml, so make installs nothing
    stamp.touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    ran = subprocess.run(
        ["make", "-s", "run", "PORT=8200", f"BIN={tmp_path}", f"STAMP={stamp}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    lines = [line.strip() for line in ran.stdout.splitlines()]
    assert f"export {KEY}=pmd_live_FAKE" in lines, ran.stdout
    assert f"export {BASE}=http://127.0.0.1:8200" in lines, ran.stdout
    curl = next(line for line in lines if line.startswith("curl"))
    assert f'"Authorization: Bearer ${KEY}"' in curl and f'"${BASE}/v1/' in curl, curl
    assert "8000" not in ran.stdout


def test_the_readme_says_how_to_receive_webhooks_on_this_machine(texts: dict[str, str]) -> None:
    section = texts["README.md"].split("\n## Local development\n", 1)[1].split("\n## ", 1)[0]
    assert "PROPDATA_WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8 make run" in section
    assert "propdata-client listen --forward-to" in section
    assert "docs/events.md#verifying" in section
    # found early: before the list of documents
    assert texts["README.md"].index("## Local development") < texts["README.md"].index(
        "## Documentation"
    )

"""The clients our users generate from the live /openapi.json work against every operation.

One `propdata serve` over the test catalogue; its document is read once and then:
- Python: `openapi-python-client` generates a client (no warning allowed); every operation
  is called through it for a success, a 400, a 401, a 404 where the operation has one, a
  429 where it is metered, and a 431, with `raise_on_unexpected_status` on (an answer of a
  status the document does not list fails). Each answer must parse into its declared model
  and back into the very JSON the server sent, and each error message must be one of the
  operation's documented examples for that status (numbers aside).
- TypeScript: `openapi-typescript` generates the types, `tsc --strict` checks calls.test.ts
  against them, and `node --test` runs the same calls with `openapi-fetch`.
- Redocly's linter (recommended rules) finds no error, and each warning it leaves is named
  in docs/api.md with its reason.
The generators are pinned: openapi-python-client in pyproject's dev extra, the npm packages in
this folder's package-lock.json (installed by `npm ci` when missing or stale).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Store, build_store, create_key, new_store
from tests.live import running_server

HERE = Path(__file__).resolve().parent
DOC = HERE.parents[1] / "docs" / "api.md"
BIN = Path(sys.executable).parent
PACKAGE = "generated_propdata_client"
TOO_LARGE = {"X-Padding": "x" * 17_000}
"""Request headers over the server's 16 KB: a 431 from any operation."""
HOOKS = "127.0.0.1/32"
HOOK = "http://127.0.0.1:9/hook"
"""A webhook URL the served app allows (PROPDATA_WEBHOOK_ALLOWED_NETWORKS); nothing answers."""


@dataclass(frozen=True)
class Served:
    base: str
    keys: dict[str, str]
    document: dict[str, Any]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    store = asyncio.run(new_store("embedded", tmp_path_factory.mktemp("generated")))

    async def prepare(store: Store) -> dict[str, str]:
        await build_store(store)
        return {
            "main": await create_key(store, "enterprise", per_minute=1_000_000, daily=100_000_000),
            "spent": await create_key(store, "enterprise", daily=1),
            # Its own key: managing searches and webhooks is limited per key and minute.
            "typescript": await create_key(
                store, "enterprise", per_minute=1_000_000, daily=100_000_000
            ),
        }

    keys = asyncio.run(prepare(store))
    # Webhook deliveries may go to this host (http://127.0.0.1:9, where nothing listens).
    env = {**store.env(), "PROPDATA_CACHE_TTL": "0", "PROPDATA_WEBHOOK_ALLOWED_NETWORKS": HOOKS}
    with running_server(env) as base:
        headers = {"Authorization": f"Bearer {keys['spent']}"}
        assert httpx.get(base + "/v1/markets/search", headers=headers).status_code == 200
        yield Served(base, keys, httpx.get(base + "/openapi.json").json())


def _examples(document: dict[str, Any], operation_id: str, status: int) -> set[str]:
    """The documented example messages of one answer, numbers and request ids masked."""
    for item in document["paths"].values():
        for operation in item.values():
            if operation.get("operationId") == operation_id:
                media = operation["responses"][str(status)]["content"]["application/json"]
                return {_mask(e["value"]["error"]["message"]) for e in media["examples"].values()}
    raise AssertionError(f"no operation {operation_id}")


def _mask(message: str) -> str:
    return re.sub(r"[0-9]+", "N", re.sub(r"req_[0-9a-f]{16}", "req_ID", message))


# ---------------------------------------------------------------------------------------------
# Python: openapi-python-client


@pytest.fixture(scope="module")
def generated(served: Served, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    folder = tmp_path_factory.mktemp("python-client")
    (folder / "openapi.json").write_text(json.dumps(served.document), encoding="utf-8")
    # Export files are Parquet, a media type the generator leaves out unless told it is bytes
    # (docs/api.md, "OpenAPI document and interactive docs").
    (folder / "config.yaml").write_text(
        f"package_name_override: {PACKAGE}\npost_hooks: []\ncontent_type_overrides:\n"
        "  application/vnd.apache.parquet: application/octet-stream\n"
    )
    run = subprocess.run(
        [BIN / "openapi-python-client", "generate", "--path", "openapi.json", "--meta", "none",
         "--output-path", PACKAGE, "--config", "config.yaml"],
        cwd=folder, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    said = run.stdout + run.stderr
    assert run.returncode == 0, said
    assert "warning" not in said.lower() and "error" not in said.lower(), said
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(folder))
        for name in [m for m in sys.modules if m.split(".")[0] == PACKAGE]:
            del sys.modules[name]


@dataclass(frozen=True)
class Calls:
    """How to call one operation: a success, a 400, a 404 (when it has one).

    `bad` None: a query parameter the operation does not take. `keeps` names what a success
    makes (`(name, dotted path in the parsed answer)`), for the later calls that take `Made`.
    """

    module: str
    ok: dict[str, Any]
    bad: dict[str, Any] | None
    missing: dict[str, Any] | None = None
    metered: bool = True
    keeps: tuple[str, str] | None = None


@dataclass(frozen=True)
class Body:
    """A request body: the generated model `model` made from `data` (the wire's JSON)."""

    model: str
    data: dict[str, Any]


@dataclass(frozen=True)
class Made:
    """What an earlier call made (a saved search's id, a cursor), by the name it keeps it."""

    name: str


SEARCH = {"name": "x", "filters": {"zipCode": "50010"}}
NO_SEARCH = "srch_0123456789abcdef01234567"
NO_HOOK = "wh_4x9QmT2s8Lr5Vb0cN7aYk3Ze"
"""Ids no one has (the document's examples of a 404)."""


CALLS = {
    "searchProperties": Calls("properties.search_properties", {"zip_code": "50010"},
                              {"limit": 0}),
    "searchPropertiesAlias": Calls("properties.search_properties_alias",
                                   {"city": "Ames", "state": "IA"}, {"limit": 0}),
    "lookupProperty": Calls("properties.lookup_property",
                            {"street_address": "100 Oak Street", "city": "Ames", "state": "IA"},
                            {"street_address": "1 Main St", "city": "Ames", "state": "ZZ"},
                            {"street_address": "1 Nowhere Lane", "city": "Ames", "state": "IA"}),
    "getProperty": Calls("properties.get_property", {"id": "t-000"}, {"id": "-x"},
                         {"id": "x-000"}),
    "getPropertyHistory": Calls("properties.get_property_history", {"id": "t-000"},
                                {"id": "-x"}, {"id": "x-000"}),
    "getPropertyValuation": Calls("properties.get_property_valuation", {"id": "t-000"},
                                  {"id": "-x"}, {"id": "x-000"}),
    "listPropertyChanges": Calls("properties.list_property_changes", {}, {"limit": 0}),
    "getMarket": Calls("markets.get_market", {"zip_code": "50010"}, {"zip_code": "5001"},
                       {"zip_code": "99999"}),
    "getMarketHistory": Calls("markets.get_market_history", {"zip_code": "50010"},
                              {"zip_code": "50010", "months": 0}, {"zip_code": "99999"}),
    "searchMarkets": Calls("markets.search_markets", {"state": "IA"}, {"limit": 0}),
    "getAuthStatus": Calls("account.get_auth_status", {}, None, metered=False),
    "getHealth": Calls("operations.get_health", {}, None, metered=False),
    "listExports": Calls("exports.list_exports", {}, None, metered=False),
    # Managing saved searches and webhooks is never counted: no 429 from a spent quota.
    "createSavedSearch": Calls("searches.create_saved_search",
                               {"body": Body("SavedSearchInput", SEARCH)},
                               {"body": Body("SavedSearchInput", {**SEARCH, "name": ""})},
                               metered=False, keeps=("search", "data.id")),
    "listSavedSearches": Calls("searches.list_saved_searches", {}, None, metered=False),
    "getSavedSearch": Calls("searches.get_saved_search", {"id": Made("search")}, None,
                            {"id": NO_SEARCH}, metered=False),
    "updateSavedSearch": Calls("searches.update_saved_search",
                               {"id": Made("search"), "body": Body("SavedSearchChange",
                                                                   {"name": "y"})},
                               {"id": Made("search"), "body": Body("SavedSearchChange",
                                                                   {"name": ""})},
                               {"id": NO_SEARCH, "body": Body("SavedSearchChange",
                                                              {"name": "y"})},
                               metered=False),
    "listEvents": Calls("events.list_events", {"limit": 5}, {"since": "zz"},
                        keeps=("cursor", "meta.next_cursor")),
    "createWebhook": Calls("webhooks.create_webhook", {"body": Body("NewEndpoint", {"url": HOOK})},
                           {"body": Body("NewEndpoint", {"url": "https://10.0.0.5/hook"})},
                           metered=False, keeps=("webhook", "data.id")),
    "listWebhooks": Calls("webhooks.list_webhooks", {}, None, metered=False),
    "getWebhook": Calls("webhooks.get_webhook", {"id": Made("webhook")}, None, {"id": NO_HOOK},
                        metered=False),
    "updateWebhook": Calls("webhooks.update_webhook",
                           {"id": Made("webhook"), "body": Body("EndpointChange",
                                                                {"description": "x"})},
                           {"id": Made("webhook"), "body": Body("EndpointChange",
                                                                {"url": "https://10.0.0.5/h"})},
                           {"id": NO_HOOK, "body": Body("EndpointChange", {"description": "x"})},
                           metered=False),
    "rotateWebhookSecret": Calls("webhooks.rotate_webhook_secret",
                                 {"id": Made("webhook"), "body": Body("Rotation",
                                                                      {"graceSeconds": 60})},
                                 None, {"id": NO_HOOK, "body": Body("Rotation", {})},
                                 metered=False),
    "testWebhook": Calls("webhooks.test_webhook", {"id": Made("webhook")}, None,
                         {"id": NO_HOOK}, metered=False),
    "listWebhookDeliveries": Calls("webhooks.list_webhook_deliveries", {"id": Made("webhook")},
                                   None, {"id": NO_HOOK}, metered=False,
                                   keeps=("delivered", "data.0.event_id")),
    "resendWebhookDelivery": Calls("webhooks.resend_webhook_delivery",
                                   {"id": Made("webhook"), "event_id": Made("delivered")}, None,
                                   {"id": NO_HOOK, "event_id": Made("delivered")},
                                   metered=False),
    "replayWebhook": Calls("webhooks.replay_webhook",
                           {"id": Made("webhook"), "body": Body("Replay",
                                                                {"since": Made("cursor")})},
                           {"id": Made("webhook"), "body": Body("Replay", {"since": "zz"})},
                           {"id": NO_HOOK, "body": Body("Replay", {"since": Made("cursor")})},
                           metered=False),
    # Deleted last: the calls above use what they delete.
    "deleteWebhook": Calls("webhooks.delete_webhook", {"id": Made("webhook")}, None,
                           {"id": NO_HOOK}, metered=False),
    "deleteSavedSearch": Calls("searches.delete_saved_search", {"id": Made("search")}, None,
                               {"id": NO_SEARCH}, metered=False),
}  # fmt: skip


STREAMED = {"streamEvents", "getExportFile"}
"""Operations whose answer is a stream: Server-Sent Events that never end, and export files
of any size. A generated client reads a body whole, so they are generated (and checked by the
generators and the linter) but called by tests/events/test_stream.py and
tests/exports/test_endpoints.py."""


def test_calls_cover_every_operation(served: Served) -> None:
    operations = {
        operation["operationId"]
        for item in served.document["paths"].values()
        for operation in item.values()
    }
    assert operations - STREAMED == set(CALLS)


def test_python_client_calls_every_operation(served: Served, generated: Any) -> None:
    client_module = importlib.import_module(f"{PACKAGE}.client")

    opened: dict[str, Any] = {}

    def client(key: str | None = None, **options: Any) -> Any:
        """One client per key and options, kept open for every call that needs it."""
        name = f"{key}:{sorted(options.items())}"
        if name not in opened:
            common = {"base_url": served.base, "raise_on_unexpected_status": True, **options}
            made = (
                client_module.Client(**common)
                if key is None
                else client_module.AuthenticatedClient(token=served.keys[key], **common)
            )
            opened[name] = made.__enter__()
        return opened[name]

    try:
        _call_every_operation(served, client)
    finally:
        for made in opened.values():
            made.__exit__(None, None, None)


def _call_every_operation(served: Served, client: Callable[..., Any]) -> None:
    models = importlib.import_module(f"{PACKAGE}.models")
    seen: dict[str, set[int]] = {}
    made: dict[str, Any] = {}

    def resolved(value: Any) -> Any:
        if isinstance(value, Made):
            return made[value.name]
        if isinstance(value, Body):
            return getattr(models, value.model).from_dict(resolved(value.data))
        if isinstance(value, dict):
            return {name: resolved(item) for name, item in value.items()}
        return value

    for operation_id, calls in CALLS.items():
        api = importlib.import_module(f"{PACKAGE}.api.{calls.module}")

        def call(
            key: str | None, kwargs: dict[str, Any], status: int, model: str | None, **options: Any
        ) -> Any:
            op = operation_id  # noqa: B023
            response = api.sync_detailed(  # noqa: B023
                client=client(key, **options), **resolved(kwargs)
            )
            assert response.status_code == status, (op, kwargs, response.content)
            parsed = response.parsed
            seen.setdefault(op, set()).add(status)
            if model is None:  # 204: no body
                assert parsed is None and response.content == b"", (op, response.content)
                return None
            assert type(parsed) is getattr(models, model), (op, status, type(parsed))
            # Every field was read: the model writes back exactly what the server sent.
            assert parsed.to_dict() == json.loads(response.content), (op, status)
            if model == "ErrorResponse":
                assert parsed.error.status == status
                assert _mask(parsed.error.message) in _examples(served.document, op, status), (
                    op, status, parsed.error.message,
                )  # fmt: skip
            return parsed

        status, success = _success(served.document, operation_id)
        if operation_id == "getHealth":
            call(None, calls.ok, status, success)
            call(None, calls.ok, 431, "ErrorResponse", headers=TOO_LARGE)
            continue
        answer = call("main", calls.ok, status, success)
        if calls.keeps is not None:
            name, path = calls.keeps
            for attribute in path.split("."):
                answer = (
                    answer[int(attribute)] if attribute.isdigit() else getattr(answer, attribute)
                )
            made[name] = answer
        if calls.bad is not None:
            call("main", calls.bad, 400, "ErrorResponse")
        else:  # no parameter to get wrong: a query parameter the operation does not take
            call("main", calls.ok, 400, "ErrorResponse", httpx_args={"params": {"colour": "red"}})
        call(None, calls.ok, 401, "ErrorResponse")
        if calls.missing is not None:
            call("main", calls.missing, 404, "ErrorResponse")
        if calls.metered:
            call("spent", calls.ok, 429, "ErrorResponse")
        call("main", calls.ok, 431, "ErrorResponse", headers=TOO_LARGE)
    assert set(seen) == set(CALLS)
    assert all(
        {400, 401, 431} <= statuses and any(200 <= status < 300 for status in statuses)
        for op, statuses in seen.items()
        if op != "getHealth"
    )


def _success(document: dict[str, Any], operation_id: str) -> tuple[int, str | None]:
    """The one 2xx status of an operation and its model's name (None: no body)."""
    for item in document["paths"].values():
        for operation in item.values():
            if operation.get("operationId") == operation_id:
                (status,) = [s for s in operation["responses"] if s.startswith("2")]
                content = operation["responses"][status].get("content")
                if content is None:
                    return int(status), None
                schema = content["application/json"]["schema"]
                return int(status), str(schema["$ref"]).rsplit("/", 1)[1]
    raise AssertionError(operation_id)


# ---------------------------------------------------------------------------------------------
# TypeScript (openapi-typescript, openapi-fetch) and Redocly's linter


@pytest.fixture(scope="module")
def npm() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run a program of this folder's node_modules/.bin (installed with npm ci if need be)."""
    node, npm_ = shutil.which("node"), shutil.which("npm")
    if node is None or npm_ is None:
        if os.environ.get("CI"):
            pytest.fail("node and npm are needed for the generated TypeScript client")
        pytest.skip("node and npm are not installed")
    stamp = HERE / "node_modules" / ".package-lock.json"
    lock = HERE / "package-lock.json"
    if not stamp.exists() or stamp.stat().st_mtime < lock.stat().st_mtime:
        subprocess.run([npm_, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=HERE,
                       check=True, timeout=600)  # fmt: skip

    def run(program: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(HERE / "node_modules" / ".bin" / program), *args], cwd=HERE,
            capture_output=True, text=True, timeout=300,
            env={**os.environ, "REDOCLY_TELEMETRY": "off", "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true",
                 "NO_COLOR": "1", **env},
        )  # fmt: skip

    return run


def test_typescript_client_type_checks_and_calls_every_operation(
    served: Served, npm: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    build = HERE / "build"
    shutil.rmtree(build, ignore_errors=True)
    build.mkdir()
    # A .ts file, not .d.ts: tsc checks it too (skipLibCheck skips only node_modules' types).
    generate = npm("openapi-typescript", served.base + "/openapi.json", "-o", "build/schema.ts")
    assert generate.returncode == 0, generate.stdout + generate.stderr
    check = npm("tsc", "-p", "tsconfig.json")
    assert check.returncode == 0, check.stdout + check.stderr
    run = subprocess.run(
        [str(shutil.which("node")), "--test", "build/js/calls.test.js"], cwd=HERE,
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "PROPDATA_BASE_URL": served.base,
             "PROPDATA_API_KEY": served.keys["typescript"],
             "PROPDATA_SPENT_KEY": served.keys["spent"]},
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"^# fail 0$", run.stdout, re.M) and re.search(
        r"^# pass [1-9]", run.stdout, re.M
    )


def test_redocly_lint_passes_and_its_warnings_are_documented(
    served: Served, npm: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    document = tmp_path / "openapi.json"
    document.write_text(json.dumps(served.document), encoding="utf-8")
    lint = npm("redocly", "lint", str(document), "--format=json")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    report = json.loads(lint.stdout[lint.stdout.index("{") :])
    problems = report["problems"]
    assert not [p for p in problems if p["severity"] == "error"], problems
    rules = {p["ruleId"] for p in problems}
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## OpenAPI document and interactive docs") :]
    undocumented = sorted(rule for rule in rules if f"`{rule}`" not in section)
    assert not undocumented, f"Redocly warnings not listed in docs/api.md: {undocumented}"

"""The MCP server (`propdata-client mcp`) driven by the MCP SDK's own client session over
stdio, against the live server."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent
from tests.redis_support import free_port

from propdata_client import Client
from stubserver import Answer, event, stub_server

pytestmark = pytest.mark.slow

if TYPE_CHECKING:
    from conftest import Live

TOOLS = {"lookup_address", "search_properties", "get_property", "get_market", "check_usage",
         "watch_search", "recent_events"}  # fmt: skip
WRITES = {"watch_search"}  # the tools that are not read-only


def command() -> tuple[str, list[str]]:
    script = Path(sys.executable).with_name("propdata-client")
    if script.exists():
        return str(script), ["mcp"]
    return sys.executable, ["-m", "propdata_client", "mcp"]


@asynccontextmanager
async def session(live: Live, key: str) -> AsyncIterator[ClientSession]:
    async with session_at(live.base_url, key) as s:
        yield s


@asynccontextmanager
async def session_at(base_url: str, key: str) -> AsyncIterator[ClientSession]:
    program, args = command()
    env = {"PROPDATA_API_KEY": key, "PROPDATA_BASE_URL": base_url}
    params = StdioServerParameters(command=program, args=args, env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        yield s


def text(result: CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


def answer(result: CallToolResult) -> Any:
    assert not result.is_error, text(result)
    return json.loads(text(result))


async def test_tools_are_listed_with_descriptions_and_schemas(live: Live, key: str) -> None:
    async with session(live, key) as s:
        listed = (await s.list_tools()).tools
        assert {tool.name for tool in listed} == TOOLS
        for tool in listed:
            assert tool.description and len(tool.description) > 80, tool.name
            assert tool.input_schema["type"] == "object"
            assert tool.annotations is not None
            assert tool.annotations.read_only_hint == (tool.name not in WRITES), tool.name
        schemas = {tool.name: tool.input_schema for tool in listed}
        lookup = schemas["lookup_address"]
        assert set(lookup["required"]) == {"street_address", "city", "state"}
        assert "description" in lookup["properties"]["zip_code"]
        search = schemas["search_properties"]["properties"]
        assert search["limit"]["maximum"] == 25
        assert "forSale" in json.dumps(search["status"])
        assert schemas["get_market"]["properties"]["months"]["maximum"] == 24


async def test_each_tool_against_the_live_server(live: Live, key: str) -> None:
    async with session(live, key) as s:
        found = answer(
            await s.call_tool(
                "lookup_address",
                {"street_address": "101 oak st", "city": "Grinnell", "state": "IA"},
            )
        )
        assert found["id"] == "t-001"
        assert found["address"] == "101 Oak Street, Grinnell, IA 50112"

        page = answer(await s.call_tool("search_properties", {"state": "IA", "limit": 5}))
        assert page["total"] == 27 and page["returned"] == 5 and page["nextOffset"] == 5
        assert len(page["properties"]) == 5 and {"id", "status", "address"} <= set(page["properties"][0])  # fmt: skip
        rest = answer(await s.call_tool("search_properties", {"state": "IA", "offset": 25}))
        assert rest["returned"] == 2 and "nextOffset" not in rest
        capped = await s.call_tool("search_properties", {"limit": 1000})
        assert capped.is_error  # never a 1,000-row dump: the schema allows 25 rows at most
        widest = answer(await s.call_tool("search_properties", {"limit": 25}))
        assert widest["returned"] == 25 and widest["total"] == 42
        assert len(text(await s.call_tool("search_properties", {"limit": 25}))) < 8_000

        record = answer(await s.call_tool("get_property", {"property_id": "t-001"}))
        assert record["id"] == "t-001" and record["county"] == "Poweshiek"
        assert [e["event"] for e in record["priceHistory"]] == ["sold", "pendingSale", "listedForSale"]  # fmt: skip
        assert record["taxHistory"][0]["year"] == 2025
        assert record["valuation"]["valueEstimate"]["value"] == 245_000
        assert record["valuation"]["grossYield"] == 0.0833

        market = answer(await s.call_tool("get_market", {"zip_code": "10001", "months": 3}))
        assert market["city"] == "New York" and market["snapshot"]["activeListings"] >= 1
        assert 1 <= len(market["history"]) <= 3 and market["history"][0]["month"] == "2026-11"

        usage = answer(await s.call_tool("check_usage", {}))
        assert usage["plan"] == "enterprise" and usage["limits"]["perMinute"] == 1_000_000
        assert usage["limits"]["daily"] == "unlimited" and usage["day"] == "unlimited"
        assert usage["minute"]["used"] >= 1 and usage["minute"]["resetsAt"].endswith("Z")


async def test_api_errors_are_tool_errors_in_words(live: Live, key: str) -> None:
    async with session(live, key) as s:
        ambiguous = await s.call_tool(
            "lookup_address", {"street_address": "5 Broadway", "city": "New York", "state": "NY"}
        )
        assert ambiguous.is_error
        assert "10001, 10002" in text(ambiguous) and "zip_code" in text(ambiguous)
        assert "t-040 (5 Broadway, New York, NY 10001)" in text(ambiguous)
        other_unit = await s.call_tool(
            "lookup_address",
            {"street_address": "100 Oak Street Apt 9", "city": "Ames", "state": "IA"},
        )
        assert other_unit.is_error and "t-000 (100 Oak Street, Ames, IA 50010)" in text(other_unit)
        missing = await s.call_tool("get_property", {"property_id": "no-such-id"})
        assert missing.is_error and "Not found: No property with id 'no-such-id'" in text(missing)
        assert "request id req_" in text(missing)
        bad = await s.call_tool("get_market", {"zip_code": "123"})
        assert bad.is_error  # refused by the input schema before any request
        assert text(bad).startswith("Invalid parameter 'zip_code': ")


async def test_bad_arguments_are_named_in_the_apis_words(live: Live, key: str) -> None:
    """What the validator says ("String should match pattern ...") never reaches the agent."""
    cases = {
        "zip_code": ({"zip_code": "5001"}, "Five-digit ZIP code"),
        "status": ({"status": "listed"}, "one of 'forSale'"),
        "limit": ({"limit": 99}, "at most 25"),
        "min_beds": ({"min_beds": "three"}, "whole number"),
        "latitude": ({"latitude": "north"}, "a number"),
    }
    async with session(live, key) as s:
        for name, (arguments, rule) in cases.items():
            result = await s.call_tool("search_properties", arguments)
            assert result.is_error, name
            assert text(result).startswith(f"Invalid parameter '{name}': "), text(result)
            assert rule in text(result), text(result)
            for validator_words in ("should", "pattern", "validation error", "Input"):
                assert validator_words not in text(result), text(result)


async def test_search_takes_a_radius_and_a_box(live: Live, key: str) -> None:
    async with session(live, key) as s:
        near = answer(await s.call_tool("search_properties", {
            "latitude": 42.03, "longitude": -93.62, "radius_miles": 30, "sort": "distance",
            "order": "asc", "limit": 5}))  # fmt: skip
        assert near["total"] > 0
        distances = [row["distanceMiles"] for row in near["properties"]]
        assert distances == sorted(distances) and all(d <= 30 for d in distances)
        boxed = answer(await s.call_tool("search_properties", {
            "bbox": "-93.70,41.98,-93.57,42.08", "limit": 5}))  # fmt: skip
        assert boxed["total"] > 0
        assert all("distanceMiles" not in row for row in boxed["properties"])
        both = await s.call_tool("search_properties", {
            "bbox": "-93.70,41.98,-93.57,42.08", "latitude": 42.0, "longitude": -93.6,
            "radius_miles": 5})  # fmt: skip
        assert both.is_error and "Invalid parameter 'bbox'" in text(both)
        nothing = await s.call_tool("get_market", {"zip_code": "99999"})
        assert nothing.is_error and "Not found" in text(nothing)


@pytest.fixture(scope="module")
def limited_keys(live: Live) -> list[str]:
    return live.keys("free", "enterprise:daily=1")


async def test_a_429_is_a_tool_error_that_names_the_wait(
    live: Live, limited_keys: list[str]
) -> None:
    key = limited_keys[0]
    with Client(api_key=key, base_url=live.base_url) as client:
        for n in range(10):
            client.properties.get(f"t-{n:03d}")
    async with session(live, key) as s:
        refused = await s.call_tool("get_market", {"zip_code": "50010"})
        assert refused.is_error
        message = text(refused)
        assert "Rate limit exceeded: retry after " in message, message
        seconds = int(message.split("retry after ", 1)[1].split(" ", 1)[0])
        assert 1 <= seconds <= 60 and f"{seconds} seconds" in message
        assert "10 requests per minute" in message and "request id req_" in message
        usage = answer(await s.call_tool("check_usage", {}))  # free: still answers
        assert usage["plan"] == "free" and usage["minute"]["remaining"] == 0
        assert usage["day"]["used"] == 10


async def test_a_bad_key_is_a_tool_error(live: Live) -> None:
    async with session(live, "pmd_live_notavalidkey") as s:
        refused = await s.call_tool("check_usage", {})
        assert refused.is_error and "PROPDATA_API_KEY" in text(refused)


async def test_a_used_up_daily_quota_names_the_hours(live: Live, limited_keys: list[str]) -> None:
    key = limited_keys[1]
    async with session(live, key) as s:
        refused = await s.call_tool("get_market", {"zip_code": "50112"})  # 2 requests
        assert refused.is_error
        message = text(refused)
        assert "Daily quota used up: retry after " in message, message
        assert "(about 2" in message and " h " in message  # about 24 hours, said in hours


@asynccontextmanager
async def http_server(
    live: Live,
    key: str,
    *flags: str,
    token: str | None = "t0ken-for-tests",
    host: str = "127.0.0.1",
    token_on_argv: bool = False,
) -> AsyncIterator[tuple[int, asyncio.subprocess.Process]]:
    """`propdata-client mcp --http` on a free port of `host`, until the block ends; the
    token in PROPDATA_MCP_TOKEN, as the help advises (or `--token`)."""
    port = free_port()
    program, args = command()
    env = {**os.environ, "PROPDATA_API_KEY": key, "PROPDATA_BASE_URL": live.base_url}
    env.pop("PROPDATA_MCP_TOKEN", None)
    given = ["--token", token] if token and token_on_argv else []
    if token and not token_on_argv:
        env["PROPDATA_MCP_TOKEN"] = token
    server = await asyncio.create_subprocess_exec(
        program, *args, "--http", "--host", host, "--port", str(port), *given, *flags, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        for _ in range(200):
            try:
                probe = await asyncio.to_thread(socket.create_connection, (host, port), 0.2)
                probe.close()
                break
            except OSError:
                await asyncio.sleep(0.05)
        yield port, server
    finally:
        if server.returncode is None:
            server.terminate()
        _, errors = await asyncio.wait_for(server.communicate(), 10)
        assert server.returncode in (0, -15), errors.decode()


async def test_streamable_http_with_the_http_flag(live: Live, key: str) -> None:
    """`--http` serves the same tools over streamable HTTP to a client with the token."""
    async with http_server(live, key) as (port, _):
        url = f"http://127.0.0.1:{port}/mcp"
        bearer = httpx2.AsyncClient(headers={"Authorization": "Bearer t0ken-for-tests"})
        streams = streamable_http_client(url, http_client=bearer)
        async with bearer, streams as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            assert {tool.name for tool in (await s.list_tools()).tools} == TOOLS
            market = answer(await s.call_tool("get_market", {"zip_code": "50010", "months": 1}))
            assert market["city"] == "Ames" and len(market["history"]) == 1


INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "probe", "version": "1"}},
}  # fmt: skip
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2"])  # the SDK checks only the first
async def test_http_refuses_a_caller_without_the_token_or_from_a_foreign_origin(
    live: Live, key: str, host: str
) -> None:
    """A web page the operator opens must not spend the operator's key through the server."""
    async with http_server(live, key, host=host) as (port, _), httpx2.AsyncClient() as http:
        url = f"http://{host}:{port}/mcp"
        good = {**ACCEPT, "Authorization": "Bearer t0ken-for-tests"}
        for headers in ({**ACCEPT}, {**ACCEPT, "Authorization": "Bearer wrong"},
                        {**ACCEPT, "Authorization": "t0ken-for-tests"}):  # fmt: skip
            refused = await http.post(url, json=INITIALIZE, headers=headers)
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        foreign = await http.post(
            url, json=INITIALIZE, headers={**good, "Origin": "https://evil.example"}
        )
        assert foreign.status_code == 403, foreign.text
        rebound = await http.post(url, json=INITIALIZE, headers={**good, "Host": "evil.example"})
        assert rebound.status_code in (400, 421), rebound.text
        allowed = await http.post(url, json=INITIALIZE, headers=good)
        assert allowed.status_code == 200, allowed.text


async def test_http_without_a_token_makes_one_on_loopback(live: Live, key: str) -> None:
    async with http_server(live, key, token=None) as (port, server), httpx2.AsyncClient() as http:
        assert server.stderr is not None
        line = (await asyncio.wait_for(server.stderr.readline(), 10)).decode()
        token = line.split("Bearer ")[1].strip().strip("'")
        assert len(token) >= 40
        url = f"http://127.0.0.1:{port}/mcp"
        assert (await http.post(url, json=INITIALIZE, headers=ACCEPT)).status_code == 401
        made = {**ACCEPT, "Authorization": f"Bearer {token}"}
        assert (await http.post(url, json=INITIALIZE, headers=made)).status_code == 200


async def test_a_token_on_the_command_line_works_and_is_warned_about(live: Live, key: str) -> None:
    """`ps` shows a process's arguments to every user: the help and a warning at start send
    the token to PROPDATA_MCP_TOKEN."""
    async with http_server(live, key, token_on_argv=True) as (port, server):
        assert server.stderr is not None
        line = (await asyncio.wait_for(server.stderr.readline(), 10)).decode()
        assert "--token is visible to every user" in line and "PROPDATA_MCP_TOKEN" in line
        assert "t0ken-for-tests" not in line
        async with httpx2.AsyncClient() as http:
            good = {**ACCEPT, "Authorization": "Bearer t0ken-for-tests"}
            url = f"http://127.0.0.1:{port}/mcp"
            assert (await http.post(url, json=INITIALIZE, headers=good)).status_code == 200


def test_the_help_sends_secrets_to_the_environment(capsys: pytest.CaptureFixture[str]) -> None:
    from propdata_client.cli import main

    for command_ in ("mcp", "listen"):
        with pytest.raises(SystemExit):
            main([command_, "--help"])
        shown = " ".join(capsys.readouterr().out.split())
        variable = "PROPDATA_MCP_TOKEN" if command_ == "mcp" else "PROPDATA_LISTEN_SECRET"
        assert variable in shown and "visible to every user of this machine" in shown, shown


def test_http_on_another_address_without_a_token_is_refused(key: str) -> None:
    program, args = command()
    env = {**os.environ, "PROPDATA_API_KEY": key}
    env.pop("PROPDATA_MCP_TOKEN", None)
    done = subprocess.run([program, *args, "--http", "--host", "0.0.0.0", "--port", "1"],
                          env=env, capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode == 2
    assert "without a token" in done.stderr and "0.0.0.0" in done.stderr


# -- events: watch_search and recent_events ----------------------------------------------


async def test_watch_search_sends_the_filters_and_answers_the_match_count() -> None:
    saved = {"id": "srch_a", "name": "Ames", "filters": {"zipCode": "50010", "maxPrice": 400000},
             "propertyIds": [], "createdAt": "2026-11-25T12:00:00.000Z", "matchCount": 7,
             "dataVersion": 3}  # fmt: skip
    with stub_server() as stub:
        stub.json("POST", "/v1/searches", {"data": saved}, 201)
        async with session_at(stub.base_url, "pmd_live_stub") as s:
            made = answer(await s.call_tool("watch_search", {
                "name": "Ames", "zip_code": "50010", "max_price": 400000, "radius_miles": 5,
                "latitude": 42.0, "longitude": -93.6}))  # fmt: skip
            bad = await s.call_tool("watch_search", {"name": "", "zip_code": "5001"})
    assert made == {"id": "srch_a", "name": "Ames", "matchCount": 7,
                    "filters": {"zipCode": "50010", "maxPrice": 400000},
                    "createdAt": "2026-11-25T12:00:00Z"}  # fmt: skip
    assert stub.seen("POST", "/v1/searches")[0].json() == {
        "name": "Ames",
        "filters": {"zipCode": "50010", "maxPrice": 400000, "latitude": 42.0,
                    "longitude": -93.6, "radius": 5.0},
    }  # fmt: skip
    assert bad.is_error and text(bad).startswith("Invalid parameter 'name': ")


async def test_recent_events_reads_pages_and_keeps_the_newest() -> None:
    pages = [[event(n) for n in range(1, 4)], [event(4, "search.exited")], []]
    with stub_server() as stub:
        stub.on("GET", "/v1/events", *[
            Answer(200, {"meta": {"limit": 3, "nextCursor": f"c_{i}"}, "data": data})
            for i, data in enumerate(pages, 1)])  # fmt: skip
        async with session_at(stub.base_url, "pmd_live_stub") as s:
            got = answer(await s.call_tool("recent_events", {"limit": 2, "search_id": "srch_a",
                                                             "types": ["search.exited",
                                                                       "property.priceChanged"]}))  # fmt: skip
            later = answer(await s.call_tool("recent_events", {"since": got["nextCursor"]}))
    assert got["returned"] == 2 and got["omittedOlder"] == 2 and got["nextCursor"] == "c_2"
    assert got["caughtUp"] is True  # the second page was short
    first, second = got["events"]
    assert second["type"] == "search.exited" and second["searchName"] == "Ames under 400k"
    assert first["property"] == {"id": "t-001", "listPrice": 299997}
    assert first["changes"] == ["listPrice"] and first["previous"] == {"listPrice": 299998}
    queries = [r.query for r in stub.requests]
    assert queries[0] == {"searchId": "srch_a", "limit": "1000",
                          "types": "search.exited,property.priceChanged"}  # fmt: skip
    assert queries[1]["since"] == "c_1" and queries[-1] == {"since": "c_2", "limit": "1000"}
    assert later["returned"] == 0 and later["nextCursor"] == "c_3" and later["caughtUp"]


async def test_watch_search_past_the_plan_limit_says_so() -> None:
    with stub_server() as stub:
        stub.json("POST", "/v1/searches", {"error": {
            "code": "plan_limit_reached", "status": 403, "requestId": "req_1",
            "message": "The Free plan keeps 3 saved searches; Developer keeps 25."}}, 403)  # fmt: skip
        async with session_at(stub.base_url, "pmd_live_stub") as s:
            refused = await s.call_tool("watch_search", {"name": "x", "zip_code": "50010"})
    assert refused.is_error and "Free plan keeps 3 saved searches" in text(refused)


async def test_watch_search_and_recent_events_against_the_live_server(live: Live, key: str) -> None:
    async with session(live, key) as s:
        made = answer(await s.call_tool("watch_search", {"name": "mcp Ames", "zip_code": "50010"}))
        assert made["id"].startswith("srch_") and made["matchCount"] > 0
        recent = answer(await s.call_tool("recent_events", {"search_id": made["id"]}))
        assert recent["nextCursor"] and isinstance(recent.get("events", []), list), (
            recent
        )  # [] left out
    with Client(api_key=key, base_url=live.base_url) as c:
        c.searches.delete(made["id"])

"""Where deliveries may go: the matrix of refused addresses, names that resolve to them, and
the allowed networks; the resolver is the test's, so no socket is ever opened."""

from __future__ import annotations

import asyncio
import ipaddress
import time
from collections.abc import Sequence

import pytest

from propdata.webhooks.addresses import (
    PER_OWNER,
    DnsResolver,
    Gate,
    IPAddress,
    Refused,
    Unresolvable,
    parse,
)
from tests.webhooks.dns_server import dns_server

PUBLIC = "93.184.215.14"


def resolving(table: dict[str, list[str]]) -> Gate:
    async def resolver(host: str, port: int) -> Sequence[IPAddress]:
        return [ipaddress.ip_address(a) for a in table.get(host, [])]

    return Gate(resolver=resolver)


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/hook", "https://10.0.0.1/", "https://172.16.5.4/", "https://192.168.1.1/",
        "https://169.254.169.254/latest/meta-data", "https://100.64.0.1/", "https://0.0.0.0/",
        "https://224.0.0.1/", "https://240.0.0.1/", "https://255.255.255.255/",
        "https://[::1]/", "https://[fc00::1]/", "https://[fd12:3456::1]/", "https://[fe80::1]/",
        "https://[::]/", "https://[ff02::1]/", "https://[::ffff:10.0.0.1]/",
        "https://[::ffff:127.0.0.1]/", "https://[::ffff:169.254.169.254]/",
        "https://[2002:a00:1::]/", "https://[64:ff9b::a00:1]/",
    ],
)  # fmt: skip
async def test_literal_addresses_that_are_not_public_are_refused(url: str) -> None:
    with pytest.raises(Refused):
        await Gate().resolve(parse(url))


async def test_public_addresses_and_ports_80_and_443_pass() -> None:
    gate = Gate()
    for url in (f"https://{PUBLIC}/x", f"https://{PUBLIC}:443/", f"https://{PUBLIC}:8443/",
                "https://[2606:2800:220:1:248:1893:25c8:1946]/", f"https://[::ffff:{PUBLIC}]/"):  # fmt: skip
        assert await gate.resolve(parse(url))


@pytest.mark.parametrize("port", [22, 25, 79, 81, 442, 444, 1023])
async def test_ports_below_1024_other_than_80_and_443_are_refused(port: int) -> None:
    with pytest.raises(Refused, match="port"):
        await Gate().resolve(parse(f"https://{PUBLIC}:{port}/"))


@pytest.mark.parametrize(
    "url",
    ["https://user:pass@example.com/", "https://user@example.com/", "ftp://example.com/",
     "file:///etc/passwd", "https:///nohost", "https://exa mple.com/", "https://example.com/#x",
     "gopher://example.com/", "https://example.com:99999/"],
)  # fmt: skip
def test_urls_that_can_never_be_delivered_to_are_refused(url: str) -> None:
    with pytest.raises(Refused):
        parse(url)


async def test_names_are_judged_by_every_address_they_resolve_to() -> None:
    gate = resolving({
        "public.example": [PUBLIC], "inside.example": ["10.1.2.3"],
        "both.example": [PUBLIC, "192.168.0.9"], "mapped.example": ["::ffff:10.0.0.1"],
        "metadata.example": ["169.254.169.254"], "cgnat.example": ["100.100.1.1"],
    })  # fmt: skip
    assert await gate.resolve(parse("https://public.example/hook")) == [
        ipaddress.ip_address(PUBLIC)
    ]
    for name in ("inside", "both", "mapped", "metadata", "cgnat"):
        with pytest.raises(Refused, match=f"{name}.example resolves to"):
            await gate.resolve(parse(f"https://{name}.example/"))
    with pytest.raises(Unresolvable):
        await gate.resolve(parse("https://nowhere.example/"))


async def test_a_refusal_names_the_setting_and_never_a_resolved_address() -> None:
    gate = resolving({"inside.example": ["10.1.2.3"], "public.example": [PUBLIC]})
    refusals = {
        "https://inside.example/": "inside.example resolves to a private address",
        "https://10.1.2.3/": "10.1.2.3 is private",
        "https://[::1]/": "::1 is loopback",
        "http://public.example/": "http:// is only for the networks allowed",
        f"https://{PUBLIC}:22/": "port 22 is below 1024",
    }
    for url, said in refusals.items():
        with pytest.raises(Refused) as refused:
            await gate.resolve(parse(url))
        assert said in str(refused.value), str(refused.value)
        assert "PROPDATA_WEBHOOK_ALLOWED_NETWORKS" in str(refused.value)
        if "example" in url:
            assert "10.1.2.3" not in str(refused.value) and PUBLIC not in str(refused.value)


async def test_http_only_inside_the_allowed_networks_which_also_lift_the_rest() -> None:
    allowed = (ipaddress.ip_network("127.0.0.1/32"), ipaddress.ip_network("10.20.0.0/16"))
    gate = Gate(allowed=allowed)
    assert await gate.resolve(parse("http://127.0.0.1:8080/hook"))
    assert await gate.resolve(parse("https://10.20.3.4:22/"))
    assert await gate.resolve(parse("http://[::ffff:127.0.0.1]/"))
    with pytest.raises(Refused, match="http://"):
        await gate.resolve(parse(f"http://{PUBLIC}/"))  # http to a public address: no
    with pytest.raises(Refused):
        await gate.resolve(parse("http://127.0.0.2/"))
    with pytest.raises(Refused):
        await gate.resolve(parse("https://10.21.0.1/"))


async def test_names_are_asked_of_dns_and_localhost_is_loopback() -> None:
    async with dns_server({"hooks.test": ["93.184.215.14"]}) as server:
        resolve = DnsResolver([("127.0.0.1", server.port)])
        assert await resolve("hooks.test", 443) == [ipaddress.ip_address("93.184.215.14")]
        with pytest.raises(Unresolvable, match="does not resolve"):
            await resolve("nowhere.test", 443)
        assert set(await resolve("localhost", 80)) == {
            ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"),
        }  # fmt: skip
        assert await resolve("api.localhost", 80)
    assert "localhost" not in server.asked and "api.localhost" not in server.asked


async def test_a_name_that_never_answers_is_unresolvable_after_the_time_limit() -> None:
    async with dns_server({}, silent={"dead.test"}) as server:
        gate = Gate(resolver=DnsResolver([("127.0.0.1", server.port)], timeout=5), timeout=0.5)
        started = time.monotonic()
        with pytest.raises(Unresolvable, match=r"within 0\.5 s"):
            await gate.resolve(parse("https://dead.test/hook"), "acct:a")
        assert 0.4 < time.monotonic() - started < 2


async def test_one_owner_s_lookups_are_bounded_and_never_hold_up_another_s() -> None:
    async with dns_server({"ok.test": ["93.184.215.14"]}, silent={"dead.test"}) as server:
        gate = Gate(resolver=DnsResolver([("127.0.0.1", server.port)]), timeout=1.5)
        stuck = [asyncio.create_task(gate.resolve(parse("https://dead.test/"), "acct:a"))
                 for _ in range(3 * PER_OWNER)]  # fmt: skip
        await asyncio.sleep(0.2)
        assert server.asked.count("dead.test") == PER_OWNER  # the rest wait their turn
        started = time.monotonic()
        assert await gate.resolve(parse("https://ok.test/"), "acct:b")
        assert time.monotonic() - started < 0.5
        results = await asyncio.gather(*stuck, return_exceptions=True)
        assert all(isinstance(r, Unresolvable) for r in results)

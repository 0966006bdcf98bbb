"""Which address the attempt limits count: the peer, or behind a trusted proxy the client
that proxy names (PROPDATA_TRUSTED_PROXIES), never what an untrusted peer claims."""

from __future__ import annotations

from typing import Any

from litestar import Request

from propdata.config import Settings
from propdata.portal.pages import client_address, link_base


def request(
    peer: str, forwarded: list[str] | None = None, server: Any = ("10.1.2.3", 8000)
) -> Request[Any, Any, Any]:
    headers = [(b"x-forwarded-for", value.encode()) for value in forwarded or []]
    scope: Any = {"type": "http", "method": "GET", "path": "/", "query_string": b"",
                  "headers": [(b"host", b"evil.example"), *headers], "client": (peer, 5000),
                  "server": server, "scheme": "http", "app": None}  # fmt: skip
    return Request(scope)


def test_the_peer_unless_it_is_a_trusted_proxy() -> None:
    plain = Settings()
    assert client_address(request("203.0.113.9", ["1.2.3.4"]), plain) == "203.0.113.9"
    behind = Settings(trusted_proxies="10.0.0.0/8, 127.0.0.1")
    assert client_address(request("10.0.0.5", ["198.51.100.7"]), behind) == "198.51.100.7"
    # a client's own X-Forwarded-For entries before the proxy's are not believed
    assert client_address(request("10.0.0.5", ["6.6.6.6, 198.51.100.7"]), behind) == "198.51.100.7"
    # several trusted hops: the rightmost untrusted one
    assert (
        client_address(request("127.0.0.1", ["198.51.100.7, 10.9.9.9"]), behind) == "198.51.100.7"
    )
    assert client_address(request("203.0.113.9", ["198.51.100.7"]), behind) == "203.0.113.9"
    assert client_address(request("10.0.0.5", ["not an address"]), behind) == "10.0.0.5"
    assert client_address(request("10.0.0.5"), behind) == "10.0.0.5"


def test_mailed_links_never_follow_the_host_header() -> None:
    assert link_base(request("1.2.3.4"), Settings()) == "http://10.1.2.3:8000"
    assert link_base(request("1.2.3.4", server=("::1", 8000)), Settings()) == "http://[::1]:8000"
    public = Settings(public_url="https://api.example.com/")
    assert link_base(request("1.2.3.4"), public) == "https://api.example.com"

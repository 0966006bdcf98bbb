"""Who sent a request: the socket peer, or the client a trusted proxy names; the bearer token
it sends."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

Networks = Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network]


def client_address(scope: Any, proxies: Networks) -> str:
    """The socket peer, or behind a trusted proxy the rightmost X-Forwarded-For address that
    is not one of the trusted proxies (PROPDATA_TRUSTED_PROXIES)."""
    client = scope.get("client")
    peer = str(client[0]) if client else "unknown"
    if not proxies or not in_networks(peer, proxies):
        return peer
    forwarded = ",".join(
        value.decode("latin-1") for name, value in scope["headers"] if name == b"x-forwarded-for"
    )
    for hop in reversed([part.strip() for part in forwarded.split(",") if part.strip()]):
        if not _is_address(hop):
            return peer  # not what a proxy writes: believe nothing further left
        if not in_networks(hop, proxies):
            return hop
    return peer


FORWARDING = frozenset({
    b"forwarded", b"x-forwarded-for", b"x-forwarded-host", b"x-forwarded-proto",
    b"x-forwarded-port", b"x-forwarded-server", b"x-real-ip", b"x-client-ip", b"true-client-ip",
    b"cf-connecting-ip", b"fastly-client-ip", b"x-cluster-client-ip", b"x-original-forwarded-for",
    b"via",
})  # fmt: skip
"""Headers a proxy adds to say whom it forwards for (nginx, HAProxy, Apache, CDNs)."""


def forwarded_by_stranger(scope: Any, proxies: Networks) -> bool:
    """Whether a peer that is no trusted proxy (PROPDATA_TRUSTED_PROXIES) sent a forwarding
    header: a proxy on this host that is not declared, whose every client looks local."""
    if any(name in FORWARDING for name, _ in scope["headers"]):
        client = scope.get("client")
        return not (client and in_networks(str(client[0]), proxies))
    return False


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (the scheme in any case, as
    RFC 9110 has it), or None for any other header or none."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def in_networks(address: str, networks: Networks) -> bool:
    """Whether `address` is an IP address inside one of `networks`."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True

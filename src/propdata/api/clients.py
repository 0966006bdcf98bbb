"""Who sent a request: the socket peer, or the client a trusted proxy names."""

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

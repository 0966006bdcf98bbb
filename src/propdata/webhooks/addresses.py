"""Where webhook deliveries may go (contract.md "Where deliveries may go").

`https://` to public addresses; `http://` only to the operator's allowed networks
(PROPDATA_WEBHOOK_ALLOWED_NETWORKS). Loopback, private, link-local (cloud metadata
included), carrier-grade NAT, unique-local, multicast, reserved and unspecified addresses,
and IPv4 addresses wrapped in IPv6 (mapped, 6to4, NAT64) that are any of them, are refused
unless inside an allowed network; so are ports below 1024 other than 80 and 443, and URLs
with user info.

The rule is checked when an endpoint is made or changed, and again before every attempt,
after resolving the name: the delivery then connects to the very address that was checked
(`Gate.resolve` hands it to the sender), so a name that answers a public address to the
check and a private one to the connection (DNS rebinding) gets nowhere. The resolver is a
parameter: tests decide what every name resolves to, and no socket is opened to a refused
address.

Names are resolved by DNS itself (`DnsResolver`: a query is a socket and a timer on the event
loop, never a thread, so a name that never answers holds nothing but its own lookup), within
RESOLVE_TIMEOUT seconds (past it: Unresolvable, an attempt's `connection` error), and at most
PER_OWNER lookups of one owner at a time: one owner's dead name never delays another's.

    gate = Gate(allowed=(ipaddress.ip_network("127.0.0.1/32"),))
    target = parse("https://hooks.example.com/propdata")
    addresses = await gate.resolve(target, "acct:acct_1")   # Refused when any is not permitted
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import dns.asyncresolver
import dns.exception
import dns.nameserver

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Awaitable[Sequence[IPAddress]]]
"""A name and port to the addresses to connect to."""

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_OPEN_PORTS = (80, 443)
MAX_URL = 2048
"""Characters an endpoint's URL may have."""
RESOLVE_TIMEOUT = 2.0
"""Seconds a name may take to resolve (the wait for the owner's turn included)."""
PER_OWNER = 4
"""Lookups of one owner's names at a time; more wait their turn."""


class Refused(ValueError):
    """The URL, or an address its name resolves to, is not one deliveries may go to."""


class Unresolvable(OSError):
    """The URL's name resolves to no address."""


@dataclass(frozen=True, slots=True)
class Target:
    """A delivery URL taken apart: what to connect to and what to tell the server."""

    url: str
    scheme: str
    host: str
    """The name or literal address, without brackets."""
    port: int
    explicit_port: bool

    @property
    def literal(self) -> IPAddress | None:
        try:
            return ipaddress.ip_address(self.host)
        except ValueError:
            return None


def parse(url: str) -> Target:
    """The URL's parts, or Refused for one that can never be delivered to (scheme, user info,
    no host, a port that is not a number)."""
    if len(url) > MAX_URL:
        raise Refused(f"the URL is longer than {MAX_URL} characters")
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        raise Refused("the URL holds spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise Refused(f"the URL cannot be read ({exc})") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http"):
        raise Refused("the URL must start with https:// (or http:// to an allowed network)")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise Refused("the URL must not hold user info (user:password@)")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise Refused("the URL has no host")
    if parts.fragment:
        raise Refused("the URL must not have a fragment (#...)")
    default = 443 if scheme == "https" else 80
    return Target(url, scheme, host, port if port is not None else default, port is not None)


def _embedded(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 one carries (mapped ::ffff:a.b.c.d, 6to4, NAT64), else itself."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None and address in _SIX_TO_FOUR:
            return address.sixtofour
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def not_public(address: IPAddress) -> str | None:
    """Why an address is not a public one deliveries may reach by default (None: it is)."""
    inner = _embedded(address)
    checks: list[tuple[bool, str]] = [
        (inner.is_unspecified, "unspecified"),
        (inner.is_loopback, "loopback"),
        (inner.is_link_local, "link-local"),
        (inner.is_multicast, "multicast"),
        (isinstance(inner, ipaddress.IPv4Address) and inner in _CGNAT, "carrier-grade NAT"),
        (inner.is_private, "private"),
        (inner.is_reserved, "reserved"),
        (not inner.is_global, "not public"),
    ]
    return next((reason for failed, reason in checks if failed), None)


async def system_resolver(host: str, port: int) -> list[IPAddress]:
    """The addresses the system's resolver gives for a name (a literal is itself). It runs on
    a thread that no timeout can stop: for tests and tools, never the service's deliveries."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise Unresolvable(f"{host} does not resolve ({exc})") from exc
    found: list[IPAddress] = []
    for _family, _kind, _proto, _name, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
        if address not in found:
            found.append(address)
    return found


LOOPBACK = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))


class DnsResolver:
    """A name's addresses (A and AAAA) asked of DNS on the event loop: the system's name
    servers (/etc/resolv.conf), or those given (`nameserver` texts). `localhost` and the
    names under it are loopback without asking (RFC 6761); the hosts file is not read.

    `nameservers`: (address, port) pairs (PROPDATA_WEBHOOK_NAMESERVERS); none: the system's."""

    def __init__(
        self, nameservers: Sequence[tuple[str, int]] = (), timeout: float = RESOLVE_TIMEOUT
    ) -> None:
        self._resolver = dns.asyncresolver.Resolver(configure=not nameservers)
        if nameservers:
            self._resolver.nameservers = [
                dns.nameserver.Do53Nameserver(host, port) for host, port in nameservers
            ]
        self._resolver.lifetime = timeout

    async def __call__(self, host: str, port: int) -> list[IPAddress]:
        try:
            return [ipaddress.ip_address(host)]
        except ValueError:
            pass
        name = host.lower().rstrip(".")
        if name == "localhost" or name.endswith(".localhost"):
            return list(LOOPBACK)
        try:
            answer = await self._resolver.resolve_name(name)
        except dns.exception.Timeout as exc:
            raise Unresolvable(
                f"{host} did not resolve within {self._resolver.lifetime:g} s"
            ) from exc
        except (dns.exception.DNSException, UnicodeError, ValueError) as exc:
            raise Unresolvable(f"{host} does not resolve ({exc})") from exc
        found: list[IPAddress] = []
        for text in answer.addresses():
            address = ipaddress.ip_address(text.split("%")[0])
            if address not in found:
                found.append(address)
        return found


@dataclass(frozen=True, slots=True)
class Gate:
    """The rule of where deliveries may go, with the resolver it checks names through, the
    time a name may take and how many of one owner's names resolve at a time."""

    allowed: tuple[Network, ...] = ()
    resolver: Resolver = field(default_factory=DnsResolver)
    timeout: float = RESOLVE_TIMEOUT
    per_owner: int = PER_OWNER
    _turns: dict[str, tuple[asyncio.Semaphore, list[int]]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @asynccontextmanager
    async def _turn(self, owner: str | None) -> AsyncIterator[None]:
        """One of the owner's `per_owner` lookups at a time (None: no owner, no bound)."""
        if owner is None:
            yield
            return
        held = self._turns.get(owner)
        if held is None:
            held = self._turns[owner] = (asyncio.Semaphore(self.per_owner), [0])
        turns, users = held
        users[0] += 1
        try:
            async with turns:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._turns[owner]

    @property
    def loopback(self) -> bool:
        """Whether deliveries may reach a receiver on this machine (an allowed network holds
        127.0.0.1 or ::1)."""
        return any(self._inside(ipaddress.ip_address(a)) for a in ("127.0.0.1", "::1"))

    def _inside(self, address: IPAddress) -> bool:
        inner = _embedded(address)
        return any(address in net or inner in net for net in self.allowed)

    def judge(self, target: Target, address: IPAddress) -> str | None:
        """Why `target` may not be delivered to at `address` (None: it may): what about the
        address (its kind, never the address itself: a name's may be an internal one) or the
        port refuses it."""
        if self._inside(address):
            return None
        if target.scheme == "http":
            return "http://"
        reason = not_public(address)
        if reason is not None:
            return reason
        if target.port < 1024 and target.port not in _OPEN_PORTS:
            return "port"
        return None

    async def resolve(self, target: Target, owner: str | None = None) -> list[IPAddress]:
        """Every address the target's name resolves to, each one permitted; Refused when any
        is not (a name must not point at a private address beside a public one), Unresolvable
        when there is none or the name took longer than `timeout` (its wait for one of the
        owner's turns included)."""
        literal = target.literal
        addresses = [literal] if literal is not None else await self._lookup(target, owner)
        if not addresses:
            raise Unresolvable(f"{target.host} resolves to no address")
        for address in addresses:
            reason = self.judge(target, address)
            if reason is not None:
                raise Refused(_refusal(target, literal, reason))
        return addresses

    async def _lookup(self, target: Target, owner: str | None) -> list[IPAddress]:
        try:
            async with asyncio.timeout(self.timeout), self._turn(owner):
                return list(await self.resolver(target.host, target.port))
        except TimeoutError as exc:
            raise Unresolvable(f"{target.host} did not resolve within {self.timeout:g} s") from exc


SETTING = "PROPDATA_WEBHOOK_ALLOWED_NETWORKS"
"""The operator's setting that lets deliveries reach more networks (`Gate.allowed`)."""


def _refusal(target: Target, literal: IPAddress | None, reason: str) -> str:
    """Why a target is refused, in words that name the setting which would admit it. A typed
    address is repeated; for a name, only the kind of address it resolves to is told."""
    if reason == "port":
        what = f"port {target.port} is below 1024 and neither 80 nor 443"
    elif reason == "http://":
        where = (
            str(literal) if literal is not None else f"{target.host} resolves to an address that"
        )
        what = f"http:// is only for the networks allowed to receive deliveries, and {where} is not in one"
    elif literal is not None:
        what = f"{literal} is {reason}"
    else:
        kind = "not a public" if reason == "not public" else _article(reason)
        what = f"{target.host} resolves to {kind} address"
    return refused(what)


def refused(what: str) -> str:
    """A refusal's words followed by the setting which would admit the address."""
    return (
        f"{what} (the service's operator may allow networks with {SETTING}, such as"
        " 127.0.0.0/8 for a receiver on the same machine)"
    )


def _article(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word

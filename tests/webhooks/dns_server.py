"""A DNS server on 127.0.0.1 (UDP) whose answers the test decides: the addresses of the names
in `answers` (A records), no answer at all for the names in `silent` (a name server that
never answers), NXDOMAIN for any other name.

    async with dns_server({"hooks.test": ["127.0.0.1"]}, silent={"dead.test"}) as server:
        Gate(resolver=DnsResolver([("127.0.0.1", server.port)]))
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset


@dataclass
class DnsServer:
    answers: dict[str, list[str]]
    silent: set[str] = field(default_factory=set)
    port: int = 0
    asked: list[str] = field(default_factory=list)
    """Every name asked, in order (each question: A and AAAA both)."""

    def answer(self, data: bytes) -> bytes | None:
        query = dns.message.from_wire(data)
        question = query.question[0]
        name = question.name.to_text(omit_final_dot=True).lower()
        self.asked.append(name)
        if name in self.silent:
            return None
        response = dns.message.make_response(query)
        if name not in self.answers:
            response.set_rcode(dns.rcode.NXDOMAIN)
        elif question.rdtype == dns.rdatatype.A:
            response.answer.append(
                dns.rrset.from_text(question.name, 5, "IN", "A", *self.answers[name])
            )
        wire: bytes = response.to_wire()
        return wire


@contextlib.asynccontextmanager
async def dns_server(
    answers: dict[str, list[str]], silent: set[str] | None = None
) -> AsyncIterator[DnsServer]:
    """The server, answering on a thread of its own (an app under test may hold the test's
    event loop while it waits for a name)."""
    server = DnsServer(answers, silent or set())
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.1)
    server.port = sock.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                data, addr = sock.recvfrom(4096)
            except TimeoutError:
                continue
            reply = server.answer(data)
            if reply is not None:
                sock.sendto(reply, addr)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop.set()
        thread.join(5)
        sock.close()

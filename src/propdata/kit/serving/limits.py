"""What `propdata serve` allows one client before the application sees anything: request
headers up to 16 KB, a request head whole within a few seconds, a body that never stalls as
long, and a bounded number of connections per worker.

uvicorn reads a request's head with no limit: a client sending a 40 MB header made a worker
hold it all (67 MB more resident memory) before the application could refuse anything. Here
the bytes a request's head takes are counted as they arrive; once its headers pass
MAX_HEADER_BYTES, whether the head is complete or still arriving, the connection is answered
431 and closed, having buffered at most one more read, and the application never sees the
request.

uvicorn also waits for a request head, and for the rest of a body, for as long as the client
likes: 200 idle or trickling connections were all still open after 75 s. Here a connection
whose request head is not whole `ClientLimits.head_timeout` seconds after it opened (or after
its next request's first byte) is closed, answered 408 when part of a head had arrived; a body
that sends nothing for `body_timeout` seconds is answered 408 (when no answer has started) and
its connection closed, and the application reading it sees the client gone. Past
`max_connections` open connections, a worker answers a new connection 503 at once and closes
it, so slow or idle clients hold at most that many sockets and none of the worker's time.

    ServingConfig(app, limits=ClientLimits(10, 10, 500), http=...)
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

from uvicorn import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEADER_BYTES = 16 * 1024
"""Request headers beyond this, in total, are refused (contract.md, "Sizes")."""
REQUEST_LINE_SLACK = 16
"""The request line's bytes around its URL: method, spaces, HTTP/1.1 and CRLF (about)."""
LINGER = 1.0
"""Seconds a connection refused at once stays half open, so the client reads the 503 rather
than a reset for the request it had already sent."""


@dataclass(frozen=True, slots=True)
class ClientLimits:
    """The time and room one client gets; None leaves a limit off."""

    head_timeout: float | None = None
    """Seconds from a connection's opening (or its next request's first byte) to the end of
    the request head."""
    body_timeout: float | None = None
    """Seconds a request body may go without a byte arriving."""
    max_connections: int | None = None
    """Connections one worker holds open; more are answered 503 and closed."""


class ServingConfig(Config):
    """uvicorn's Config with the client limits, which it carries to every worker process."""

    def __init__(self, app: Any, *, limits: ClientLimits, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self.client_limits = limits


class LimitedProtocol(HttpToolsProtocol):
    """HttpToolsProtocol that holds each client to `ClientLimits` and to 16 KB of headers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        config = self.config
        self._limits = config.client_limits if isinstance(config, ServingConfig) else ClientLimits()
        self._head_bytes = 0
        self._head_done = False
        self._refused = False
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        bound = self._limits.max_connections
        if bound is not None and len(self.connections) > bound:
            self._refuse(503, "service_unavailable", "This server holds as many connections as"
                         " it takes; try again shortly.", retry_after=1, linger=True)  # fmt: skip
            return
        self._start_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._stop_timers()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if not self._head_done:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._head_done or self._refused:
            return
        url = len(getattr(self, "url", b"") or b"")
        if self._head_bytes - url - REQUEST_LINE_SLACK > MAX_HEADER_BYTES:
            self._refuse(431, "headers_too_large", "Request headers are limited to 16 KB in total.")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._start_head_timer()  # a keep-alive connection's next request: its own allowance

    def on_headers_complete(self) -> None:
        self._head_done = True
        self._cancel_head_timer()
        # A head that arrived in one read is complete before data_received can count it.
        size = sum(len(name) + len(value) + 4 for name, value in self.headers)
        if size > MAX_HEADER_BYTES:
            self._refuse(431, "headers_too_large", "Request headers are limited to 16 KB in total.")
            return  # the app never sees the request
        super().on_headers_complete()
        self._start_body_timer()  # stopped at once when the request has no body

    def on_body(self, body: bytes) -> None:
        if self._refused:
            return
        super().on_body(body)
        self._start_body_timer()

    def on_message_complete(self) -> None:
        if self._refused:
            return
        super().on_message_complete()
        self._cancel_body_timer()
        self._head_bytes = 0  # the next request on this connection starts afresh
        self._head_done = False

    # -- timers -------------------------------------------------------------------------

    def _start_head_timer(self) -> None:
        seconds = self._limits.head_timeout
        if seconds is not None and self._head_timer is None:
            self._head_timer = self.loop.call_later(seconds, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _start_body_timer(self) -> None:
        self._cancel_body_timer()
        seconds = self._limits.body_timeout
        if seconds is not None:
            self._body_timer = self.loop.call_later(seconds, self._body_timed_out)

    def _cancel_body_timer(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _stop_timers(self) -> None:
        self._cancel_head_timer()
        self._cancel_body_timer()

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        if self._head_bytes:
            self._refuse(408, "request_timeout", "The request's head did not arrive in time.")
        else:
            self.transport.close()  # nothing was asked: nothing to answer

    def _body_timed_out(self) -> None:
        self._body_timer = None
        cycle = self.cycle
        if self.transport.is_closing() or cycle is None:
            return
        if self.flow.read_paused or cycle.waiting_for_100_continue:
            self._start_body_timer()  # the application has not asked for more: not a stall
            return
        if cycle.response_started:
            self.transport.close()  # an answer is under way: it cannot become a 408
            return
        # The application reading the body sees the client gone, and sends nothing more.
        cycle.disconnected = True
        cycle.message_event.set()
        self._refuse(408, "request_timeout", "The request's body stopped arriving.")

    def _refuse(self, status: int, code: str, message: str, *, retry_after: int | None = None,
                linger: bool = False) -> None:  # fmt: skip
        """Answer with the API's error shape and close the connection; the app sees nothing.

        `linger` half-closes first and closes after LINGER seconds (or the client's close),
        for a client that may have sent its request before reading this."""
        self._refused = True
        self._stop_timers()
        request_id = "req_" + os.urandom(8).hex()
        body = (
            b'{"error":{"code":"' + code.encode() + b'","message":"' + message.encode()
            + b'","status":' + str(status).encode() + b',"requestId":"' + request_id.encode()
            + b'"}}'
        )  # fmt: skip
        reason = {408: b"Request Timeout", 431: b"Request Header Fields Too Large",
                  503: b"Service Unavailable"}[status]  # fmt: skip
        head = [
            b"HTTP/1.1 " + str(status).encode() + b" " + reason,
            b"content-type: application/json",
            b"content-length: " + str(len(body)).encode(),
            b"x-request-id: " + request_id.encode(),
            b"connection: close",
        ]
        if retry_after is not None:
            head.append(b"retry-after: " + str(retry_after).encode())
        self.transport.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
        if linger and self.transport.can_write_eof():
            self.transport.write_eof()
            self.loop.call_later(LINGER, self.transport.close)
        else:
            self.transport.close()

"""uvicorn's httptools protocol with a bound on request headers (`propdata serve` uses it).

uvicorn reads a request's head with no limit: a client sending a 40 MB header made a worker
hold it all (67 MB more resident memory) before the application could refuse anything.
Here the bytes a request's head takes are counted as they arrive; once its headers pass
MAX_HEADER_BYTES (16 KB), whether the head is complete or still arriving, the connection is
answered 431 Request Header Fields Too Large and closed, having buffered at most one more
read, and the application never sees the request.

    uvicorn.run(..., http="propdata.kit.serving:BoundedHttpToolsProtocol")
"""

from __future__ import annotations

import os
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEADER_BYTES = 16 * 1024
"""Request headers beyond this, in total, are refused (contract.md, "Sizes")."""
REQUEST_LINE_SLACK = 16
"""The request line's bytes around its URL: method, spaces, HTTP/1.1 and CRLF (about)."""


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol that answers 431 to a request whose headers pass 16 KB."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes = 0
        self._head_done = False
        self._refused = False

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
            self._refuse()

    def on_headers_complete(self) -> None:
        self._head_done = True
        # A head that arrived in one read is complete before data_received can count it.
        size = sum(len(name) + len(value) + 4 for name, value in self.headers)
        if size > MAX_HEADER_BYTES:
            self._refuse()  # the app never sees the request
            return
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if self._refused:
            return
        super().on_message_complete()
        self._head_bytes = 0  # the next request on this connection starts afresh
        self._head_done = False

    def _refuse(self) -> None:
        self._refused = True
        request_id = "req_" + os.urandom(8).hex()
        body = (
            b'{"error":{"code":"headers_too_large","message":"Request headers are limited to'
            b' 16 KB in total.","status":431,"requestId":"' + request_id.encode() + b'"}}'
        )
        head = (
            b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
            b"content-type: application/json\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n"
            b"x-request-id: " + request_id.encode() + b"\r\n"
            b"connection: close\r\n\r\n"
        )
        self.transport.write(head + body)
        self.transport.close()

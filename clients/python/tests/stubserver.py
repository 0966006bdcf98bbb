"""A local HTTP server that answers from a script, for what a live server cannot stage on
demand: a stream cut mid-way, a 503 then a 200, the exact bytes of a request.

Each request is recorded (method, path, query, headers, body). Answers are queued by
(method, path): each request takes the first one queued, and the last one stays to answer
again. An answer with `chunks` is a stream: written piece by piece without a length, then
the connection is closed (as a proxy or a restarted server ends a Server-Sent Events
stream).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: Any = None  # JSON-encoded unless bytes; None: no body
    headers: dict[str, str] = field(default_factory=dict)
    chunks: Sequence[bytes] | None = None  # a stream, closed after the last chunk
    pause: float = 0.0  # seconds between chunks


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Stub:
    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self._answers: dict[tuple[str, str], list[Answer]] = {}
        self._lock = threading.Lock()
        self.base_url = ""

    def on(self, method: str, path: str, *answers: Answer) -> None:
        with self._lock:
            self._answers.setdefault((method, path), []).extend(answers)

    def json(self, method: str, path: str, body: Any, status: int = 200, **headers: str) -> None:
        self.on(method, path, Answer(status, body, headers))

    def seen(self, method: str, path: str) -> list[Seen]:
        return [r for r in self.requests if r.method == method and r.path == path]

    def _take(self, method: str, path: str) -> Answer:
        with self._lock:
            queue = self._answers.get((method, path))
            if not queue:
                return Answer(404, {"error": {"code": "not_found", "message": "stub: no answer",
                                              "status": 404, "requestId": "stub"}})  # fmt: skip
            return queue.pop(0) if len(queue) > 1 else queue[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                url = urlsplit(self.path)
                headers = {k.lower(): v for k, v in self.headers.items()}
                seen = Seen(self.command, url.path, dict(parse_qsl(url.query)), headers, body)
                stub.requests.append(seen)
                answer = stub._take(self.command, url.path)
                self.send_response(answer.status)
                self.send_header("X-Request-Id", f"stub-{len(stub.requests)}")
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                if answer.chunks is not None:
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for chunk in answer.chunks:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                        time.sleep(answer.pause)
                    self.close_connection = True
                    return
                content = b""
                if answer.body is not None:
                    content = (
                        answer.body
                        if isinstance(answer.body, bytes)
                        else json.dumps(answer.body).encode()
                    )
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = do_PATCH = do_DELETE = _serve

        return Handler


@contextmanager
def stub_server() -> Iterator[Stub]:
    stub = Stub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), stub._handler())
    server.daemon_threads = True
    stub.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def sse(cursor: str, event: dict[str, Any]) -> bytes:
    """One event as the API streams it."""
    return f"id: {cursor}\nevent: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def event(n: int, kind: str = "property.priceChanged", search_id: str = "srch_a") -> dict[str, Any]:
    """An event of the wire's shape, the n-th of its owner."""
    return {
        "id": f"evt_{n:026d}",
        "type": kind,
        "timestamp": "2026-11-25T12:00:00.000Z",
        "sequence": n,
        "data": {
            "searchId": search_id,
            "searchName": "Ames under 400k",
            "property": {"id": "t-001", "listPrice": 300000 - n},
            "previous": {"listPrice": 300001 - n},
            "changes": ["listPrice"],
        },
    }


class Receiver:
    """A webhook receiver on loopback: records each POST (headers, body) and answers `status`
    (204 unless a test sets another); the `receiver` fixture (conftest) serves one."""

    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.status = 204
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def of_type(self, kind: str) -> list[tuple[dict[str, str], bytes]]:
        """The deliveries of events of type `kind`."""
        return [(h, b) for h, b in self.got if f'"type":"{kind}"' in b.decode().replace(" ", "")]

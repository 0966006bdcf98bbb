"""A real HTTP/1.1 server on 127.0.0.1 that records the POSTs it receives (keep-alive kept),
answering each with the status the test chooses."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    port: int = 0
    received: list[Received] = field(default_factory=list)
    answer: Callable[[Received], tuple[int, dict[str, str]]] = lambda _: (200, {})
    delay: float = 0.0
    before_answer: Callable[[Received], Awaitable[None]] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            first = await reader.readexactly(1)
            if first == b"\x16":  # a TLS handshake: answer as a plain HTTP server would
                writer.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                await writer.drain()
                return
            while True:
                head = first + await reader.readuntil(b"\r\n\r\n")
                first = b""
                lines = head.decode("latin-1").split("\r\n")
                _method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                got = Received(path, headers, body)
                self.received.append(got)
                if self.delay:
                    await asyncio.sleep(self.delay)
                if self.before_answer is not None:
                    await self.before_answer(got)
                status, extra = self.answer(got)
                out = f"HTTP/1.1 {status} X\r\ncontent-length: 2\r\n"
                out += "".join(f"{k}: {v}\r\n" for k, v in extra.items())
                writer.write((out + "\r\n").encode() + b"ok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@contextlib.asynccontextmanager
async def receiving(**options: object) -> AsyncIterator[Receiver]:
    receiver = Receiver(**options)  # type: ignore[arg-type]
    server = await asyncio.start_server(receiver._serve, "127.0.0.1", 0)
    receiver.port = server.sockets[0].getsockname()[1]
    try:
        yield receiver
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 2)

"""The protocol `propdata serve` gives uvicorn leaves nothing behind when a connection ends."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import uvicorn
from uvicorn.server import ServerState

from propdata.kit.serving.protocol import BoundedHttpToolsProtocol


class _Transport(asyncio.Transport):
    """What the protocol needs of a transport: addresses, writes, and whether it closes."""

    def __init__(self) -> None:
        super().__init__()
        self.closing = False
        self.written = b""

    def get_extra_info(self, name: str, default: object = None) -> object:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(
            name, default
        )

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def close(self) -> None:
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _ok(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.mark.parametrize("error", [None, ConnectionResetError()], ids=["closed", "reset"])
async def test_a_connection_that_ends_leaves_no_keep_alive_timer(error: Exception | None) -> None:
    config = uvicorn.Config(_ok, http=BoundedHttpToolsProtocol, log_level="error")
    config.load()
    protocol = BoundedHttpToolsProtocol(
        config=config, server_state=ServerState(), app_state={}, _loop=asyncio.get_running_loop()
    )
    transport = _Transport()
    protocol.connection_made(transport)
    protocol.data_received(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    for _ in range(100):
        await asyncio.sleep(0)
    assert transport.written.startswith(b"HTTP/1.1 200")
    assert protocol.timeout_keep_alive_task is not None  # answered: waiting for the next
    protocol.connection_lost(error)
    assert protocol.timeout_keep_alive_task is None

"""A bare ASGI app that answers get-by-id with the very bytes propdata answers: the ceiling.

    BENCH_BARE_BODIES=bodies.tsv uvicorn bare:app --app-dir bench --workers 2 \
        --loop uvloop --http httptools

The bodies file holds one `path<TAB>body` a line (bench/run.py fetches them from propdata
before the run). The app does what any framework must (read the path, find the answer,
send it) and nothing else: no key check, limiter, metering, store or JSON encoding. The
headers have propdata's names, with fixed values, so the responses are as long.
"""

from __future__ import annotations

import os
from typing import Any

BODIES: dict[str, bytes] = {}
with open(os.environ["BENCH_BARE_BODIES"], "rb") as file:
    for line in file:
        path, _, body = line.rstrip(b"\n").partition(b"\t")
        BODIES[path.decode()] = body

HEADERS = [
    (b"content-type", b"application/json"),
    (b"x-cache", b"MISS"),
    (b"x-ratelimit-limit", b"1000000000"),
    (b"x-ratelimit-remaining", b"999999999"),
    (b"x-ratelimit-reset", b"1795303591"),
    (b"x-request-id", b"req_0123456789abcdef"),
]
NOT_FOUND = b'{"error":{"code":"not_found"}}'


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = BODIES.get(scope["path"])
    status = 200 if body is not None else 404
    body = body if body is not None else NOT_FOUND
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*HEADERS, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})

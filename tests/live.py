"""A real `propdata` server process for the tests that need one (browsers, schemathesis)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import httpx

from tests.redis_support import free_port

T = TypeVar("T")


@contextlib.contextmanager
def running_server(env: dict[str, str], *, workers: int = 1) -> Iterator[str]:
    """Serve the app with `propdata serve` on a free port; yield its base URL."""
    with serving_process(env, workers=workers) as (base, _):
        yield base


@contextlib.contextmanager
def serving_process(
    env: dict[str, str], *, workers: int = 1
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The same, yielding the base URL and the server's process (one worker: the server
    itself; more: their supervisor)."""
    port = free_port()
    full = {**os.environ, "PROPDATA_LOG_LEVEL": "ERROR", **env}
    server = subprocess.Popen(
        [sys.executable, "-m", "propdata", "serve", "--port", str(port),
         "--workers", str(workers)], env=full,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(400):
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        else:
            raise RuntimeError("server did not start")
        yield base, server
    finally:
        server.terminate()
        server.wait(10)


def run_apart(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to its end on a thread of its own: works where this thread already
    runs an event loop (Playwright's sync API keeps one)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()

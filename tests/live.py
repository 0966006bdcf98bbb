"""A real `propdata` server process for the tests that need one (browsers, schemathesis)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import datetime as dt
import importlib.util
import inspect
import os
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from pathlib import Path
from types import ModuleType
from typing import IO, Any, TypeVar, overload

import httpx

from tests.redis_support import free_port

T = TypeVar("T")

WAIT = 20.0
"""Seconds a test waits for a condition before it fails (a busy machine, not a slow service)."""


@overload
async def until(check: Callable[[], Awaitable[T]], what: str, seconds: float = WAIT) -> T: ...


@overload
async def until(check: Callable[[], T], what: str, seconds: float = WAIT) -> T: ...


async def until(check: Callable[[], Any], what: str, seconds: float = WAIT) -> Any:
    """Ask `check` (a function or coroutine function) until it answers truthy, and return
    that answer; fail naming `what` after `seconds`. For tests that wait for something to
    happen: never a fixed sleep."""
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if inspect.isawaitable(found):
            found = await found
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {seconds:g} s (last: {found!r})")
        await asyncio.sleep(0.02)


def until_sync(check: Callable[[], T], what: str, seconds: float = WAIT) -> T:
    """`until` for a test without an event loop (a server in another process, a browser)."""
    deadline = time.monotonic() + seconds
    while not (found := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {seconds:g} s (last: {found!r})")
        time.sleep(0.05)
    return found


def healthy(base: str, seconds: float = 60) -> None:
    """Wait until the server at `base` answers its /health with a 200."""

    def answers() -> bool:
        try:
            return httpx.get(base + "/health", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    until_sync(answers, f"{base} answering /health", seconds)


@contextlib.contextmanager
def running_server(env: dict[str, str], *, workers: int = 1) -> Iterator[str]:
    """Serve the app with `propdata serve` on a free port; yield its base URL."""
    with serving_process(env, workers=workers) as (base, _):
        yield base


@contextlib.contextmanager
def serving_process(
    env: dict[str, str], *, workers: int = 1, stderr: IO[bytes] | None = None,
    unset: tuple[str, ...] = (), args: tuple[str, ...] = (),
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:  # fmt: skip
    """The same, yielding the base URL and the server's process (one worker: the server
    itself; more: their supervisor). `unset`: variables of this process it does not get;
    `args`: more options of `propdata serve`."""
    port = free_port()
    full = {**os.environ, "PROPDATA_LOG_LEVEL": "ERROR", **env}
    for name in unset:
        full.pop(name, None)
    server = subprocess.Popen(
        [sys.executable, "-m", "propdata", "serve", "--port", str(port),
         "--workers", str(workers), *args], env=full, stderr=stderr,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        healthy(base)
        yield base, server
    finally:
        server.terminate()
        server.wait(10)


def run_apart(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to its end on a thread of its own: works where this thread already
    runs an event loop (Playwright's sync API keeps one)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


BUILT = dt.date.today() - dt.timedelta(days=45)
"""The day a served demo is built as of: not today, so nothing may hang on the build day."""


@contextlib.contextmanager
def serving_demo(
    backend: str, folder: Path, *options: str, timeout: float
) -> Iterator[httpx.Client]:
    """A client, with an Enterprise key, of a server of a new store of `backend` in `folder`
    holding the demo (`propdata data demo *options`) built as of BUILT."""
    from typer.testing import CliRunner

    from propdata.cli import app as cli
    from tests.conftest import create_key, drop_store, new_store

    store = run_apart(new_store(backend, folder))
    env = {**store.env(), "PROPDATA_AS_OF": BUILT.isoformat()}
    try:
        result = CliRunner().invoke(cli, ["data", "demo", *options], env=env)
        assert result.exit_code == 0, result.output
        key = run_apart(create_key(store, "enterprise"))
        headers = {"Authorization": f"Bearer {key}"}
        with (
            running_server(env) as base,
            httpx.Client(base_url=base, headers=headers, timeout=timeout) as client,
        ):
            yield client
    finally:
        run_apart(drop_store(store))


class Proxy:
    """Forwards 127.0.0.1:<port> to PostgreSQL; `cut()` drops every connection and stops
    listening, `restore()` listens on the same port again."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server: asyncio.Server | None = None
        self.writers: set[asyncio.StreamWriter] = set()

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        self.writers |= {writer, up_writer}
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _start(self) -> None:
        self.server = await asyncio.start_server(
            self._client, "127.0.0.1", self.port, reuse_address=True
        )

    async def _stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
            self.server = None
        for writer in self.writers:
            writer.transport.abort()
        self.writers.clear()

    def restore(self) -> None:
        self._call(self._start())

    def cut(self) -> None:
        self._call(self._stop())

    def close(self) -> None:
        self.cut()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


def bench_module(name: str) -> ModuleType:
    """A script of bench/ as a module (`bench_run` is bench/run.py), loaded once."""
    if name in sys.modules:
        return sys.modules[name]
    folder = Path(__file__).resolve().parents[1] / "bench"
    file = folder / (name.removeprefix("bench_") + ".py" if name == "bench_run" else f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module

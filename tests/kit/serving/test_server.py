"""`propdata serve` says where it listens, and takes a client's address from the socket, or
from X-Forwarded-For only when the peer is in PROPDATA_TRUSTED_PROXIES."""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import subprocess
import sys
from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.conftest import new_store
from tests.live import run_apart, serving_process
from tests.portal.conftest import TOKEN


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_prints_where_it_listens_before_the_first_request(
    tmp_path_factory: pytest.TempPathFactory, workers: int
) -> None:
    store = run_apart(new_store("embedded", tmp_path_factory.mktemp("listening")))
    env = {**os.environ, "PROPDATA_LOG_LEVEL": "ERROR", **store.env()}
    server = subprocess.Popen(
        [sys.executable, "-m", "propdata", "serve", "--port", "0", "--workers", str(workers)],
        env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stderr is not None
        with selectors.DefaultSelector() as wait:
            wait.register(server.stderr, selectors.EVENT_READ)
            assert wait.select(60), "nothing on standard error"
        line = server.stderr.readline()
        store_line = f"store: {store.url}\n"
        assert line == store_line, line  # which store it serves, first
        line = server.stderr.readline()
        plural = "s" if workers > 1 else ""
        found = re.fullmatch(
            rf"propdata: listening on (http://127\.0\.0\.1:\d+) with {workers} worker{plural}\n",
            line,
        )
        assert found, line
        # The port was the system's choice (--port 0): only the line says which it is.
        assert httpx.get(found.group(1) + "/health", timeout=30).status_code == 200
    finally:
        server.terminate()
        server.wait(10)
        if server.stderr is not None:
            server.stderr.close()


SPOOFS = [
    {"X-Forwarded-For": "203.0.113.{i}"},
    {"Forwarded": "for=203.0.113.{i};proto=https"},
    {"X-Real-IP": "203.0.113.{i}"},
]
"""Headers that would name another client address, each with a new address every time."""


def _reset_requests(base: str, headers: list[dict[str, str]]) -> list[int]:
    """One password reset request per set of headers, each for another email; the statuses
    (20 are allowed per client address in 15 minutes, docs/portal.md)."""
    with httpx.Client(base_url=base, timeout=30) as client:
        token = TOKEN.search(client.get("/forgot").text)
        assert token
        statuses = []
        for i, extra in enumerate(headers):
            data = {"csrf_token": token.group(1), "email": f"x{i}@example.com"}
            answer = client.post("/forgot", data=data, headers=extra, follow_redirects=False)
            statuses.append(answer.status_code)
        return statuses


@pytest.fixture
def server_with(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], str]]:
    """Start a server on a fresh store with PROPDATA_TRUSTED_PROXIES set; its base URL."""
    with contextlib.ExitStack() as stack:

        def start(trusted: str) -> str:
            store = run_apart(new_store("embedded", tmp_path_factory.mktemp("proxies")))
            env = {**store.env(), "PROPDATA_TRUSTED_PROXIES": trusted}
            base, _ = stack.enter_context(serving_process(env))
            return base

        yield start


def test_a_direct_client_cannot_choose_its_address(server_with: Callable[[str], str]) -> None:
    base = server_with("")
    headers = [{k: v.format(i=i) for k, v in SPOOFS[i % 3].items()} for i in range(21)]
    statuses = _reset_requests(base, headers)
    # all 21 came from 127.0.0.1, whatever they said
    assert statuses == [200] * 20 + [429], statuses


def test_a_trusted_proxy_names_the_client(server_with: Callable[[str], str]) -> None:
    base = server_with("127.0.0.1")
    each_its_own = [{"X-Forwarded-For": f"198.51.100.7, 203.0.113.{i}"} for i in range(21)]
    assert _reset_requests(base, each_its_own) == [200] * 21  # 21 clients, one request each
    one_client = [{"X-Forwarded-For": "203.0.113.200"}] * 21
    assert _reset_requests(base, one_client) == [200] * 20 + [429]

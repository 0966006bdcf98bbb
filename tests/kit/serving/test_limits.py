"""`propdata serve` holds each client to its limits before the application sees anything:
request headers up to 16 KB (contract.md, "Sizes"), a request head whole and a body never
stalled for longer than PROPDATA_HEAD_TIMEOUT / PROPDATA_BODY_TIMEOUT, and at most
PROPDATA_MAX_CONNECTIONS connections per worker. The servers here take 1 s for each timeout.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import new_store
from tests.live import run_apart, serving_process

LIMIT = 1.0
"""The head and body timeouts of the servers here, in seconds."""
FAST = {"PROPDATA_HEAD_TIMEOUT": str(LIMIT), "PROPDATA_BODY_TIMEOUT": str(LIMIT)}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    store = run_apart(new_store("embedded", tmp_path_factory.mktemp("serving")))
    with serving_process({**store.env(), **FAST}) as (base, process):
        yield base, process.pid


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_headers_up_to_16_kb_are_served(server: tuple[str, int]) -> None:
    base, _ = server
    response = httpx.get(base + "/health", headers={"X-Pad": "a" * 15_000})
    assert response.status_code == 200


@pytest.mark.parametrize(
    "headers",
    [{"X-Pad": "a" * 20_000}, {f"X-Pad-{i}": "b" * 1_000 for i in range(20)}],
    ids=["one big header", "many headers"],
)
def test_headers_over_16_kb_get_431(server: tuple[str, int], headers: dict[str, str]) -> None:
    base, _ = server
    response = httpx.get(base + "/health", headers=headers)
    assert response.status_code == 431
    error = response.json()["error"]
    assert error["status"] == 431 and error["requestId"] == response.headers["x-request-id"]


def test_a_40_mb_header_is_cut_off_without_the_memory(server: tuple[str, int]) -> None:
    base, pid = server
    port = int(base.rsplit(":", 1)[1])
    before = _rss_kb(pid)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: ")
        chunk = b"a" * 65_536
        sent = 0
        try:
            while sent < 40 * 1024 * 1024:
                conn.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed the connection: what we want
        conn.settimeout(5)
        answer = b""
        try:
            while chunk := conn.recv(65_536):
                answer += chunk
        except (ConnectionResetError, TimeoutError):
            pass
    assert sent < 40 * 1024 * 1024, "the server read the whole 40 MB"
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    body = answer.split(b"\r\n\r\n", 1)[1]
    assert json.loads(body)["error"]["status"] == 431
    time.sleep(0.2)
    assert _rss_kb(pid) - before < 8_000  # KB; it was 67 MB


def test_keep_alive_requests_each_get_their_own_allowance(server: tuple[str, int]) -> None:
    base, _ = server
    with httpx.Client(base_url=base) as client:
        for _ in range(3):
            assert client.get("/health", headers={"X-Pad": "c" * 12_000}).status_code == 200


# -- slow clients -----------------------------------------------------------------------------


def _port(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


def _talk(port: int, first: bytes, trickle: bytes = b"", seconds: float = 8) -> tuple[float, bytes]:
    """Connect, send `first`, then one `trickle` every 0.2 s until something is answered;
    read until the server closes. The seconds that took and the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        start = time.monotonic()
        conn.sendall(first)
        conn.settimeout(0.2)
        answer = b""
        while time.monotonic() - start < seconds:
            try:
                chunk = conn.recv(65_536)
            except TimeoutError:
                if trickle and not answer:
                    conn.sendall(trickle)
                continue
            except ConnectionResetError:
                break
            if not chunk:
                break
            answer += chunk
        return time.monotonic() - start, answer


def _error(answer: bytes) -> dict[str, Any]:
    error: dict[str, Any] = json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]
    return error


def test_a_trickling_head_is_answered_408_and_closed(server: tuple[str, int]) -> None:
    base, _ = server
    took, answer = _talk(_port(base), b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ", b"a")
    assert LIMIT * 0.9 <= took < LIMIT + 2, took
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert _error(answer)["code"] == "request_timeout"


def test_a_connection_that_sends_nothing_is_closed(server: tuple[str, int]) -> None:
    base, _ = server
    took, answer = _talk(_port(base), b"")
    assert LIMIT * 0.9 <= took < LIMIT + 2, took
    assert answer == b""  # nothing was asked


LOGIN = b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"


def test_a_stalled_body_is_answered_408_and_closed(server: tuple[str, int]) -> None:
    base, _ = server
    took, answer = _talk(_port(base), LOGIN + b"Content-Length: 100\r\n\r\nemail=a%40b.c")
    assert LIMIT * 0.9 <= took < LIMIT + 2, took
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert _error(answer)["code"] == "request_timeout"


def test_a_body_that_keeps_coming_is_read_to_its_end(server: tuple[str, int]) -> None:
    base, _ = server
    body = b"email=a%40b.c&password=" + b"x" * 20
    with socket.create_connection(("127.0.0.1", _port(base)), timeout=10) as conn:
        conn.sendall(LOGIN + b"Content-Length: %d\r\n\r\n" % len(body))
        for piece in (body[:10], body[10:20], body[20:]):  # 1.8 s in all, never 1 s silent
            time.sleep(LIMIT * 0.6)
            conn.sendall(piece)
        answer = conn.recv(65_536)
    assert answer.startswith(b"HTTP/1.1 403"), answer[:200]  # no form token: the app answered


def test_slow_clients_hold_no_worker_and_are_all_closed(server: tuple[str, int]) -> None:
    base, _ = server
    port = _port(base)
    slow = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(200)]
    try:
        for i, conn in enumerate(slow):
            if i % 2:  # half send part of a head, half nothing at all
                conn.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: a")
        started = time.monotonic()
        with httpx.Client(base_url=base, timeout=5) as client:
            for _ in range(3):
                assert client.get("/health").status_code == 200
        assert time.monotonic() - started < LIMIT  # answered while the slow ones are held
        time.sleep(LIMIT + 1)
        held = 0
        for conn in slow:
            conn.settimeout(0.5)
            try:
                while conn.recv(65_536):
                    pass  # a 408, then the close
            except ConnectionResetError:
                pass
            except TimeoutError:
                held += 1
        assert held == 0, f"{held} of 200 slow connections still open"
    finally:
        for conn in slow:
            conn.close()


@pytest.fixture(scope="module")
def bounded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = run_apart(new_store("embedded", tmp_path_factory.mktemp("bounded")))
    with serving_process({**store.env(), **FAST, "PROPDATA_MAX_CONNECTIONS": "4"}) as (base, _):
        yield base


def test_a_connection_past_the_bound_is_answered_503(bounded: str) -> None:
    time.sleep(0.2)  # the start-up probe's connections are gone
    port = _port(bounded)
    held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(4)]
    try:
        time.sleep(0.1)
        refused = httpx.get(bounded + "/health", timeout=5)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        assert refused.json()["error"]["code"] == "service_unavailable"
        time.sleep(LIMIT + 0.5)  # the idle ones are closed by then
        assert httpx.get(bounded + "/health", timeout=5).status_code == 200
    finally:
        for conn in held:
            conn.close()

"""`propdata serve` refuses request headers over 16 KB itself (contract.md, "Sizes").

Issue 11.4: a 40 MB header was accepted and a worker's memory rose by 67 MB.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import new_store
from tests.live import run_apart, serving_process


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    store = run_apart(new_store("embedded", tmp_path_factory.mktemp("serving")))
    with serving_process(store.env()) as (base, process):
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

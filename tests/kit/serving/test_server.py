"""`propdata serve` says where it listens, and takes a client's address from the socket, or
from X-Forwarded-For only when the peer is in PROPDATA_TRUSTED_PROXIES."""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import build_store, new_store
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
        line = logfmt(server.stderr.readline())
        assert line["message"] == f"store: {store.url}", line  # which store it serves, first
        line = logfmt(server.stderr.readline())
        plural = "s" if workers > 1 else ""
        found = re.fullmatch(
            rf"listening on (http://127\.0\.0\.1:\d+) with {workers} worker{plural}",
            line["message"],
        )
        assert found and line["level"] == "INFO", line  # said whatever PROPDATA_LOG_LEVEL
        # The port was the system's choice (--port 0): only the line says which it is.
        assert httpx.get(found.group(1) + "/health", timeout=30).status_code == 200
    finally:
        server.terminate()
        server.wait(10)
        if server.stderr is not None:
            server.stderr.close()


LOGFMT = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^\s"=\\]*)(?: |$)')
"""A logfmt pair: a bare value, or a quoted one with JSON's escapes."""


def logfmt(line: str) -> dict[str, str]:
    """The pairs of one text log line; a line that is not logfmt fails the test."""
    line = line.rstrip("\n")
    pairs = list(LOGFMT.finditer(line))
    assert pairs and "".join(p.group(0) for p in pairs) == line, line
    return {p.group(1): json.loads(v) if (v := p.group(2)).startswith('"') else v for p in pairs}


@pytest.mark.slow
@pytest.mark.parametrize("form", ["json", "text"])
def test_every_line_a_server_writes_follows_the_log_format(
    tmp_path_factory: pytest.TempPathFactory, form: str
) -> None:
    """Not only the request lines: the notices of `propdata serve`, uvicorn's own warnings
    (in the supervisor and the workers), a background loop's lines and the search index
    builder's child process write PROPDATA_LOG_FORMAT too."""
    store = run_apart(new_store("embedded", tmp_path_factory.mktemp("one-format")))
    run_apart(build_store(store))
    env = {**os.environ, **store.env(), "PROPDATA_LOG_LEVEL": "INFO",
           "PROPDATA_LOG_FORMAT": form}  # fmt: skip
    err = tmp_path_factory.mktemp("one-format-log") / "server.err"
    with err.open("w") as sink:
        server = subprocess.Popen(
            [sys.executable, "-m", "propdata", "serve", "--port", "0", "--workers", "2"],
            env=env, stderr=sink,
        )  # fmt: skip
    read = json.loads if form == "json" else logfmt
    try:
        lines = _lines_until(err, read, lambda found: any(
            "snapshot" in line.get("message", "") and "written" in line.get("message", "")
            for line in found))  # fmt: skip
        url = next(line["message"].split()[2] for line in lines
                   if line.get("message", "").startswith("listening on"))  # fmt: skip
        assert httpx.get(url + "/health", timeout=30).status_code == 200
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as garbage:
            garbage.sendall(b"\x00\x01 not http\r\n\r\n")
            garbage.recv(100)  # uvicorn answers 400 and logs a warning
        lines = _lines_until(err, read, lambda found: any(
            line.get("logger") == "uvicorn.error" for line in found))  # fmt: skip
    finally:
        server.terminate()
        server.wait(10)
    lines = [read(line) for line in err.read_text().splitlines()]  # every line, or it fails
    messages = [line for line in lines if "message" in line]
    assert {"time", "level", "logger", "message"} <= set(messages[0])
    assert any(line.get("route") == "/health" for line in lines)  # the request's line
    said = [line["message"] for line in messages]
    assert said[0] == f"store: {store.url}" and said[1].startswith("listening on"), said


def _lines_until(path: Path, read: Callable[[str], dict[str, Any]],
                 wanted: Callable[[list[dict[str, Any]]], bool]) -> list[dict[str, Any]]:  # fmt: skip
    """The log file's lines, each read as the format has it, once `wanted(lines)` holds."""
    deadline = time.monotonic() + 60
    while True:
        text = path.read_text()
        lines = [read(line) for line in text[: text.rfind("\n") + 1].splitlines()]  # whole
        if wanted(lines):
            return lines
        assert time.monotonic() < deadline, path.read_text()[-3000:]
        time.sleep(0.1)


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


@pytest.mark.parametrize("kept_out", [True, False])
def test_a_spawned_worker_does_not_run_the_main_script_again(
    tmp_path: Path, kept_out: bool
) -> None:
    # The `propdata` console script's main imports the whole command line; without
    # main_not_rerun, multiprocessing's spawn runs it again in every worker.
    script = tmp_path / "main.py"
    script.write_text(
        "import contextlib, multiprocessing, os, sys\n"
        "from propdata.kit.serving.server import main_not_rerun\n"
        "with open(sys.argv[1], 'a') as ran:\n"
        "    ran.write(f'{os.getpid()}\\n')\n"
        "if __name__ == '__main__':\n"
        "    worker = multiprocessing.get_context('spawn').Process(target=os.getpid)\n"
        "    with main_not_rerun() if sys.argv[2] == 'yes' else contextlib.nullcontext():\n"
        "        worker.start()\n"
        "        worker.join(60)\n"
        "    sys.exit(worker.exitcode)\n"
    )
    ran = tmp_path / "ran.txt"
    done = subprocess.run([sys.executable, str(script), str(ran), "yes" if kept_out else "no"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(ran.read_text().split()) == (1 if kept_out else 2)

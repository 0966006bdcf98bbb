"""docs/events.md runs as printed: its complete receiver, fed by `propdata-client listen`
(from a scripted API), verifies, answers and skips a repeated event; its openssl line makes
the Standard Webhooks vector's signature."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from propdata_client import webhook_headers
from propdata_client.cli import main
from stubserver import Answer, event, sse, stub_server

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "events.md"
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE.read_text(), re.DOTALL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str], Path]]:
    (program,) = [b for b in blocks("python") if b.startswith('"""receiver.py')]
    (tmp_path / "receiver.py").write_text(program)
    port = free_port()
    env = {**os.environ, "PROPDATA_WEBHOOK_SECRET": SECRET, "PORT": str(port)}
    process = subprocess.Popen([sys.executable, "receiver.py"], cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}/hook"
    deadline = time.monotonic() + 20
    while True:
        try:
            httpx.post(url, content=b"{}", timeout=1)
            break
        except httpx.TransportError:
            assert process.poll() is None and time.monotonic() < deadline, process.stderr
            time.sleep(0.1)
    yield url, process, tmp_path
    process.terminate()
    process.wait(10)


def test_the_guides_receiver_with_listen(
    receiver: tuple[str, subprocess.Popen[str], Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, process, folder = receiver
    first, second = event(1, "search.entered"), event(2)
    with stub_server() as api:
        api.on("GET", "/v1/events/stream", Answer(chunks=[
            sse("c_1", first), sse("c_2", second), sse("c_2", second)]))  # fmt: skip
        monkeypatch.setenv("PROPDATA_API_KEY", "pmd_live_stub")
        monkeypatch.setenv("PROPDATA_BASE_URL", api.base_url)
        monkeypatch.setenv("PROPDATA_LISTEN_SECRET", SECRET)  # as the guide runs it
        assert main(["listen", "--forward-to", url, "--count", "3"]) == 0
    out = capsys.readouterr().out
    assert out.count("-> 202") == 2 and out.count("-> 200") == 1  # the repeat: skipped
    body = '{"id": "evt_x", "type": "webhook.test"}'
    forged = webhook_headers("whsec_" + "A" * 43 + "=", "evt_x", int(time.time()), body)
    assert httpx.post(url, content=body, headers=forged).status_code == 400
    handled = (folder / "handled-webhook-ids.txt").read_text().split()
    assert handled == [first["id"], second["id"]]
    process.terminate()
    printed, _ = process.communicate(timeout=10)
    assert printed.splitlines() == [
        "search.entered Ames under 400k t-001 {'listPrice': 300000}",
        "property.priceChanged Ames under 400k t-001 {'listPrice': 299999}",
    ]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_the_guides_openssl_line_makes_the_vectors_signature(tmp_path: Path) -> None:
    (line,) = [b for b in blocks("sh") if "openssl dgst" in b]
    (tmp_path / "body.json").write_text('{"test": 2432232314}')
    env = {**os.environ, "SECRET": SECRET, "WEBHOOK_ID": "msg_p5jXN8AQM9LWM0D4loKWxJek",
           "WEBHOOK_TIMESTAMP": "1614265330"}  # fmt: skip
    done = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True,
                          text=True, check=True)  # fmt: skip
    assert done.stdout.strip() == "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

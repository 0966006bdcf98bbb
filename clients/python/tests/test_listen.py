"""`propdata-client listen --forward-to URL` through its command line: the stream's events
reach a local receiver as signed webhooks that the reference library verifies."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO

import pytest
import standardwebhooks
from tests.factories import record
from tests.redis_support import free_port

from conftest import Live
from propdata_client import Client, verify_webhook
from propdata_client.cli import main
from stubserver import Answer, Receiver, Stub, event, sse, stub_server


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stub]:
    with stub_server() as stub:
        monkeypatch.setenv("PROPDATA_API_KEY", "pmd_live_stub")
        monkeypatch.setenv("PROPDATA_BASE_URL", stub.base_url)
        monkeypatch.delenv("PROPDATA_LISTEN_SECRET", raising=False)
        yield stub


def printed_secret(err: str) -> str:
    found = re.search(r"signing secret (whsec_\S+)", err)
    assert found, err
    return found.group(1)


def test_listen_forwards_each_event_signed_with_the_secret_it_prints(
    api: Stub, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies = [event(1, "search.entered"), event(2), event(3, "market.updated")]
    api.on("GET", "/v1/events/stream",
           Answer(chunks=[sse(f"c_{e['sequence']}", e) for e in bodies]))  # fmt: skip
    code = main(["listen", "--forward-to", receiver.url, "--count", "3"])
    out, err = capsys.readouterr()
    assert code == 0, err
    secret = printed_secret(err)
    assert len(receiver.got) == 3
    reference = standardwebhooks.Webhook(secret)
    for (headers, body), sent in zip(receiver.got, bodies, strict=True):
        assert json.loads(body) == sent  # the event's JSON as streamed
        assert headers["webhook-id"] == sent["id"]
        assert headers["content-type"] == "application/json"
        assert reference.verify(body, headers)["sequence"] == sent["sequence"]
        assert verify_webhook(body, headers, secret).id == sent["id"]
    assert "search.entered evt_" in out and "-> 204" in out and "cursor c_3" in out


def test_listen_filters_resumes_and_uses_the_secret_given(
    api: Stub, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    api.on("GET", "/v1/events/stream",
           Answer(chunks=[sse("c_1", event(1, "search.entered")), sse("c_2", event(2)),
                          sse("c_3", event(3, search_id="srch_b")), sse("c_4", event(4))]))  # fmt: skip
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    code = main(["listen", "--forward-to", receiver.url, "--count", "2", "--since", "c_0",
                 "--types", "property.priceChanged", "--search-id", "srch_a",
                 "--secret", secret])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0 and secret not in out + err  # given, never printed
    assert "secret given by --secret (PROPDATA_LISTEN_SECRET keeps it off" in err
    assert [h["webhook-id"] for h, _ in receiver.got] == [event(2)["id"], event(4)["id"]]
    for headers, body in receiver.got:
        assert verify_webhook(body, headers, secret)
    assert api.requests[0].headers["last-event-id"] == "c_0"


def test_a_failing_receiver_is_reported_and_the_stream_goes_on(
    api: Stub, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    receiver.status = 500
    api.on("GET", "/v1/events/stream", Answer(chunks=[sse("c_1", event(1)), sse("c_2", event(2))]))
    assert main(["listen", "--forward-to", receiver.url, "--count", "2"]) == 0
    out, _ = capsys.readouterr()
    assert out.count("-> 500 (http_status)") == 2 and len(receiver.got) == 2


def test_listen_refuses_without_a_key_or_a_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PROPDATA_API_KEY", raising=False)
    assert main(["listen", "--forward-to", "http://localhost:3000/hook"]) == 2
    assert "PROPDATA_API_KEY" in capsys.readouterr().err
    monkeypatch.setenv("PROPDATA_API_KEY", "pmd_live_stub")
    assert main(["listen", "--forward-to", "localhost:3000"]) == 2


def test_an_api_error_ends_listen_with_its_words(
    api: Stub, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    api.on("GET", "/v1/events/stream", Answer(401, {"error": {
        "code": "invalid_api_key", "message": "The API key is not valid.", "status": 401,
        "requestId": "stub"}}))  # fmt: skip
    assert main(["listen", "--forward-to", receiver.url]) == 1
    assert "The API key is not valid." in capsys.readouterr().err


def test_a_secret_from_the_environment_is_used_and_never_printed(
    api: Stub, receiver: Receiver, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    monkeypatch.setenv("PROPDATA_LISTEN_SECRET", secret)
    api.on("GET", "/v1/events/stream", Answer(chunks=[sse("c_1", event(1))]))
    assert main(["listen", "--forward-to", receiver.url, "--count", "1"]) == 0
    out, err = capsys.readouterr()
    assert secret not in out + err and "the secret in PROPDATA_LISTEN_SECRET" in err
    ((headers, body),) = receiver.got
    assert verify_webhook(body, headers, secret)


class Listening:
    """`propdata-client listen` in a process of its own, its output read on threads."""

    def __init__(self, base_url: str, key: str, forward_to: str, *args: str,
                 secret: str | None = None) -> None:  # fmt: skip
        env = {**os.environ, "PROPDATA_API_KEY": key, "PROPDATA_BASE_URL": base_url}
        env.pop("PROPDATA_LISTEN_SECRET", None)
        if secret is not None:
            env["PROPDATA_LISTEN_SECRET"] = secret
        self.process = subprocess.Popen(
            [sys.executable, "-m", "propdata_client", "listen", "--forward-to", forward_to,
             *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.out: list[str] = []
        self.err: list[str] = []
        self.readers = [threading.Thread(target=self._read, args=(stream, lines), daemon=True)
                        for stream, lines in ((self.process.stdout, self.out),
                                              (self.process.stderr, self.err))]  # fmt: skip
        for reader in self.readers:
            reader.start()

    @staticmethod
    def _read(stream: IO[str], lines: list[str]) -> None:
        with stream:
            lines.extend(iter(stream.readline, ""))

    def until(self, wanted: Callable[[str], bool], seconds: float = 30) -> None:
        """Wait for standard error to say what `wanted` looks for."""
        deadline = time.monotonic() + seconds
        while not wanted("".join(self.err)):
            assert time.monotonic() < deadline, "".join(self.err)
            time.sleep(0.05)

    def stop(self) -> tuple[str, str]:
        """End the process (if it has not ended) and return its standard output and error."""
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(10)
        for reader in self.readers:
            reader.join(10)
        return "".join(self.out), "".join(self.err)


SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def test_listen_says_it_cannot_reach_the_api_and_when_it_retries(receiver: Receiver) -> None:
    """An address nobody listens on: each failed opening is said, with its wait, and the
    secret given on the command line is never printed."""
    base = f"http://127.0.0.1:{free_port()}"
    listening = Listening(base, "pmd_live_stub", receiver.url, "--secret", SECRET)
    try:
        listening.until(lambda err: err.count("cannot reach the API") >= 3)
    finally:
        out, err = listening.stop()
    assert f"connecting to the event stream of {base}" in err
    retries = [line for line in err.splitlines() if "cannot reach the API" in line]
    assert all(base in line and re.search(r"retrying in \d+\.\d s", line) for line in retries)
    assert "connected" not in err and SECRET not in out + err


def test_listen_against_a_real_server_says_when_it_is_connected(
    own_live: Live, receiver: Receiver
) -> None:
    key = own_live.key("enterprise", per_minute=1_000_000)
    with Client(api_key=key, base_url=own_live.base_url) as client:
        search = client.searches.create("t-012 only", property_ids=["t-012"])
    listening = Listening(own_live.base_url, key, receiver.url, "--count", "1", secret=SECRET)
    try:
        listening.until(lambda err: "connected; forwarding its events to" in err)
        own_live.load([record("t-012", list_price=234_567)])
        assert listening.process.wait(30) == 0
    finally:
        out, err = listening.stop()
    assert SECRET not in out + err and "cannot reach" not in err
    ((headers, body),) = receiver.got
    forwarded = verify_webhook(body, headers, SECRET)
    assert forwarded.search_id == search.id and f"{forwarded.type} {forwarded.id} -> 204" in out

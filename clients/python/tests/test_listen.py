"""`propdata-client listen --forward-to URL` through its command line: the stream's events
reach a local receiver as signed webhooks that the reference library verifies."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import standardwebhooks

from propdata_client import verify_webhook
from propdata_client.cli import main
from stubserver import Answer, Stub, event, sse, stub_server


class Receiver:
    """A local webhook receiver: records each POST (headers, body) and answers `status`."""

    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.status = 204
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    thread = threading.Thread(target=r.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield r
    r.server.shutdown()
    r.server.server_close()


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
    _, err = capsys.readouterr()
    assert code == 0 and printed_secret(err) == secret
    assert [h["webhook-id"] for h, _ in receiver.got] == [event(2)["id"], event(4)["id"]]
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

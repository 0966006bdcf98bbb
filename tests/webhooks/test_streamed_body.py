"""A write's body sent in chunks, without a Content-Length, is counted as it arrives and
refused past 64 KB by a real server (uvicorn, chunked transfer encoding), as one that
declares its length is; nothing is made. Under 64 KB it is read whole and judged as any."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import Store, build_store, create_key, drop_store, new_store
from tests.live import run_apart, running_server

PUBLIC = "https://93.184.215.14/hook"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Store]]:
    store = run_apart(new_store("embedded", tmp_path_factory.mktemp("streamed")))
    run_apart(build_store(store))
    try:
        with running_server(store.env()) as base:
            yield base, store
    finally:
        run_apart(drop_store(store))


def client_of(served: tuple[str, Store]) -> httpx.Client:
    base, store = served
    secret = run_apart(create_key(store, "developer"))
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    return httpx.Client(base_url=base, headers=headers, timeout=10)


def chunks(body: dict[str, str], pad: int = 0) -> Iterator[bytes]:
    """`body` as JSON, its last field's text followed by `pad` KB of x, a piece at a time."""
    text = httpx.Request("POST", "/", json=body).content
    yield text[:-2]
    for _ in range(pad):
        yield b"x" * 1024
    yield text[-2:]


@pytest.mark.parametrize(
    ("path", "body"),
    [("/v1/webhooks", {"url": PUBLIC, "description": ""}),
     ("/v1/searches", {"name": "Ames", "propertyIds": [], "x": ""})],
)  # fmt: skip
def test_a_chunked_body_past_64_kb_is_413_and_makes_nothing(
    served: tuple[str, Store], path: str, body: dict[str, str]
) -> None:
    with client_of(served) as client:
        answer = client.post(path, content=chunks(body, pad=70))
        assert answer.request.headers.get("transfer-encoding") == "chunked"
        assert answer.status_code == 413, answer.text
        assert answer.json()["error"]["code"] == "payload_too_large"
        assert client.get(path).json()["meta"]["total"] == 0


def test_a_chunked_body_under_64_kb_is_taken(served: tuple[str, Store]) -> None:
    with client_of(served) as client:
        made = client.post("/v1/webhooks", content=chunks({"url": PUBLIC}))
        assert made.request.headers.get("transfer-encoding") == "chunked"
        assert made.status_code == 201, made.text
        assert client.get("/v1/webhooks").json()["meta"]["total"] == 1

"""`POST /forgot` answers as fast for an address without an account as for one with: measured
on a real server, medians of alternating runs, so the time tells no one which addresses have
accounts."""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import drop_store, new_store
from tests.live import run_apart, running_server
from tests.portal.conftest import STRONG, TOKEN

RUNS = 20
KNOWN = 5
"""Accounts asked for: each takes at most five mails an hour, and every run must mail."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = run_apart(new_store("embedded", tmp_path_factory.mktemp("forgot")))
    # Behind a trusted proxy each request names its own client, so no attempt limit binds.
    env = {**store.env(), "PROPDATA_TRUSTED_PROXIES": "127.0.0.1"}
    try:
        with running_server(env) as base:
            yield base
    finally:
        run_apart(drop_store(store))


def send(client: httpx.Client, path: str, fields: dict[str, str], client_address: str) -> int:
    found = TOKEN.search(client.get(path).text)
    assert found
    answer = client.post(path, data={"csrf_token": found.group(1), **fields},
                         headers={"X-Forwarded-For": client_address})  # fmt: skip
    return answer.status_code


def test_forgot_takes_as_long_without_an_account(server: str) -> None:
    known = [f"known{i}@example.com" for i in range(KNOWN)]
    for i, address in enumerate(known):
        with httpx.Client(base_url=server) as browser:
            assert send(browser, "/signup", {"email": address, "password": STRONG},
                        f"10.1.0.{i}") == 303  # fmt: skip
    took: dict[str, list[float]] = {"known": [], "unknown": []}
    with httpx.Client(base_url=server) as browser:
        token = TOKEN.search(browser.get("/forgot").text)
        assert token
        for run in range(RUNS):
            order = ("known", "unknown") if run % 2 else ("unknown", "known")
            for kind in order:
                address = known[run % KNOWN] if kind == "known" else f"nobody{run}@example.com"
                started = time.perf_counter()
                answer = browser.post(
                    "/forgot", data={"csrf_token": token.group(1), "email": address},
                    headers={"X-Forwarded-For": f"10.2.{run}.{len(took[kind])}"},
                )  # fmt: skip
                took[kind].append(time.perf_counter() - started)
                assert answer.status_code == 200 and re.search("Check your mail", answer.text)
                time.sleep(0.05)  # the mail of one request is not the next one's wait
    known_ms = statistics.median(took["known"]) * 1000
    unknown_ms = statistics.median(took["unknown"]) * 1000
    assert known_ms < 1.4 * unknown_ms and unknown_ms < 1.4 * known_ms, (known_ms, unknown_ms)

"""`POST /forgot` answers before it looks the address up: on a real server whose SMTP server
holds every message, the answer for an address with an account arrives while its reset mail
is still held, so its time cannot tell anyone which addresses have accounts."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from aiosmtpd.controller import Controller

from tests.conftest import drop_store, new_store
from tests.live import run_apart, running_server, until_sync
from tests.portal.conftest import STRONG, TOKEN
from tests.redis_support import free_port


class HoldingInbox:
    """Takes mail; while `open` is cleared, each message's DATA waits until it is set."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.open.set()
        self.waiting: list[str] = []
        self.delivered: list[str] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        to = ",".join(envelope.rcpt_tos)
        if not self.open.is_set():
            self.waiting.append(to)
            await asyncio.to_thread(self.open.wait)
        self.delivered.append(to)
        return "250 OK"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, HoldingInbox]]:
    inbox = HoldingInbox()
    port = free_port()
    smtp = Controller(inbox, hostname="127.0.0.1", port=port)
    smtp.start()
    store = run_apart(new_store("embedded", tmp_path_factory.mktemp("forgot")))
    env = {**store.env(), "PROPDATA_SMTP_URL": f"smtp://127.0.0.1:{port}"}
    try:
        with running_server(env) as base:
            yield base, inbox
    finally:
        inbox.open.set()
        smtp.stop()
        run_apart(drop_store(store))


def post(client: httpx.Client, path: str, fields: dict[str, str]) -> httpx.Response:
    found = TOKEN.search(client.get(path).text)
    assert found
    return client.post(path, data={"csrf_token": found.group(1), **fields})


def test_forgot_answers_while_the_reset_mail_is_held(served: tuple[str, HoldingInbox]) -> None:
    base, inbox = served
    known, unknown = "known@example.com", "nobody@example.com"
    # The SMTP client gives up after 15 s; a reply that waited for the mail would miss 5 s.
    with httpx.Client(base_url=base, timeout=5.0) as browser:
        assert post(browser, "/signup", {"email": known, "password": STRONG}).status_code == 303
        until_sync(lambda: known in inbox.delivered, "the address confirmation sent")
        browser.cookies.clear()
        inbox.open.clear()
        for address in (unknown, known):
            answer = post(browser, "/forgot", {"email": address})
            assert answer.status_code == 200 and "Check your mail" in answer.text
        assert inbox.delivered == [known]  # both answers came with no reset mail sent
    until_sync(lambda: inbox.waiting == [known], "the known address's mail begun")
    inbox.open.set()
    until_sync(lambda: inbox.delivered == [known, known], "both mails delivered")
    assert inbox.waiting == [known]  # and the unknown address got none

"""Outgoing mail: a real SMTP server (aiosmtpd) on loopback, and the outbox folder."""

from __future__ import annotations

import email
import email.policy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from propdata.kit.mail import OutboxMailer, SmtpMailer, mailer_for
from tests.redis_support import free_port


class Inbox:
    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], bytes]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 OK"


@pytest.fixture
def smtp() -> Iterator[tuple[int, Inbox]]:
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield port, inbox
    finally:
        controller.stop()


async def test_smtp_delivers_a_whole_message(smtp: tuple[int, Inbox]) -> None:
    port, inbox = smtp
    mailer = mailer_for(f"smtp://127.0.0.1:{port}", "unused", "propdata <no-reply@example.com>")
    assert isinstance(mailer, SmtpMailer)
    await mailer.send("ada@example.com", "Confirm your address", "Open http://x/verify/abc\n")
    ((sender, recipients, raw),) = inbox.messages
    assert sender == "no-reply@example.com" and recipients == ["ada@example.com"]
    message = email.message_from_bytes(raw, policy=email.policy.default)
    assert message["Subject"] == "Confirm your address" and message["Message-ID"]
    assert "http://x/verify/abc" in message.get_content()  # type: ignore[attr-defined]


async def test_smtp_that_cannot_be_reached_raises(tmp_path: Path) -> None:
    mailer = SmtpMailer(f"smtp://127.0.0.1:{free_port()}", "a <a@b.c>", timeout=2)
    with pytest.raises(OSError):
        await mailer.send("ada@example.com", "s", "t")


async def test_outbox_writes_rfc5322_files_and_logs_the_link(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mailer = mailer_for(None, tmp_path / "outbox", "propdata <no-reply@localhost>")
    assert isinstance(mailer, OutboxMailer)
    with caplog.at_level("INFO", logger="propdata.mail"):
        await mailer.send("bob@example.com", "Reset", "Link: http://h:1/reset/tok\n")
    (path,) = (tmp_path / "outbox").glob("*.eml")
    message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    assert message["To"] == "bob@example.com" and message["From"] == "propdata <no-reply@localhost>"
    assert "http://h:1/reset/tok" in caplog.text

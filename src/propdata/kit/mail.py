"""Outgoing mail: SMTP when configured, else RFC 5322 files in an outbox folder.

mailer = mailer_for("smtps://user:pass@mail.example.com:465", "var/outbox", "x <a@b.c>")
await mailer.send("to@example.com", "Subject", "Body text")
"""

from __future__ import annotations

import asyncio
import datetime as dt
import email.policy
import logging
import os
import smtplib
import ssl
import uuid
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlsplit

log = logging.getLogger("propdata.mail")


class Mailer(Protocol):
    async def send(self, to: str, subject: str, text: str) -> None:
        """Deliver one plain-text message (raises on failure)."""
        ...


def message(sender: str, to: str, subject: str, text: str) -> EmailMessage:
    msg = EmailMessage(policy=email.policy.SMTP)
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Date"] = format_datetime(dt.datetime.now(dt.UTC))
    msg["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2].strip("> ") or "localhost")
    msg.set_content(text)
    return msg


class OutboxMailer:
    """Each message becomes `<folder>/<UTC time>-<id>.eml`; its text is logged at INFO, since
    that is how an operator without SMTP hands a person their link."""

    def __init__(self, folder: Path | str, sender: str) -> None:
        self.folder = Path(folder)
        self.sender = sender

    async def send(self, to: str, subject: str, text: str) -> None:
        msg = message(self.sender, to, subject, text)
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
        path = self.folder / f"{stamp}-{uuid.uuid4().hex[:12]}.eml"
        await asyncio.to_thread(self._write, path, msg.as_bytes())
        links = " ".join(word for word in text.split() if word.startswith(("http://", "https://")))
        log.info("mail to %s (%s) written to %s; link: %s", to, subject, path, links or "none")

    def _write(self, path: Path, data: bytes) -> None:
        """Write a message only the service's user can read: it holds sign-in links."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.folder.chmod(0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)


class SmtpMailer:
    """smtp://user:pass@host:port (STARTTLS when the server offers it) or smtps://..."""

    def __init__(self, url: str, sender: str, timeout: float = 15.0) -> None:
        parts = urlsplit(url)
        self.secure = parts.scheme == "smtps"
        self.host = parts.hostname or "localhost"
        self.port = parts.port or (465 if self.secure else 25)
        self.user = unquote(parts.username) if parts.username else None
        self.password = unquote(parts.password) if parts.password else None
        self.sender = sender
        self.timeout = timeout

    async def send(self, to: str, subject: str, text: str) -> None:
        msg = message(self.sender, to, subject, text)
        await asyncio.to_thread(self._deliver, msg)
        log.info("mail to %s (%s) sent by SMTP to %s:%d", to, subject, self.host, self.port)

    def _deliver(self, msg: EmailMessage) -> None:
        context = ssl.create_default_context()
        smtp: smtplib.SMTP
        if self.secure:
            smtp = smtplib.SMTP_SSL(self.host, self.port, timeout=self.timeout, context=context)
        else:
            smtp = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
        with smtp:
            smtp.ehlo()
            if not self.secure and smtp.has_extn("starttls"):
                smtp.starttls(context=context)
                smtp.ehlo()
            if self.user is not None:
                smtp.login(self.user, self.password or "")
            smtp.send_message(msg)


def mailer_for(smtp_url: str | None, outbox: Path | str, sender: str) -> Mailer:
    """SMTP when a URL is given, else the outbox folder."""
    if smtp_url:
        return SmtpMailer(smtp_url, sender)
    return OutboxMailer(outbox, sender)

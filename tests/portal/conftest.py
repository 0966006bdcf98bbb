"""A person's browser for the portal tests: an HTTP client that keeps cookies and sends
each form with the token its page carried, against the app on a fresh store (both configs)."""

from __future__ import annotations

import email
import email.policy
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from propdata.accounts.keys import KeyService
from propdata.accounts.service import AccountService
from propdata.config import accounts_url
from propdata.kit.db import Database, connect
from propdata.kit.mail import OutboxMailer
from propdata.kit.ratelimit.sqlite import SQLiteLimiter
from tests.conftest import FakeClock, KeyMaker

TOKEN = re.compile(r'name="csrf_token" value="([^"]*)"')
STRONG = "correct horse battery staple 42"


@dataclass
class Person:
    client: Any
    clock: FakeClock
    make_key: KeyMaker
    outbox: Path
    db: Database | None = None

    async def token(self, path: str) -> str:
        page = await self.client.get(path)
        found = TOKEN.search(page.text)
        assert found, f"no form token on {path}: {page.status_code} {page.text[:300]}"
        return found.group(1)

    async def submit(self, page: str, action: str, **fields: str) -> Any:
        """GET `page`, then POST its form to `action` with the fields (no redirects followed)."""
        data = {"csrf_token": await self.token(page), **fields}
        return await self.client.post(action, data=data, follow_redirects=False)

    async def sign_up(self, address: str, password: str = STRONG) -> Any:
        return await self.submit("/signup", "/signup", email=address, password=password)

    async def log_in(self, address: str, password: str = STRONG) -> Any:
        return await self.submit("/login", "/login", email=address, password=password)

    async def first_page(self, path: str, address: str) -> Any:
        """The dashboard page at `path` as a new account first sees it: a visitor without a
        session is sent to /login; once signed up as `address`, the page is HTML (the answer)."""
        away = await self.client.get(path, follow_redirects=False)
        assert away.status_code == 303 and away.headers["location"] == "/login"
        await self.sign_up(address)
        page = await self.client.get(path)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        return page

    def mails(self) -> list[email.message.EmailMessage]:
        files = sorted(self.outbox.glob("*.eml")) if self.outbox.exists() else []
        return [
            email.message_from_bytes(f.read_bytes(), policy=email.policy.default)  # type: ignore[misc]
            for f in files
        ]

    def link(self, kind: str) -> str:
        """The path of the newest mailed link of a kind ('verify' or 'reset')."""
        for mail in reversed(self.mails()):
            found = re.search(rf"https?://[^/\s]+(/{kind}/\S+)", mail.get_content())
            if found:
                return found.group(1)
        raise AssertionError(f"no {kind} link in the outbox")

    def accounts(self) -> AccountService:
        """The accounts of the store, over a connection of the test's own (the app's pool
        belongs to the app's event loop, on another thread)."""
        assert self.db is not None
        return AccountService(self.db, KeyService(self.db, self.clock),
                              SQLiteLimiter(":memory:", self.clock),
                              OutboxMailer(self.outbox, "test <t@localhost>"), self.clock)  # fmt: skip


def text(html: str) -> str:
    """A page's words, its tags dropped."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def attribute(row: str, name: str) -> str:
    """The value of a row's `name` attribute (the first of that name)."""
    found = re.search(rf'{name}="([^"]+)"', row)
    assert found, row[:300]
    return found.group(1)


def new_key_of(page: str) -> str | None:
    found = re.search(r'data-testid="new-key"[^>]*>([^<]+)<', page)
    return found.group(1) if found else None


@pytest.fixture
async def person(
    fresh: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> AsyncIterator[Person]:
    """A visitor with cookies, on a fresh store; mail goes to the outbox beside the data."""
    monkeypatch.chdir(tmp_path)  # at scale-out the outbox is var/outbox under the work folder
    client, clock, make_key = await fresh(cache_ttl=0)
    embedded = fresh.store.backend == "embedded"
    outbox = fresh.store.folder / "outbox" if embedded else tmp_path / "var" / "outbox"
    db = await connect(accounts_url(fresh.store.url))
    yield Person(client, clock, make_key, outbox, db)
    await db.close()


def other(person: Person, client: Any) -> Person:
    """A second browser on the same store."""
    return Person(client, person.clock, person.make_key, person.outbox, person.db)


@dataclass
class Delivered:
    headers: dict[str, str]
    body: bytes


class Receiver:
    """A webhook receiver on 127.0.0.1 (a port of its own, on a thread): it keeps what it is
    sent and answers `status` (204 by default)."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.received: list[Delivered] = []
        self.status = 204
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(size)
                receiver.received.append(
                    Delivered({k.lower(): v for k, v in self.headers.items()}, body)
                )
                self.send_response(receiver.status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

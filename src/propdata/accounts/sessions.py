"""Signed-in sessions, the one-time flash each carries, and the form tokens bound to them.

A session is a random cookie token; the store keeps only its hash. It ends after 14 days
without a request, or `lifetime` after sign-in however active it is. Form tokens (CSRF) are
signed with the store's secret and bound to the session or, before sign-in, to the
browser's form cookie.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from propdata.accounts.repository import AccountRepository
from propdata.accounts.schemas import Account
from propdata.kit import crypto

SESSION_IDLE = 14 * 86_400.0
"""A session ends after 14 days without a request (portal.md)."""
SESSION_LIFETIME = 30 * 86_400.0
"""A session ends this long after sign-in however active it is (PROPDATA_SESSION_DAYS)."""
TOUCH_EVERY = 300.0
"""A session's last-seen time is written at most this often: not a write per page view."""

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class SignedIn:
    """A new session: the cookie's token (the store keeps only its hash)."""

    account: Account
    token: str


class Flash(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a session's next page shows once: a new key's secret, a webhook endpoint's new
    signing secret (`secret`, of the endpoint `secret_of`), a sentence of what changed."""

    key: str | None = None
    notice: str | None = None
    secret: str | None = None
    secret_of: str | None = None


def _iso(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Sessions:
    """The sessions of one accounts store, with their flash and form tokens."""

    def __init__(
        self, repo: AccountRepository, clock: Clock, lifetime: float = SESSION_LIFETIME
    ) -> None:
        self.repo = repo
        self.clock = clock
        self.lifetime = lifetime
        self._secret: str | None = None

    async def secret(self) -> str:
        """The store's own secret (read once): it signs form tokens and scopes attempt names."""
        if self._secret is None:
            self._secret = await self.repo.secret()
        return self._secret

    async def form_token(self, bound_to: str) -> str:
        """The token every POST must carry in `csrf_token`, for a session token or, before
        sign-in, the browser's form cookie."""
        return crypto.sign(await self.secret(), "form", crypto.token_hash(bound_to))

    async def form_token_ok(self, sent: str, bound_to: str) -> bool:
        """Whether `sent` is the token of `bound_to` (a session, or with none a form cookie)."""
        return bool(bound_to) and secrets.compare_digest(sent, await self.form_token(bound_to))

    async def start(self, account: Account) -> SignedIn:
        """A new session for `account`, with a token of its own."""
        token = crypto.new_token()
        now = self.clock()
        # Sessions idle past their 14 days, or past their lifetime, are refused on sight;
        # each new one sweeps them out, so the table holds live sessions only.
        await self.repo.end_idle_sessions(now - SESSION_IDLE, _iso(now - self.lifetime))
        await self.repo.insert_session(crypto.token_hash(token), account.id, _iso(now), now)
        return SignedIn(account, token)

    async def account(self, token: str | None) -> Account | None:
        """The account signed in with this cookie token, if the session lives."""
        if not token or len(token) > 128:
            return None
        now = self.clock()
        token_hash = crypto.token_hash(token)
        found = await self.repo.session(token_hash, now - SESSION_IDLE, _iso(now - self.lifetime))
        if found is None:
            return None
        account, seen = found
        if account.status != "active":
            return None
        if now - seen > TOUCH_EVERY:
            await self.repo.touch_session(token_hash, now)
        return account

    async def end(self, token: str) -> None:
        """End the session of this cookie token."""
        await self.repo.end_session(crypto.token_hash(token))

    async def set_flash(self, token: str, flash: Flash) -> None:
        """Keep `flash` for the session's next page, sealed under its cookie token."""
        text = msgspec.json.encode(flash).decode()
        await self.repo.set_flash(crypto.token_hash(token), crypto.seal(token, text))

    async def take_flash(self, token: str) -> Flash:
        """What the session's next page shows once; empty when nothing was kept."""
        sealed = await self.repo.take_flash(crypto.token_hash(token))
        text = crypto.unseal(token, sealed) if sealed else None
        if not text:
            return Flash()
        try:
            return msgspec.json.decode(text, type=Flash)
        except msgspec.DecodeError:  # not sealed by this service: nothing to show
            return Flash()

"""Key decisions: creation, verification, plan changes, revocation."""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from propdata.accounts.repository import KeyRepository
from propdata.accounts.schemas import ApiKey, Held
from propdata.api.clients import bearer_token
from propdata.config import accounts_url
from propdata.errors import InvalidApiKey, MissingApiKey, RevokedApiKey
from propdata.kit import crypto, meta
from propdata.kit.db import Database, connect
from propdata.migrations.schema import migrate_accounts
from propdata.plans import BY_NAME, NAMES, OWNER_LIMITS, Plan, choice, highest


class KeyCommandError(ValueError):
    """An operator asked for something a key cannot do (unknown key, bad plan or limit)."""


@dataclass(frozen=True, slots=True)
class CustomLimits:
    per_minute: int | None = None
    daily: int | None = None
    default_page_size: int | None = None
    max_page_size: int | None = None
    saved_searches: int | None = None
    webhook_endpoints: int | None = None
    events_per_day: int | None = None

    def any(self) -> bool:
        return any(getattr(self, name) is not None for name in self.__slots__)

    def owner_limits(self) -> tuple[int | None, ...]:
        """The owner limits given, in `plans.OWNER_LIMITS` order (None: the plan's)."""
        return tuple(getattr(self, name) for name in OWNER_LIMITS)


def _iso(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


VERIFIED_KEPT = 10_000
"""Verified keys a process keeps (all are dropped when the count is reached)."""


class KeyService:
    def __init__(
        self,
        db: Database,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.clock = clock
        self.repo = KeyRepository(db)
        self._verified: dict[str, ApiKey] = {}
        """Active keys as last read, by their token, while the accounts store's keys version
        (`kit.meta.KEYS_VERSION`) stays `_version`: every committed write to keys and
        accounts (a plan, limits, a revocation, an account disabled, by any process) moves
        it and drops them all. The version is read again only when a marker moved from
        `_as_of`, the store's `notices("keys")`: on SQLite any commit (an event or a
        delivery too); on PostgreSQL the "keys" notices this process's listener heard,
        which every move of the version sends with its commit, this process's own writes,
        and at least once every `wakeup.POLL` seconds. Without a marker (PostgreSQL while
        no connection listens), every request reads its key."""
        self._as_of: object | None = None
        self._version: int | None = None
        self.reads = 0
        """Keys read from the store to verify a request (the tests count them)."""

    async def authenticate(self, authorization: str | None) -> ApiKey:
        """Verify an Authorization header; raise the contract's 401 for each failure."""
        token = bearer_token(authorization)
        if token is None:
            raise MissingApiKey()
        marker = self.db.notices(meta.KEYS_TOPIC)
        if marker is not None:
            if marker != self._as_of:
                version = await meta.get(self.db, meta.KEYS_VERSION)
                if version != self._version:
                    self._verified.clear()
                    self._version = version
                self._as_of = marker  # taken before the read: a commit meanwhile moves it
            kept = self._verified.get(token)
            if kept is not None:
                return kept
        if not crypto.well_formed(token):
            raise InvalidApiKey()
        self.reads += 1
        key = await self.repo.by_hash(crypto.key_hash(token))
        if key is None:
            raise InvalidApiKey()
        if key.status == "revoked":
            raise RevokedApiKey()
        if marker is not None:
            if len(self._verified) >= VERIFIED_KEPT:
                self._verified.clear()
            self._verified[token] = key
        return key

    async def create(
        self, plan: str, name: str | None, limits: CustomLimits, *, account_id: str | None = None
    ) -> tuple[ApiKey, str]:
        """Create a key; return it with the secret, which is shown this once and never stored."""
        _check_plan(plan)
        _check_limits(plan, limits)
        secret = crypto.new_key()
        key_id = crypto.new_key_id()
        async with self.db.transaction():
            await self.repo.insert(
                key_id, name or key_id, crypto.display_prefix(secret), crypto.key_hash(secret),
                plan, _iso(self.clock()), limits.per_minute, limits.daily, limits.default_page_size,
                limits.max_page_size, limits.owner_limits(), account_id,
            )  # fmt: skip
        key = await self.repo.by_id(key_id)
        assert key is not None
        return key, secret

    async def find(self, id_or_key: str) -> ApiKey:
        key = await self.repo.by_id(id_or_key)
        if key is None and crypto.well_formed(id_or_key):
            key = await self.repo.by_hash(crypto.key_hash(id_or_key))
        if key is None:
            raise KeyCommandError(
                f"no key {crypto.display_prefix(id_or_key) if id_or_key.startswith(crypto.PREFIX) else id_or_key!r}"
            )
        return key

    async def set_plan(self, id_or_key: str, plan: str, limits: CustomLimits) -> ApiKey:
        _check_plan(plan)
        _check_limits(plan, limits)
        key = await self.find(id_or_key)
        async with self.db.transaction():
            await self.repo.set_plan(key.id, plan)
            if limits.any():
                await self.repo.set_limits(key.id, limits.per_minute, limits.daily,
                                           limits.default_page_size, limits.max_page_size,
                                           limits.owner_limits())  # fmt: skip
        return await self.find(key.id)

    async def revoke(self, id_or_key: str) -> ApiKey:
        key = await self.find(id_or_key)
        async with self.db.transaction():
            await self.repo.revoke(key.id, _iso(self.clock()))
        return await self.find(key.id)

    async def all(self) -> list[ApiKey]:
        return await self.repo.all()

    async def plan_of(self, key: ApiKey) -> Plan:
        return await owner_plan(self.repo, key)

    async def owners_plans(
        self, account_ids: Sequence[str], key_ids: Sequence[str]
    ) -> tuple[dict[str, Plan], dict[str, Plan]]:
        """`plan_of` for many owners at once: by account id, and by id of a key without one
        (an account without an active key has the Free plan's limits)."""
        accounts, keys = await self.repo.plans_held(account_ids, key_ids)
        return (
            {a: owner_limits(accounts.get(a, ())) for a in account_ids},
            {k: owner_limits([keys[k]] if k in keys else ()) for k in key_ids},
        )

    async def stopped(
        self, account_ids: Sequence[str], key_ids: Sequence[str]
    ) -> tuple[set[str], set[str]]:
        """The accounts among these that are disabled, and the keys that are revoked: what
        they owned stops (no event is produced, nothing is delivered)."""
        return await self.repo.stopped(account_ids, key_ids)

    async def active_among(self, key_ids: Collection[str]) -> set[str]:
        """Those of the keys that would still be let in (not revoked, account not disabled)."""
        return await self.repo.active_among(sorted(key_ids))


async def owner_plan(repo: KeyRepository, key: ApiKey) -> Plan:
    """The plan whose limits a key's owner has for saved searches, webhook endpoints and
    events: the highest among the active keys of the key's portal account (every key of the
    account shares them), else the key's own (`owner_limits`)."""
    own = Held(key.plan, *(getattr(key, name) for name in OWNER_LIMITS))
    if key.account_id is None:
        return owner_limits([own])
    accounts, _ = await repo.plans_held([key.account_id], [])
    return owner_limits(accounts.get(key.account_id, set()) | {own})


def owner_limits(held: Iterable[Held]) -> Plan:
    """An owner's limits from the active keys it holds: the highest plan among them (Free
    when none), each of whose `OWNER_LIMITS` is the largest in force among the keys on that
    plan (an operator's own on an Enterprise key; an unlimited one wins, so one key without an
    events cap of its own leaves the owner's events unlimited, as the plan is)."""
    held = list(held)
    plan = highest(h.plan for h in held)
    on_plan = [h for h in held if h.plan == plan.name]
    if not on_plan:
        return plan
    limits: dict[str, Any] = {}
    for name in OWNER_LIMITS:
        values = [getattr(h, name) for h in on_plan]
        limits[name] = None if None in values else max(v for v in values if v is not None)
    return replace(plan, **limits)


@contextlib.asynccontextmanager
async def keys_of(database_url: str) -> AsyncIterator[KeyService]:
    """The keys of the store at `database_url` (in its accounts store), for scripts and tests.

    async with keys_of("var/propdata.db") as keys:
        key, secret = await keys.create("free", "demo", CustomLimits())
    """
    db = await connect(accounts_url(database_url), private=True)
    try:
        await migrate_accounts(db)
        yield KeyService(db)
    finally:
        await db.close()


def _check_plan(plan: str) -> None:
    if plan not in BY_NAME:
        raise KeyCommandError(f"unknown plan {plan!r}; choose one of {', '.join(NAMES)}")


def _check_limits(plan: str, limits: CustomLimits) -> None:
    if limits.any() and not BY_NAME[plan].customisable:
        customisable = tuple(name for name in NAMES if BY_NAME[name].customisable)
        raise KeyCommandError(f"custom limits are for the {choice(customisable)} plan only")
    for name in CustomLimits.__slots__:
        value = getattr(limits, name)
        if value is not None and value < 1:
            raise KeyCommandError(f"--{name.replace('_', '-')} must be at least 1")
    if (
        limits.default_page_size is not None
        and limits.max_page_size is not None
        and limits.default_page_size > limits.max_page_size
    ):
        raise KeyCommandError("--default-page-size must not exceed --max-page-size")

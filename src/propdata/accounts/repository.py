"""Every SQL statement about keys and plans."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from propdata.accounts.schemas import Account, ApiKey, AuditEntry, Held
from propdata.kit import meta
from propdata.kit.db import Database, in_lists
from propdata.plans import OWNER_LIMITS

_IN_FORCE = {
    # A key's own (custom) limit when it has one, else its plan's. `daily` and
    # `events_per_day` cannot COALESCE: a plan's null means unlimited, and so does an
    # Enterprise key's own null.
    "per_minute": "COALESCE(k.per_minute, p.per_minute)",
    "daily": "CASE WHEN k.daily IS NOT NULL THEN k.daily ELSE p.daily END",
    "default_page_size": "COALESCE(k.default_page_size, p.default_page_size)",
    "max_page_size": "COALESCE(k.max_page_size, p.max_page_size)",
    "saved_searches": "COALESCE(k.saved_searches, p.saved_searches)",
    "webhook_endpoints": "COALESCE(k.webhook_endpoints, p.webhook_endpoints)",
    "events_per_day": "CASE WHEN k.events_per_day IS NOT NULL THEN k.events_per_day"
    " ELSE p.events_per_day END",
    # A disabled account's keys stop at once, as if revoked (portal.md).
    "status": "CASE WHEN a.status = 'disabled' THEN 'revoked' ELSE k.status END",
}
_SELECT = (
    "SELECT "
    + ", ".join(_IN_FORCE.get(name, f"k.{name}") for name in ApiKey.__dataclass_fields__)
    + " FROM api_keys k JOIN plans p ON p.name = k.plan"
    " LEFT JOIN accounts a ON a.id = k.account_id"
)
"""ApiKey's fields, in its order, each the column of that name or the limit in force."""


class KeyRepository:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def by_hash(self, key_hash: str) -> ApiKey | None:
        row = await self.db.fetch_one(_SELECT + " WHERE k.key_hash = ?", (key_hash,))
        return ApiKey(*row) if row else None

    async def by_id(self, key_id: str) -> ApiKey | None:
        row = await self.db.fetch_one(_SELECT + " WHERE k.id = ?", (key_id,))
        return ApiKey(*row) if row else None

    async def of_account(self, account_id: str) -> list[ApiKey]:
        rows = await self.db.fetch_all(
            _SELECT + " WHERE k.account_id = ? ORDER BY k.created_at, k.id", (account_id,)
        )
        return [ApiKey(*row) for row in rows]

    async def all(self) -> list[ApiKey]:
        return [
            ApiKey(*row)
            for row in await self.db.fetch_all(_SELECT + " ORDER BY k.created_at, k.id")
        ]

    async def plans_held(
        self, account_ids: Sequence[str], key_ids: Sequence[str]
    ) -> tuple[dict[str, set[Held]], dict[str, Held]]:
        """The plans of the active keys of each account, and the plan of each key, each with
        the key's owner limits in force (its own, else its plan's)."""
        limits = ", ".join(_IN_FORCE[name] for name in OWNER_LIMITS)  # Held's order
        accounts: dict[str, set[Held]] = {}
        for part, marks in in_lists(account_ids):
            rows = await self.db.fetch_all(
                f"SELECT DISTINCT k.account_id, k.plan, {limits} FROM api_keys k"
                f" JOIN plans p ON p.name = k.plan JOIN accounts a ON a.id = k.account_id"
                f" WHERE k.status = 'active' AND a.status = 'active' AND k.account_id IN ({marks})",
                part,
            )
            for account_id, *held in rows:
                accounts.setdefault(str(account_id), set()).add(Held(*held))
        keys: dict[str, Held] = {}
        for part, marks in in_lists(key_ids):
            rows = await self.db.fetch_all(
                f"SELECT k.id, k.plan, {limits} FROM api_keys k JOIN plans p ON p.name = k.plan"
                f" WHERE k.id IN ({marks})",
                part,
            )
            keys.update((str(key_id), Held(*held)) for key_id, *held in rows)
        return accounts, keys

    async def insert(
        self,
        key_id: str,
        name: str,
        prefix: str,
        key_hash: str,
        plan: str,
        created_at: str,
        per_minute: int | None,
        daily: int | None,
        default_page_size: int | None,
        max_page_size: int | None,
        owner_limits: Sequence[int | None],
        account_id: str | None = None,
    ) -> None:
        """`owner_limits`: the key's own `plans.OWNER_LIMITS`, in that order (None: the plan's)."""
        await self.db.execute(
            "INSERT INTO api_keys (id, name, prefix, key_hash, plan, per_minute, daily,"
            f" default_page_size, max_page_size, {', '.join(OWNER_LIMITS)}, status, created_at,"
            " account_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, ?)",
            (key_id, name, prefix, key_hash, plan, per_minute, daily, default_page_size,
             max_page_size, *owner_limits, created_at, account_id),
        )  # fmt: skip
        await meta.bump(self.db, meta.KEYS_VERSION)

    async def set_plan(self, key_id: str, plan: str) -> None:
        """Change the plan; custom limits belong to the old plan's contract and are cleared."""
        await self.db.execute(
            "UPDATE api_keys SET plan = ?, per_minute = NULL, daily = NULL,"
            " default_page_size = NULL, max_page_size = NULL, "
            + ", ".join(f"{name} = NULL" for name in OWNER_LIMITS)
            + " WHERE id = ?",
            (plan, key_id),
        )
        await meta.bump(self.db, meta.KEYS_VERSION)

    async def set_limits(
        self,
        key_id: str,
        per_minute: int | None,
        daily: int | None,
        default_page_size: int | None,
        max_page_size: int | None,
        owner_limits: Sequence[int | None],
    ) -> None:
        """Set the limits given (None: leave as it is); `owner_limits` as in `insert`."""
        await self.db.execute(
            "UPDATE api_keys SET per_minute = COALESCE(?, per_minute), daily = COALESCE(?, daily),"
            " default_page_size = COALESCE(?, default_page_size),"
            " max_page_size = COALESCE(?, max_page_size), "
            + ", ".join(f"{name} = COALESCE(?, {name})" for name in OWNER_LIMITS)
            + " WHERE id = ?",
            (per_minute, daily, default_page_size, max_page_size, *owner_limits, key_id),
        )
        await meta.bump(self.db, meta.KEYS_VERSION)

    async def revoke(self, key_id: str, at: str) -> None:
        await self.db.execute(
            "UPDATE api_keys SET status = 'revoked', revoked_at = ? WHERE id = ? AND status <> 'revoked'",
            (at, key_id),
        )
        await meta.bump(self.db, meta.KEYS_VERSION)

    async def stopped(
        self, account_ids: Sequence[str], key_ids: Sequence[str]
    ) -> tuple[set[str], set[str]]:
        """Of these accounts, those disabled; of these keys, those revoked."""
        found: tuple[set[str], set[str]] = (set(), set())
        for ids, into, sql in (
            (account_ids, found[0], "SELECT id FROM accounts WHERE status = 'disabled' AND id IN"),
            (key_ids, found[1], "SELECT id FROM api_keys WHERE status <> 'active' AND id IN"),
        ):
            for chunk, marks in in_lists(ids):
                rows = await self.db.fetch_all(f"{sql} ({marks})", chunk)
                into.update(str(row[0]) for row in rows)
        return found

    async def active_among(self, key_ids: Sequence[str]) -> set[str]:
        """Those of the keys that still answer: not revoked, their account not disabled."""
        active: set[str] = set()
        for chunk, marks in in_lists(key_ids):
            rows = await self.db.fetch_all(
                "SELECT k.id FROM api_keys k LEFT JOIN accounts a ON a.id = k.account_id"
                f" WHERE k.id IN ({marks}) AND k.status = 'active'"
                " AND (a.status IS NULL OR a.status <> 'disabled')",
                chunk,
            )
            active.update(str(row[0]) for row in rows)
        return active


_ACCOUNT = "SELECT " + ", ".join(Account.__dataclass_fields__) + " FROM accounts"
_AUDIT = "SELECT " + ", ".join(AuditEntry.__dataclass_fields__) + " FROM audit_log"


def _account(row: Any) -> Account:
    fields = list(row)
    fields[4] = bool(fields[4])  # is_admin: an INTEGER on both stores
    return Account(*fields)


class AccountRepository:
    """People, their sessions and one-time links, and the audit log (portal.md)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def secret(self) -> str:
        secret = await meta.get(self.db, meta.PORTAL_SECRET)
        assert secret, "migrate_accounts seeds the portal secret"
        return secret

    # -- accounts
    async def by_email(self, email: str) -> Account | None:
        row = await self.db.fetch_one(_ACCOUNT + " WHERE email = ?", (email,))
        return _account(row) if row else None

    async def by_id(self, account_id: str) -> Account | None:
        row = await self.db.fetch_one(_ACCOUNT + " WHERE id = ?", (account_id,))
        return _account(row) if row else None

    async def all(self) -> list[Account]:
        return [
            _account(row) for row in await self.db.fetch_all(_ACCOUNT + " ORDER BY created_at, id")
        ]

    async def insert(self, account: Account) -> None:
        """Raises the driver's integrity error when the email is taken (the UNIQUE index
        decides between two sign-ups racing for one address)."""
        await self.db.execute(
            "INSERT INTO accounts (" + ", ".join(Account.__dataclass_fields__) + ")"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (account.id, account.email, account.password_hash, account.status,
             int(account.is_admin), account.email_verified_at, account.created_at),
        )  # fmt: skip
        await meta.bump(self.db, meta.KEYS_VERSION)

    async def set_password(self, account_id: str, password_hash: str) -> None:
        await self.db.execute(
            "UPDATE accounts SET password_hash = ? WHERE id = ?", (password_hash, account_id)
        )
        await meta.bump(self.db, meta.KEYS_VERSION)

    async def set_verified(self, account_id: str, at: str) -> None:
        await self.db.execute(
            "UPDATE accounts SET email_verified_at = COALESCE(email_verified_at, ?) WHERE id = ?",
            (at, account_id),
        )
        await meta.bump(self.db, meta.KEYS_VERSION)

    async def set_status(self, account_id: str, status: str) -> None:
        await self.db.execute("UPDATE accounts SET status = ? WHERE id = ?", (status, account_id))
        await meta.bump(self.db, meta.KEYS_VERSION)

    async def set_admin(self, account_id: str, is_admin: bool) -> None:
        await self.db.execute(
            "UPDATE accounts SET is_admin = ? WHERE id = ?", (int(is_admin), account_id)
        )
        await meta.bump(self.db, meta.KEYS_VERSION)

    # -- sessions
    async def session(
        self, token_hash: str, idle_from: float, made_from: str
    ) -> tuple[Account, float] | None:
        """The account of a live session (seen after `idle_from`, made after `made_from`)
        and when it was last seen."""
        row = await self.db.fetch_one(
            "SELECT s.seen_at, " + ", ".join(f"a.{c}" for c in Account.__dataclass_fields__)
            + " FROM sessions s JOIN accounts a ON a.id = s.account_id"
            " WHERE s.token_hash = ? AND s.seen_at > ? AND s.created_at > ?",
            (token_hash, idle_from, made_from),
        )  # fmt: skip
        if row is None:
            return None
        return _account(row[1:]), float(row[0])

    async def insert_session(self, token_hash: str, account_id: str, at: str, seen: float) -> None:
        await self.db.execute(
            "INSERT INTO sessions (token_hash, account_id, created_at, seen_at) VALUES (?, ?, ?, ?)",
            (token_hash, account_id, at, seen),
        )

    async def touch_session(self, token_hash: str, seen: float) -> None:
        await self.db.execute(
            "UPDATE sessions SET seen_at = ? WHERE token_hash = ?", (seen, token_hash)
        )

    async def set_flash(self, token_hash: str, sealed: str | None) -> None:
        await self.db.execute(
            "UPDATE sessions SET flash = ? WHERE token_hash = ?", (sealed, token_hash)
        )

    async def take_flash(self, token_hash: str) -> str | None:
        """The session's sealed one-time value, removed as it is read."""
        async with self.db.transaction():
            row = await self.db.fetch_one(
                "SELECT flash FROM sessions WHERE token_hash = ?", (token_hash,)
            )
            if row is None or row[0] is None:
                return None
            await self.db.execute(
                "UPDATE sessions SET flash = NULL WHERE token_hash = ?", (token_hash,)
            )
            return str(row[0])

    async def end_session(self, token_hash: str) -> None:
        await self.db.execute("DELETE FROM sessions WHERE token_hash = ?", (token_hash,))

    async def end_sessions(self, account_id: str, keep: str | None = None) -> None:
        await self.db.execute(
            "DELETE FROM sessions WHERE account_id = ? AND token_hash <> ?",
            (account_id, keep or ""),
        )

    async def end_idle_sessions(self, idle_from: float, made_from: str) -> None:
        """End the sessions last seen by `idle_from` or made by `made_from` (UTC ISO text,
        which sorts as time does)."""
        await self.db.execute(
            "DELETE FROM sessions WHERE seen_at <= ? OR created_at <= ?", (idle_from, made_from)
        )

    # -- one-time links (verify the address, reset the password)
    async def insert_token(
        self, token_hash: str, account_id: str, purpose: str, expires_at: float
    ) -> None:
        await self.db.execute(
            "INSERT INTO account_tokens (token_hash, account_id, purpose, expires_at)"
            " VALUES (?, ?, ?, ?)",
            (token_hash, account_id, purpose, expires_at),
        )

    async def take_token(self, token_hash: str, purpose: str, now: float) -> str | None:
        """The account of a live link, which is used up by this call (one use only)."""
        async with self.db.transaction():
            row = await self.db.fetch_one(
                "SELECT account_id FROM account_tokens WHERE token_hash = ? AND purpose = ?"
                " AND expires_at > ?",
                (token_hash, purpose, now),
            )
            await self.db.execute(
                "DELETE FROM account_tokens WHERE token_hash = ? OR expires_at <= ?",
                (token_hash, now),
            )
        return str(row[0]) if row else None

    async def token_account(self, token_hash: str, purpose: str, now: float) -> str | None:
        """The account of a live link, which stays as it is."""
        row = await self.db.fetch_one(
            "SELECT account_id FROM account_tokens WHERE token_hash = ? AND purpose = ?"
            " AND expires_at > ?",
            (token_hash, purpose, now),
        )
        return str(row[0]) if row else None

    async def token_live(self, token_hash: str, purpose: str, now: float) -> bool:
        row = await self.db.fetch_one(
            "SELECT 1 FROM account_tokens WHERE token_hash = ? AND purpose = ? AND expires_at > ?",
            (token_hash, purpose, now),
        )
        return row is not None

    async def drop_tokens(self, account_id: str, purpose: str) -> None:
        await self.db.execute(
            "DELETE FROM account_tokens WHERE account_id = ? AND purpose = ?", (account_id, purpose)
        )

    # -- the audit log
    async def audit(self, entry: AuditEntry) -> None:
        await self.db.execute(
            "INSERT INTO audit_log (" + ", ".join(AuditEntry.__dataclass_fields__) + ")"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (entry.id, entry.at, entry.actor, entry.account_id, entry.key_id, entry.action,
             entry.from_value, entry.to_value, entry.client),
        )  # fmt: skip

    async def key_history(self, account_id: str) -> list[AuditEntry]:
        """Every key entry of one account, oldest first (what its billing is computed from)."""
        rows = await self.db.fetch_all(
            _AUDIT + " WHERE account_id = ? AND action LIKE 'key.%' ORDER BY at, id", (account_id,)
        )
        return [AuditEntry(*row) for row in rows]

    async def audit_of(self, account_id: str | None, limit: int = 50) -> list[AuditEntry]:
        """The newest entries, of one account or (None) of all."""
        if account_id is None:
            rows = await self.db.fetch_all(_AUDIT + " ORDER BY at DESC, id DESC LIMIT ?", (limit,))
        else:
            rows = await self.db.fetch_all(
                _AUDIT + " WHERE account_id = ? ORDER BY at DESC, id DESC LIMIT ?",
                (account_id, limit),
            )
        return [AuditEntry(*row) for row in rows]

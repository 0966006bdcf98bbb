"""Every SQL statement about keys and plans."""

from __future__ import annotations

from propdata.accounts.schemas import ApiKey
from propdata.kit.db import Database

_IN_FORCE = {
    # A key's own (custom) limit when it has one, else its plan's. `daily` cannot COALESCE:
    # a plan's null daily means unlimited, and so does an Enterprise key's own null.
    "per_minute": "COALESCE(k.per_minute, p.per_minute)",
    "daily": "CASE WHEN k.daily IS NOT NULL THEN k.daily ELSE p.daily END",
    "default_page_size": "COALESCE(k.default_page_size, p.default_page_size)",
    "max_page_size": "COALESCE(k.max_page_size, p.max_page_size)",
}
_SELECT = (
    "SELECT "
    + ", ".join(_IN_FORCE.get(name, f"k.{name}") for name in ApiKey.__dataclass_fields__)
    + " FROM api_keys k JOIN plans p ON p.name = k.plan"
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

    async def all(self) -> list[ApiKey]:
        return [
            ApiKey(*row)
            for row in await self.db.fetch_all(_SELECT + " ORDER BY k.created_at, k.id")
        ]

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
    ) -> None:
        await self.db.execute(
            "INSERT INTO api_keys (id, name, prefix, key_hash, plan, per_minute, daily,"
            " default_page_size, max_page_size, status, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', ?)",
            (key_id, name, prefix, key_hash, plan, per_minute, daily, default_page_size,
             max_page_size, created_at),
        )  # fmt: skip

    async def set_plan(self, key_id: str, plan: str) -> None:
        """Change the plan; custom limits belong to the old plan's contract and are cleared."""
        await self.db.execute(
            "UPDATE api_keys SET plan = ?, per_minute = NULL, daily = NULL,"
            " default_page_size = NULL, max_page_size = NULL WHERE id = ?",
            (plan, key_id),
        )

    async def set_limits(
        self,
        key_id: str,
        per_minute: int | None,
        daily: int | None,
        default_page_size: int | None,
        max_page_size: int | None,
    ) -> None:
        await self.db.execute(
            "UPDATE api_keys SET per_minute = COALESCE(?, per_minute), daily = COALESCE(?, daily),"
            " default_page_size = COALESCE(?, default_page_size),"
            " max_page_size = COALESCE(?, max_page_size) WHERE id = ?",
            (per_minute, daily, default_page_size, max_page_size, key_id),
        )

    async def revoke(self, key_id: str, at: str) -> None:
        await self.db.execute(
            "UPDATE api_keys SET status = 'revoked', revoked_at = ? WHERE id = ? AND status <> 'revoked'",
            (at, key_id),
        )

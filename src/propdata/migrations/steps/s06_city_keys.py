"""Step 6 (data store): city keys read Saint/Fort/Mount as St/Ft/Mt and drop all punctuation.

A fill, not a layout: every stored city key is recomputed with `kit.addresses.city_key`, the
function the loader keys new records with, so keys stored before and after agree.
"""

from __future__ import annotations

from propdata.kit.addresses import city_key
from propdata.kit.db import Database
from propdata.kit.steps import Step
from propdata.migrations.steps.base import DATA


async def _apply(db: Database) -> None:
    """One UPDATE per city whose key changes, and a new data version when any does, so
    cached answers and search snapshots follow."""
    changed = False
    for table in ("properties", "market_snapshots"):
        held = await db.fetch_all(f"SELECT DISTINCT city, city_key FROM {table}")
        for city, key in held:
            fresh = city_key(city)
            if fresh != key:
                await db.execute(
                    f"UPDATE {table} SET city_key = ? WHERE city = ? AND city_key = ?",
                    (fresh, city, key),
                )
                changed = True
    if changed:
        await db.execute(
            "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
            " WHERE key = 'data_version'"
        )


STORE = DATA
STEP = Step(6, "city keys read Saint/Fort/Mount as St/Ft/Mt and drop all punctuation", _apply)

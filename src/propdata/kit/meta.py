"""The `meta` table's keys, each named once with its type: a store's small state (its
identity, the data version, how far a reader got, secrets, versions of what is cached).

Both stores have a `meta` table of text keys and text values; every key either store holds
is one `Key` here, read and written through `get` / `put` with its type, never as a string
spelled in a statement elsewhere.

    version = await get(db, DATA_VERSION)     # int, 0 when the row is absent
    await put(db, EVENTS_WATCHING, True)
    await bump(db, KEYS_VERSION)              # + 1, in the caller's transaction
    await advance(db, AGED_AS_OF, "2026-11-28")  # True for the one caller that moved it
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from propdata.kit.db import Database
from propdata.kit.wakeup import notify_in

T = TypeVar("T", int, str, bool)


@dataclass(frozen=True, slots=True)
class Key(Generic[T]):
    """One row of `meta`: its key and the type and value it has while absent."""

    name: str
    kind: type[T]
    absent: T
    topic: str | None = None
    """The wake-up topic notified with each `bump`, in its transaction (`wakeup.notify_in`)."""


# The data store's
STORE_ID = Key("store_id", str, "")
"""The store's identity (a new store, a new identity: caches and cursors of another miss)."""
DATA_TOPIC = "data"
"""The wake-up topic of the data version's moves."""
DATA_VERSION = Key("data_version", int, 0, topic=DATA_TOPIC)
"""Moves with every commit that changes the records. On PostgreSQL each move is also a
"data" notice, delivered with its commit: what lets a server keep the version it read
(`PropertyRepository.cache_namespace`)."""
EVENTS_WATCHING = Key("events_watching", bool, False)
"""Whether the triggers write change images (a saved search exists)."""
AGED_AS_OF = Key("aged_as_of", str, "")
LAST_LOAD = Key("last_load", str, "")
REBUILD_PENDING = Key("rebuild_pending", str, "")
FEED_PRUNED_AS_OF = Key("feed_pruned_as_of", str, "")
CURSOR_SECRET = Key("cursor_secret", str, "")
# The accounts store's
PORTAL_SECRET = Key("portal_secret", str, "")
KEYS_TOPIC = "keys"
"""The wake-up topic of the keys version's moves."""
KEYS_VERSION = Key("keys_version", int, 0, topic=KEYS_TOPIC)
"""Moves with every write to keys and accounts: what a process's verified keys depend on
(`accounts.keys.KeyService`); writes to the event log or the webhooks leave it. On
PostgreSQL each move is also a "keys" notice, delivered with its commit."""
EVENTS_STORE = Key("events_images_store", str, "")
"""The data store whose change images the producer reads."""
EVENTS_IMAGES_SEQ = Key("events_images_seq", int, 0)
"""How far the producer read the properties' change images."""
EVENTS_MARKETS_SEQ = Key("events_markets_seq", int, 0)
"""How far the producer read the ZIP snapshots' change images."""
EVENTS_PRUNED = Key("events_pruned_on", str, "")
"""The day the event log was last pruned."""


def _decoded(key: Key[T], text: str) -> T:
    if key.kind is bool:
        return key.kind(text == "1")
    return key.kind(text)


def _encoded(key: Key[T], value: T) -> str:
    if key.kind is bool:
        return "1" if value else "0"
    return str(value)


async def get(db: Database, key: Key[T]) -> T:
    """The key's value (its `absent` value when the row is missing)."""
    row = await db.fetch_one("SELECT value FROM meta WHERE key = ?", (key.name,))
    return key.absent if row is None or row[0] is None else _decoded(key, str(row[0]))


async def put(db: Database, key: Key[T], value: T) -> None:
    """Set the key (inside the caller's transaction, or its own statement)."""
    await db.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key.name, _encoded(key, value)),
    )


async def bump(db: Database, key: Key[int]) -> None:
    """Add 1 to an int key (1 when absent), in one statement, and notify its topic."""
    await db.execute(
        "INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT (key) DO UPDATE"
        " SET value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)",
        (key.name,),
    )
    if key.topic is not None:
        await notify_in(db, key.topic)


async def advance(db: Database, key: Key[str], value: str) -> bool:
    """Move a text key forward to `value` (inside a write transaction): True for the one
    caller that moved it, False when it already stands there or past it (a daily turn)."""
    if await db.execute(
        "UPDATE meta SET value = ? WHERE key = ? AND value < ?", (value, key.name, value)
    ):
        return True
    return bool(  # the first time: one process inserts, a concurrent one finds it there
        await db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
            (key.name, value),
        )
    )


def selected(key: Key[T]) -> str:
    """A key's value as an SQL expression (text), for a statement that reads it with more:

    f"SELECT {selected(STORE_ID)} || '.' || {selected(DATA_VERSION)}"
    """
    return f"(SELECT value FROM meta WHERE key = '{key.name}')"

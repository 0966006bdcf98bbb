"""What a store holds, read from the store itself: its tables, their columns, and the whole
layout as SQL text.

The steps (`migrations.steps`) are the only writers of the layout, and this module the only
reader: `data copy` walks the columns a store has, the tests compare a store upgraded from
every step with a fresh one, and `migrations/schema.sql` is `dump` of fresh stores (written by
`make schema`, compared by `make check`).

    python -m propdata.migrations.layout --check   # exit 1 when schema.sql is not the layout
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import uuid
from pathlib import Path

from propdata.kit.db import Database, connect

SCHEMA_SQL = Path(__file__).with_name("schema.sql")

Columns = tuple[tuple[str, ...], tuple[str, ...]]
"""A table's primary key columns and its other columns, in their order."""

_PG_COLUMNS = """
    SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
           pg_get_expr(d.adbin, d.adrelid), a.attidentity::text,
           CASE WHEN a.attcollation <> t.typcollation THEN co.collname END
    FROM pg_attribute a
    JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_type t ON t.oid = a.atttypid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    LEFT JOIN pg_collation co ON co.oid = a.attcollation
    WHERE n.nspname = current_schema() AND c.relkind = 'r' AND a.attnum > 0
      AND NOT a.attisdropped
    ORDER BY c.relname, a.attnum"""
_PG_CONSTRAINTS = """
    SELECT c.relname, k.conname, pg_get_constraintdef(k.oid)
    FROM pg_constraint k
    JOIN pg_class c ON c.oid = k.conrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema()
    ORDER BY c.relname, k.contype, k.conname"""
_PG_INDEXES = """
    SELECT i.indexname, i.indexdef FROM pg_indexes i
    WHERE i.schemaname = current_schema() AND NOT EXISTS (
        SELECT 1 FROM pg_constraint k JOIN pg_namespace n ON n.oid = k.connamespace
        WHERE n.nspname = current_schema() AND k.conname = i.indexname)
    ORDER BY i.indexname"""
_PG_FUNCTIONS = """
    SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc p
    JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = current_schema() ORDER BY p.proname"""
_PG_TRIGGERS = """
    SELECT t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t
    JOIN pg_class c ON c.oid = t.tgrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() AND NOT t.tgisinternal
    ORDER BY c.relname, t.tgname"""


async def tables(db: Database) -> list[str]:
    """The store's tables, by name."""
    if db.dialect == "postgresql":
        rows = await db.fetch_all(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename"
        )
    else:
        rows = await db.fetch_all(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            " ORDER BY name"
        )
    return [str(row[0]) for row in rows]


async def columns(db: Database, table: str) -> Columns:
    """A table's primary key columns and its other columns, in the table's order."""
    if db.dialect == "postgresql":
        rows = await db.fetch_all(
            "SELECT a.attname, COALESCE(array_position(k.conkey, a.attnum), 0)"
            " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " LEFT JOIN pg_constraint k ON k.conrelid = c.oid AND k.contype = 'p'"
            " WHERE n.nspname = current_schema() AND c.relname = ? AND a.attnum > 0"
            " AND NOT a.attisdropped ORDER BY a.attnum",
            (table,),
        )
    else:  # PRAGMA table_info: (cid, name, type, notnull, default, pk position or 0)
        rows = [(row[1], row[5]) for row in await db.fetch_all(f"PRAGMA table_info({table})")]
    if not rows:
        raise ValueError(f"the store has no table {table}")
    key = tuple(str(name) for name, place in sorted(rows, key=lambda r: r[1]) if place)
    return key, tuple(str(name) for name, place in rows if not place)


async def dump(db: Database) -> str:
    """The store's whole layout (tables, constraints, indexes, triggers, functions) as SQL
    text in a fixed order; equal stores give equal text, whatever schema PostgreSQL's
    search path names."""
    if db.dialect != "postgresql":
        rows = await db.fetch_all(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
            " ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 ELSE 2 END, name"
        )
        return "".join(f"{row[0]};\n\n" for row in rows)
    schema = str((await db.fetch_one("SELECT current_schema()") or ("",))[0])
    parts: list[str] = []
    columns_of: dict[str, list[str]] = {}
    for table, name, kind, notnull, default, identity, collation in await db.fetch_all(_PG_COLUMNS):
        column = f"{name} {kind}"
        if collation:
            column += f' COLLATE "{collation}"'
        if identity in ("a", "d"):  # pg_attribute.attidentity: always, by default, or none
            column += " GENERATED " + ("ALWAYS" if identity == "a" else "BY DEFAULT")
            column += " AS IDENTITY"
        if notnull:
            column += " NOT NULL"
        if default is not None:
            column += f" DEFAULT {default}"
        columns_of.setdefault(str(table), []).append(column)
    constraints: dict[str, list[str]] = {}
    for table, name, definition in await db.fetch_all(_PG_CONSTRAINTS):
        constraints.setdefault(str(table), []).append(f"CONSTRAINT {name} {definition}")
    for table, lines in columns_of.items():
        body = ",\n    ".join(lines + constraints.get(table, []))
        parts.append(f"CREATE TABLE {table} (\n    {body}\n);\n")
    for query in (_PG_INDEXES, _PG_FUNCTIONS, _PG_TRIGGERS):
        parts += [f"{str(row[1]).strip()};\n" for row in await db.fetch_all(query)]
    return "\n".join(parts).replace(f"{schema}.", "")


SQLITE_DATA = "SQLite, the data store"
SQLITE_ACCOUNTS = "SQLite, the accounts store"
POSTGRESQL = "PostgreSQL, both stores in one database"


async def fresh_layouts(postgres_url: str | None) -> dict[str, str]:
    """The layouts of fresh stores migrated through every step: SQLite's data and accounts
    files, and (given its URL) one PostgreSQL database holding both, in a schema made and
    dropped here."""
    from propdata.config import accounts_url
    from propdata.migrations.schema import migrate, migrate_accounts

    layouts: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as folder:
        data_path = str(Path(folder) / "propdata.db")
        for name, url, migrator in (
            (SQLITE_DATA, data_path, migrate),
            (SQLITE_ACCOUNTS, accounts_url(data_path), migrate_accounts),
        ):
            db = await connect(url)
            try:
                await migrator(db)
                layouts[name] = await dump(db)
            finally:
                await db.close()
    if postgres_url is None:
        return layouts
    schema = "layout_" + uuid.uuid4().hex[:12]
    admin = await connect(postgres_url)
    await admin.execute(f"CREATE SCHEMA {schema}")
    try:
        separator = "&" if "?" in postgres_url else "?"
        db = await connect(f"{postgres_url}{separator}search_path={schema}")
        try:
            await migrate(db)
            await migrate_accounts(db)
            layouts[POSTGRESQL] = await dump(db)
        finally:
            await db.close()
    finally:
        await admin.execute(f"DROP SCHEMA {schema} CASCADE")
        await admin.close()
    return layouts


def render(layouts: dict[str, str]) -> str:
    """schema.sql's text: a header, then each store's layout under its name."""
    head = (
        "-- The layout of a fresh store after every schema step (migrations/steps/).\n"
        "-- Generated by `make schema`; `make check` fails when it differs from a fresh\n"
        "-- migrate of both stores. Read it to see the present; change it with a new step.\n"
    )
    return head + "".join(f"\n-- ==== {name} ====\n\n{text}" for name, text in layouts.items())


def sections(text: str) -> dict[str, str]:
    """schema.sql read back: each store's layout by its name (`render`'s inverse)."""
    parts = text.split("\n-- ==== ")[1:]
    return dict(part.split(" ====\n\n", 1) for part in parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write or check migrations/schema.sql.")
    parser.add_argument("--check", action="store_true", help="exit 1 when it differs")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args(argv)
    text = render(asyncio.run(fresh_layouts(args.postgres)))
    if not args.check:
        SCHEMA_SQL.write_text(text)
        return 0
    if SCHEMA_SQL.exists() and SCHEMA_SQL.read_text() == text:
        return 0
    print(f"{SCHEMA_SQL} is not the layout the steps make: run `make schema`", file=sys.stderr)
    return 1


if __name__ == "__main__":
    raise SystemExit(main())

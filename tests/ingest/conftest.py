"""What the ingest tests share: `db`, an empty, migrated SQLite store (`fresh_db`)."""

from __future__ import annotations

import pytest

from propdata.kit.db import SQLiteDatabase


@pytest.fixture
def db(fresh_db: SQLiteDatabase) -> SQLiteDatabase:
    """`fresh_db` under the name most tests here give it (a module may define its own)."""
    return fresh_db

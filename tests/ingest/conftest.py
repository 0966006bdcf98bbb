"""What the ingest tests share: an empty, migrated SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from propdata.kit.db import SQLiteDatabase
from propdata.migrations.schema import migrate


@pytest.fixture
async def fresh_db(tmp_path: Path) -> AsyncIterator[SQLiteDatabase]:
    db = SQLiteDatabase(str(tmp_path / "t.db"))
    await migrate(db)
    yield db
    await db.close()


@pytest.fixture
def db(fresh_db: SQLiteDatabase) -> SQLiteDatabase:
    """The same store under the name most tests give it (a module may define its own)."""
    return fresh_db

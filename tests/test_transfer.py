"""`propdata data copy`: an embedded store moves to PostgreSQL with nothing lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from propdata.accounts.service import CustomLimits, KeyService
from propdata.kit.db import connect
from propdata.migrations.schema import migrate, table_columns
from propdata.migrations.transfer import TransferError, copy_store
from propdata.valuation.repository import ValuationRepository
from tests.conftest import build_store, drop_store, new_store


async def test_copy_to_postgresql_is_exact_and_verified(tmp_path: Path) -> None:
    source_store = await new_store("embedded", tmp_path)
    await build_store(source_store)
    target_store = await new_store("scaleout", tmp_path)
    source, target = await connect(source_store.url), await connect(target_store.url)
    try:
        _, secret = await KeyService(source).create("pro", "moving", CustomLimits())
        comparable = '[["t-001", "2025-01-02", 250000, 0.4, 0.3]]'  # as a rebuild stores them
        async with source.transaction():
            await ValuationRepository(source).write_comparables([("t-000", comparable)])
        await migrate(target)
        reports = await copy_store(source, target)
        by_table = {r.table: r for r in reports}
        assert all(r.equal for r in reports), reports
        assert set(by_table) == set(table_columns()), "every table of the schema is copied"
        assert by_table["valuation_comparables"].target_rows > 0
        assert by_table["properties"].target_rows == 42
        assert by_table["price_events"].target_rows > 42
        assert by_table["market_history"].target_rows > 0
        # the key works against the copy: same hash, same plan
        moved = await KeyService(target).authenticate(f"Bearer {secret}")
        assert moved.plan == "pro" and moved.name == "moving"
        with pytest.raises(TransferError, match="already holds"):
            await copy_store(source, target)
    finally:
        await source.close()
        await target.close()
        await drop_store(target_store)

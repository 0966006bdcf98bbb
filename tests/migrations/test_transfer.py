"""`propdata data copy`: an embedded store moves to PostgreSQL with nothing lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from propdata.accounts.keys import CustomLimits, KeyService, keys_of
from propdata.app import open_stores
from propdata.migrations.schema import table_columns
from propdata.migrations.transfer import TransferError, account_tables, copy_stores
from propdata.valuation.repository import ValuationRepository
from tests.conftest import build_store, drop_store, new_store, settings_for


async def test_copy_to_postgresql_is_exact_and_verified(tmp_path: Path) -> None:
    source_store = await new_store("embedded", tmp_path)
    await build_store(source_store)
    target_store = await new_store("scaleout", tmp_path)
    async with keys_of(source_store.url) as keys:  # the embedded accounts file
        _, secret = await keys.create("pro", "moving", CustomLimits())
    source = await open_stores(settings_for(source_store))
    target = await open_stores(settings_for(target_store))
    assert source[0] is not source[1] and target[0] is target[1]
    try:
        comparable = '[["t-001", "2025-01-02", 250000, 0.4, 0.3]]'  # as a rebuild stores them
        async with source[0].transaction():
            await ValuationRepository(source[0]).write_comparables([("t-000", comparable)])
        reports = await copy_stores(source, target)
        by_table = {r.table: r for r in reports}
        assert all(r.equal for r in reports), reports
        every = set(table_columns()) | set(account_tables())
        assert set(by_table) == every, "every table of the schema is copied"
        assert by_table["valuation_comparables"].target_rows > 0
        assert by_table["properties"].target_rows == 42
        assert by_table["property_histories"].target_rows == 42
        assert by_table["market_history"].target_rows > 0
        # the key works against the copy: same hash, same plan
        moved = await KeyService(target[1]).authenticate(f"Bearer {secret}")
        assert moved.plan == "pro" and moved.name == "moving"
        with pytest.raises(TransferError, match="already holds"):
            await copy_stores(source, target)
    finally:
        for db in (*source, target[0]):
            await db.close()
        await drop_store(target_store)

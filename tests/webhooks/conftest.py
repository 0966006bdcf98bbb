"""What the webhook tests share: a dispatcher's `rig` over an accounts store."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from propdata.kit.db import Database
from propdata.migrations.schema import migrate_accounts
from tests.webhooks.helpers import Rig


@pytest.fixture
async def rig(empty_db: Database) -> AsyncIterator[Rig]:
    await migrate_accounts(empty_db)
    made = Rig(empty_db)
    yield made
    await made.close()

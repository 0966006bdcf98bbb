"""Step 15 (accounts store): each plan's saved searches and webhook endpoints, and an Enterprise key's own.

Plans hold their saved searches and webhook endpoints beside their events cap (seeded at
every migrate), so all of an owner's limits (`plans.OWNER_LIMITS`) are read alike; an
operator may set an Enterprise key's own.

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps.base import ACCOUNTS, statements

SQLITE = (
    """ALTER TABLE plans ADD COLUMN saved_searches INTEGER""",
    """ALTER TABLE plans ADD COLUMN webhook_endpoints INTEGER""",
    """ALTER TABLE api_keys ADD COLUMN saved_searches INTEGER""",
    """ALTER TABLE api_keys ADD COLUMN webhook_endpoints INTEGER""",
)

POSTGRESQL = SQLITE

STORE = ACCOUNTS
STEP = Step(
    15,
    "each plan's saved searches and webhook endpoints, and an Enterprise key's own",
    statements(SQLITE, POSTGRESQL),
)

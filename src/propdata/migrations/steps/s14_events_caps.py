"""Step 14 (accounts store): an events cap for each plan, and an Enterprise key's own.

Plans hold their events cap beside their request limits (seeded at every migrate), so a
key's cap in force is read like its other limits; an operator may set a key's own.

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps.base import ACCOUNTS, statements

SQLITE = (
    """ALTER TABLE plans ADD COLUMN events_per_day INTEGER""",
    """ALTER TABLE api_keys ADD COLUMN events_per_day INTEGER""",
)

POSTGRESQL = SQLITE

STORE = ACCOUNTS
STEP = Step(
    14, "an events cap for each plan, and an Enterprise key's own", statements(SQLITE, POSTGRESQL)
)

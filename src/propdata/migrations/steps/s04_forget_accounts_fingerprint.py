"""Step 4 (accounts store): forget the schema fingerprint and the keys' move.

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps.base import ACCOUNTS, statements

SQLITE = ("""DELETE FROM meta WHERE key IN ('schema:accounts', 'keys_moved')""",)

POSTGRESQL = SQLITE

STORE = ACCOUNTS
STEP = Step(4, "forget the schema fingerprint and the keys' move", statements(SQLITE, POSTGRESQL))

"""Step 3 (data store): forget the schema fingerprint.

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps.base import DATA, statements

SQLITE = ("""DELETE FROM meta WHERE key IN ('schema:data')""",)

POSTGRESQL = SQLITE

STORE = DATA
STEP = Step(3, "forget the schema fingerprint", statements(SQLITE, POSTGRESQL))

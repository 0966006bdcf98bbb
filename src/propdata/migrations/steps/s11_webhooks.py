"""Step 11 (accounts store): webhook endpoints and deliveries.

An endpoint's `cursor_seq` is the last event of its owner already fanned out to it;
`event_types` and `search_ids` are JSON lists (NULL: all); the secret is kept as issued
(deliveries are signed with it), and during a rotation's grace the previous one beside it
until `old_secret_until` (unix seconds). `failing_since`: the first failed attempt since the
last success. A delivery is `pending` until it succeeds or fails for good; `claimed_until` is
the lease of the dispatcher that is attempting it (a crashed one's lease runs out and the
delivery is attempted again).

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps.base import ACCOUNTS, dialects, statements

SQLITE, POSTGRESQL = dialects(
    """CREATE TABLE IF NOT EXISTS webhook_endpoints (
        id {key},
        owner TEXT NOT NULL,
        url TEXT NOT NULL,
        event_types TEXT,
        search_ids TEXT,
        description TEXT,
        status TEXT NOT NULL,
        disabled_reason TEXT,
        secret TEXT NOT NULL,
        old_secret TEXT,
        old_secret_until {real},
        cursor_seq {int} NOT NULL,
        created_at TEXT NOT NULL,
        failing_since {real}
    )""",
    """CREATE TABLE IF NOT EXISTS webhook_deliveries (
        id {serial},
        endpoint_id TEXT NOT NULL,
        event_seq {int} NOT NULL,
        event_id TEXT NOT NULL,
        type TEXT NOT NULL,
        state TEXT NOT NULL,
        attempt {int} NOT NULL,
        next_attempt_at {real},
        claimed_until {real},
        response_status {int},
        error TEXT,
        duration_ms {int},
        attempted_at TEXT,
        made_at {real} NOT NULL
    )""",
    """CREATE INDEX IF NOT EXISTS ix_webhook_endpoints_owner ON webhook_endpoints (owner, created_at)""",
    """CREATE INDEX IF NOT EXISTS ix_webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending'""",
    """CREATE INDEX IF NOT EXISTS ix_webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id)""",
)

STORE = ACCOUNTS
STEP = Step(11, "webhook endpoints and deliveries", statements(SQLITE, POSTGRESQL))

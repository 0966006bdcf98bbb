"""Step 8 (data store): stored valuation models and what they learnt from.

The fitted valuation models (valuation.stored): one row per kind (the value model on sales,
the rent model on rentals), written by every full rebuild, so a load values its new records
without refitting; `changed` counts the records loads changed since the fit (the refit rule
of ingest.pipeline). `valuation_training`: what each model learnt from, one row per kind and
market (ZIP code), so a load reads only the markets of the records it values.

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps.base import DATA, dialects, statements

SQLITE, POSTGRESQL = dialects(
    """CREATE TABLE IF NOT EXISTS valuation_models (
        kind TEXT PRIMARY KEY,
        version {int} NOT NULL,
        as_of TEXT NOT NULL,
        properties {int} NOT NULL,
        learnt {int} NOT NULL,
        changed {int} NOT NULL,
        model {blob} NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS valuation_training (
        kind TEXT NOT NULL,
        zip_code TEXT NOT NULL,
        ids TEXT NOT NULL,
        sales {blob} NOT NULL,
        PRIMARY KEY (kind, zip_code)
    )""",
)

STORE = DATA
STEP = Step(8, "stored valuation models and what they learnt from", statements(SQLITE, POSTGRESQL))

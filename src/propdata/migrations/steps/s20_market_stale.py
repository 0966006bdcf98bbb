"""Step 20 (data store): the ZIP codes whose market statistics a load left to recompute.

A replication pass commits its pages' records, estimates and events at once and recomputes
the statistics of the ZIP codes they touched together, every so often and at its end
(`ingest.pipeline.finish`'s `defer_markets`). Each page names its ZIP codes here in its own
transaction, and the recompute removes them in its own: a pass killed in between leaves
them named, and the next load or pass recomputes them.

Frozen: the statements this step ran the day it landed. Never edit them; a change is a new
step (docs/architecture.md, "Schema steps").
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps.base import DATA, statements

SQLITE = ("CREATE TABLE market_stale (zip_code TEXT PRIMARY KEY)",)

POSTGRESQL = SQLITE

STORE = DATA
STEP = Step(20, "the ZIP codes whose market statistics a load left to recompute",
            statements(SQLITE, POSTGRESQL))  # fmt: skip

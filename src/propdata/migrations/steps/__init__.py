"""Every schema step of both stores, in the order they were written: one frozen module each.

A new step is a new module `sNN_<what>.py` (copy one of the same store as a model: literal
statements for both dialects, `STORE`, `STEP`), listed at the end of `MODULES`; then
`make schema` writes the layout it makes into `migrations/schema.sql`.
"""

from __future__ import annotations

from propdata.kit.steps import Step
from propdata.migrations.steps import (
    s01_data_tables,
    s02_account_tables,
    s03_forget_data_fingerprint,
    s04_forget_accounts_fingerprint,
    s05_feed_removals,
    s06_city_keys,
    s07_event_log,
    s08_valuation_models,
    s09_change_images,
    s10_saved_searches,
    s11_webhooks,
    s12_zip_places,
    s13_tax_images,
    s14_events_caps,
    s15_owner_counts,
    s16_owner_sequences_and_attempts,
    s17_ingest_counts,
    s18_parcel_and_features,
    s19_replication_sources,
)
from propdata.migrations.steps.base import ACCOUNTS, DATA, Apply

MODULES = (
    s01_data_tables,
    s02_account_tables,
    s03_forget_data_fingerprint,
    s04_forget_accounts_fingerprint,
    s05_feed_removals,
    s06_city_keys,
    s07_event_log,
    s08_valuation_models,
    s09_change_images,
    s10_saved_searches,
    s11_webhooks,
    s12_zip_places,
    s13_tax_images,
    s14_events_caps,
    s15_owner_counts,
    s16_owner_sequences_and_attempts,
    s17_ingest_counts,
    s18_parcel_and_features,
    s19_replication_sources,
)

STEPS: list[tuple[str, Step[Apply]]] = [(module.STORE, module.STEP) for module in MODULES]


def steps_of(store: str) -> list[Step[Apply]]:
    """The steps of one store (DATA or ACCOUNTS), in order."""
    return [step for owner, step in STEPS if owner == store]


__all__ = ["ACCOUNTS", "DATA", "STEPS", "Apply", "steps_of"]

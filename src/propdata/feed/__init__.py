"""The change feed: GET /v1/properties/changes lists every property created or changed, in
the order the store changed them (rows written by triggers: `migrations/steps/s01_data_tables`)."""

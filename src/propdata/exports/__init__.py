"""Bulk exports: a snapshot of one data version as Parquet or CSV files with a manifest
(`propdata data export`, the periodic exporter, GET /v1/exports)."""

"""The dashboard and the alert rules name only metrics the service exposes."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from prometheus_client.parser import text_string_to_metric_families

from propdata.app import HeadAsGet, create_app
from tests.conftest import Store, settings_for

DEPLOY = Path(__file__).parent.parent.parent / "deploy"
TOKEN = "metrics-token-0123456789"
METRIC = re.compile(r"\b(propdata_[a-z_]+|up)\b(?!\s*\()")
"""A metric name in PromQL: ours, and Prometheus's own `up` (not a function call)."""


@pytest.fixture
async def exposed(store: Store, key: str) -> AsyncIterator[set[str]]:
    """Every sample name of a scrape, after one request of each kind."""
    app = HeadAsGet(create_app(settings_for(store, metrics_token=TOKEN)))
    async with AsyncTestClient(app=app) as c:  # type: ignore[arg-type]
        await c.get("/v1/properties/t-000", headers={"Authorization": f"Bearer {key}"})
        text = (await c.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})).text
    yield {s.name for family in text_string_to_metric_families(text) for s in family.samples}


def _names(expressions: list[str]) -> set[str]:
    return {name for expr in expressions for name in METRIC.findall(expr)}


def test_every_dashboard_panel_queries_exposed_metrics(exposed: set[str]) -> None:
    dashboard: dict[str, Any] = json.loads((DEPLOY / "grafana" / "propdata.json").read_text())
    expressions = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    assert expressions and all(expr.strip() for expr in expressions)
    names = _names(expressions)
    assert names - {"up"} <= exposed, names - {"up"} - exposed
    # Every family the service exposes has a panel.
    families = {re.sub(r"_(total|bucket|count|sum|created)$", "", n) for n in exposed}
    assert {f for f in families if f.startswith("propdata_")} <= {
        re.sub(r"_(total|bucket|count|sum|created)$", "", n) for n in names
    }


def test_every_alert_names_exposed_metrics(exposed: set[str]) -> None:
    text = (DEPLOY / "prometheus" / "alerts.yml").read_text()
    expressions = re.findall(r"expr: \|\n((?:\s{10}.*\n)+)|expr: (.*)", text)
    flat = [block or line for block, line in expressions]
    assert len(flat) == text.count("- alert:")
    names = _names(flat)
    assert "propdata_http_requests_total" in names
    assert names - {"up"} <= exposed, names - {"up"} - exposed

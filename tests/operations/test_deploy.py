"""The dashboard and the alert rules name only metrics the service exposes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar.testing import AsyncTestClient
from prometheus_client.parser import text_string_to_metric_families

from propdata.app import HeadAsGet, create_app
from tests.conftest import Store, settings_for
from tests.live import serving_process
from tests.redis_support import free_port

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


def dashboard_names() -> set[str]:
    """The metric names the Grafana dashboard's panels query."""
    dashboard: dict[str, Any] = json.loads((DEPLOY / "grafana" / "propdata.json").read_text())
    expressions = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    assert expressions and all(expr.strip() for expr in expressions)
    return _names(expressions)


def alert_names() -> set[str]:
    """The metric names the alert rules' expressions read."""
    text = (DEPLOY / "prometheus" / "alerts.yml").read_text()
    expressions = re.findall(r"expr: \|\n((?:\s{10}.*\n)+)|expr: (.*)", text)
    flat = [block or line for block, line in expressions]
    assert len(flat) == text.count("- alert:")
    return _names(flat)


PER_SOURCE = {
    "propdata_replication_lag_seconds",
    "propdata_replication_records_total",
    "propdata_replication_requests_total",
}
"""Families with samples per replication source only: a store without sources (the shared
test store) has none; tests/replication/test_replicate.py scrapes them from a store with
one, and checks there that the dashboard's and the alerts' are all exposed."""


def _family(name: str) -> str:
    return re.sub(r"_(total|bucket|count|sum|created)$", "", name)


def test_every_dashboard_panel_queries_exposed_metrics(exposed: set[str]) -> None:
    names = dashboard_names()
    assert names - {"up"} - PER_SOURCE <= exposed, names - {"up"} - PER_SOURCE - exposed
    # Every family the service exposes, and every per-source one, has a panel.
    families = {_family(n) for n in exposed | PER_SOURCE if n.startswith("propdata_")}
    assert families <= {_family(n) for n in names}, families - {_family(n) for n in names}


def test_every_alert_names_exposed_metrics(exposed: set[str]) -> None:
    names = alert_names()
    assert "propdata_http_requests_total" in names
    assert names - {"up"} - PER_SOURCE <= exposed, names - {"up"} - exposed


NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")


def _documented_nginx(upstream: int, listen: int, folder: Path) -> str:
    """docs/deploy.md's nginx block, its upstream this host's server and plain HTTP on
    `listen`, inside the least of an nginx.conf that runs in `folder`."""
    guide = (DEPLOY.parent / "docs" / "deploy.md").read_text()
    (block,) = re.findall(r"```nginx\n(.*?)```", guide, re.S)
    block = re.sub(r"(?m)^\s*server \S+:8000.*\n", "", block, count=2)
    block = re.sub(r"server \S+:8000[^;]*;", f"server 127.0.0.1:{upstream};", block)
    block = block.replace("listen 443 ssl http2;", f"listen 127.0.0.1:{listen};")
    temp = "".join(f"{kind}_temp_path {folder / kind};"
                   for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))  # fmt: skip
    return (f"daemon off; pid {folder / 'nginx.pid'}; error_log {folder / 'error.log'};"
            f" events {{}} http {{ access_log off; {temp}\n{block}\n}}")  # fmt: skip


@pytest.mark.slow
@pytest.mark.skipif(not NGINX and not os.environ.get("CI"), reason="nginx is not installed")
def test_the_documented_nginx_block_refuses_metrics_and_passes_the_rest(
    store: Store, tmp_path: Path
) -> None:
    """The proxy on the same host as the server: /metrics never reaches the service, which
    would see loopback (the service refuses it too: tests/operations/test_metrics.py)."""
    if store.schema is not None:
        pytest.skip("one store is enough: the embedded one")
    assert NGINX, "nginx is not installed"
    listen = free_port()
    with serving_process(store.env()) as (base, _):
        upstream = int(base.rsplit(":", 1)[1])
        conf = tmp_path / "nginx.conf"
        conf.write_text(_documented_nginx(upstream, listen, tmp_path))
        nginx = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(tmp_path), "-e",
                                  str(tmp_path / "error.log")])  # fmt: skip
        try:
            proxy = f"http://127.0.0.1:{listen}"
            for _ in range(200):
                try:
                    health = httpx.get(proxy + "/health", timeout=1)
                    break
                except httpx.TransportError:
                    time.sleep(0.05)
            else:
                raise AssertionError((tmp_path / "error.log").read_text())
            assert health.status_code == 200 and health.json()["status"] == "ok"
            assert httpx.get(proxy + "/v1/properties/t-000").status_code == 401  # the API's
            for path in ("/metrics", "/metrics/", "/metrics?x=1", "//metrics", "/%6Detrics"):
                refused = httpx.get(proxy + path)
                assert refused.status_code == 404, path
                assert "nginx" in refused.text and "requestId" not in refused.text, path
        finally:
            nginx.terminate()
            nginx.wait(10)

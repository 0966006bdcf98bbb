"""A real Prometheus scrapes a real `propdata serve --workers 2`: every worker counts, the
exposition passes promtool, and each request has its one log line."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import KeyMaker, Store
from tests.live import serving_process, until_sync
from tests.redis_support import free_port

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (PROMETHEUS and PROMTOOL) and not os.environ.get("CI"),
        reason="Debian's prometheus package is not installed (.ci/run installs it)",
    ),
]


@pytest.fixture
def served(store: Store, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`propdata serve --workers 2` over the test store: its base URL and its stderr file."""
    if store.schema is not None:
        pytest.skip("one store is enough: the embedded one")
    log = tmp_path / "server.err"
    env = {"PROPDATA_DATABASE_URL": store.url, "PROPDATA_AS_OF": "2026-11-21"}
    with log.open("wb") as err:
        serving = serving_process(env, workers=2, stderr=err, unset=("PROMETHEUS_MULTIPROC_DIR",))
        with serving as (base, _):
            yield base, log


def _total(text: str) -> float:
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        if family.name == "propdata_http_requests"
        for s in family.samples
        if s.labels["route"] == "/v1/properties/{id}"
    )


@pytest.fixture
async def key(make_key: KeyMaker) -> str:
    return await make_key("enterprise", per_minute=1_000_000)


def test_prometheus_scrapes_every_worker(
    served: tuple[str, Path], key: str, tmp_path: Path
) -> None:
    base, log = served
    auth = {"Authorization": f"Bearer {key}"}
    sent: list[str] = []
    for i in range(40):
        # A connection each: the two workers race to accept them, so both answer some.
        answer = httpx.get(f"{base}/v1/properties/t-{i % 20:03d}", headers=auth)
        assert answer.status_code == 200
        sent.append(answer.headers["x-request-id"])
    # Both workers' counts, added up (each adds its own within a second).

    def added_up() -> httpx.Response | None:
        exposition = httpx.get(base + "/metrics")
        assert exposition.status_code == 200
        sent.append(exposition.headers["x-request-id"])
        return exposition if _total(exposition.text) == 40 else None

    exposition = until_sync(added_up, "both workers' 40 requests counted")
    checked = subprocess.run([PROMTOOL or "promtool", "check", "metrics"],
                             input=exposition.text, capture_output=True, text=True)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr

    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        f"  - job_name: propdata\n    static_configs: [{{targets: ['{base[7:]}']}}]\n"
    )
    prometheus = subprocess.Popen(
        [PROMETHEUS or "prometheus", f"--config.file={config}",
         f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        query = "sum(rate(propdata_http_requests_total[1m])) > 0"
        result: list[object] = []
        deadline = time.monotonic() + 90
        while not result and time.monotonic() < deadline:
            answer = httpx.get(f"{base}/v1/properties/t-001", headers=auth)
            sent.append(answer.headers["x-request-id"])
            time.sleep(0.5)
            try:
                found = httpx.get(f"http://127.0.0.1:{port}/api/v1/query",
                                  params={"query": query}).json()  # fmt: skip
            except (httpx.TransportError, ValueError):
                continue
            result = found.get("data", {}).get("result", [])
        assert result, f"Prometheus found no rate for {query}"
    finally:
        prometheus.terminate()
        prometheus.wait(10)

    # One line per request: each of ours appears exactly once in the server's log.
    until_sync(lambda: all(rid in log.read_text() for rid in sent), "every request logged")
    ids = re.findall(r"request_id=(req_[0-9a-f]+)", log.read_text())
    assert all(ids.count(rid) == 1 for rid in sent), "a request without exactly one line"
    assert key not in log.read_text()

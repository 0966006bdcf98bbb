"""The request tally adds what `observe` would, the metrics folder is private to a server,
and the service's own messages follow PROPDATA_LOG_FORMAT."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

from prometheus_client import CollectorRegistry, Histogram

from propdata.kit import multiproc
from propdata.kit.logs import JsonFormatter
from propdata.kit.metrics import DURATION_BUCKETS, HTTP_DURATION, HTTP_REQUESTS, RequestTally


def _samples(histogram: Histogram, route: str) -> dict[str, float]:
    """The route's samples, by name and bucket, the family's name cut off."""
    (family,) = histogram.collect()
    return {
        f"{s.name.removeprefix(family.name)}{s.labels.get('le', '')}": s.value
        for s in family.samples
        if s.labels.get("route") == route and not s.name.endswith("_created")
    }


def test_the_tally_adds_what_observe_would() -> None:
    seconds = [0.0004, 0.001, 0.0011, 0.003, 0.2, 0.25, 0.26, 7.0, 10.0, 12.5, 99.0]
    route = "/tally-test/{id}"
    expected = Histogram("expected", "", ["route"], buckets=DURATION_BUCKETS,
                         registry=CollectorRegistry())  # fmt: skip
    for value in seconds:
        expected.labels(route).observe(value)
    tally = RequestTally()
    for value in seconds:
        tally.add(route, "GET", 200, value)  # no running loop: added at once
    assert _samples(HTTP_DURATION, route) == _samples(expected, route)
    assert _samples(expected, route)["_count"] == 11
    (family,) = HTTP_REQUESTS.collect()
    assert [s.value for s in family.samples
            if s.labels.get("route") == route and s.name.endswith("_total")] == [11]  # fmt: skip


def test_each_server_counts_in_a_folder_of_its_own() -> None:
    before = os.environ.get(multiproc.FOLDER_ENV)
    with multiproc.metrics_folder():
        first = os.environ[multiproc.FOLDER_ENV]
        assert os.path.isdir(first) and not os.listdir(first)
    with multiproc.metrics_folder():
        assert os.environ[multiproc.FOLDER_ENV] != first
    assert not os.path.exists(first)
    assert os.environ.get(multiproc.FOLDER_ENV) == before


def test_a_dead_workers_live_gauges_go() -> None:
    with multiproc.metrics_folder():
        folder = os.environ[multiproc.FOLDER_ENV]
        # A worker that set a live gauge and exited (its pid is then free).
        code = "from propdata.kit.metrics import WEBHOOK_BACKLOG; WEBHOOK_BACKLOG.set(7)"
        subprocess.run([sys.executable, "-c", code], check=True)
        assert any(name.startswith("gauge_livemostrecent_") for name in os.listdir(folder))
        multiproc.forget_dead_workers()
        names = os.listdir(folder)
        assert not any(name.startswith("gauge_live") for name in names)
        assert any(name.startswith("counter_") for name in names)  # counts stay


def test_messages_as_json_lines() -> None:
    record = logging.LogRecord("propdata", logging.ERROR, __file__, 1, "store %s: %s",
                               ("unavailable", "refused"), None)  # fmt: skip
    line = json.loads(JsonFormatter().format(record))
    assert line["level"] == "ERROR" and line["message"] == "store unavailable: refused"
    assert line["logger"] == "propdata" and line["time"].endswith("Z")

"""The service's Prometheus metric families and their exposition, for every worker of a host.

Counters and histograms of this host's work are counted where the work happens
(`EVENTS.labels(type).inc()`); values that belong to the store or to a running service (a
store answering, the data version, the records every load read whichever process loaded,
the search index's age) are read when `/metrics` is scraped and handed to `exposition` as
`Sample`s, so a scrape never shows a stale copy of them.

Under `propdata serve`, `PROMETHEUS_MULTIPROC_DIR` names a folder made for that server
(`kit/multiproc.py`) before this module is first imported: each worker then writes its
counts to files there, and a scrape, whichever worker answers it, adds up every worker's
(prometheus_client's multiprocess mode). Without it (a single process: the tests' apps),
the counts live in this process's default registry.
"""

from __future__ import annotations

import asyncio
import bisect
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, values
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from propdata.kit.multiproc import FOLDER_ENV

HTTP_REQUESTS = Counter(
    "propdata_http_requests",
    "Requests answered, by route template, method and status.",
    ["route", "method", "status"],
)
DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
HTTP_DURATION = Histogram(
    "propdata_http_request_duration_seconds",
    "Seconds from a request's arrival at the application to its last byte, by route template.",
    ["route"],
    buckets=DURATION_BUCKETS,
)
LIMITER_DECISIONS = Counter(
    "propdata_limiter_decisions",
    "Admission decisions of metered requests: allowed, or the window that refused "
    "(minute, day, failures).",
    ["decision"],
)
CACHE_REQUESTS = Counter(
    "propdata_cache_requests", "Response cache lookups: hit or miss.", ["result"]
)
EVENTS = Counter("propdata_events", "Events produced, by type.", ["type"])
WEBHOOK_DELIVERIES = Counter(
    "propdata_webhook_deliveries",
    "Webhook delivery attempts: succeeded or failed (a failed one is retried or given up).",
    ["result"],
)
WEBHOOK_BACKLOG = Gauge(
    "propdata_webhook_backlog",
    "Webhook deliveries waiting for their first or next attempt.",
    multiprocess_mode="livemostrecent",
)
WEBHOOK_LAG = Histogram(
    "propdata_webhook_delivery_lag_seconds",
    "Seconds from an event's commit to its first delivery attempt.",
    buckets=(0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 3600.0, 21600.0, 86400.0),
)

# Every label value known in advance is exposed from the start (at 0): in multiprocess mode
# a family with no sample is not exposed at all, and rate() needs the 0 to start from.
for _decision in ("allowed", "minute", "day", "failures"):
    LIMITER_DECISIONS.labels(_decision)
for _result in ("hit", "miss"):
    CACHE_REQUESTS.labels(_result)
for _result in ("succeeded", "failed"):
    WEBHOOK_DELIVERIES.labels(_result)
# A "most recent" gauge is exposed once set: 0 until the deliveries' work sets it.
WEBHOOK_BACKLOG.set(0)
for _type in (
    "search.entered", "search.exited", "property.listed", "property.priceChanged",
    "property.statusChanged", "property.estimateChanged", "property.updated",
    "market.updated", "webhook.test",
):  # fmt: skip
    EVENTS.labels(_type)


class RequestTally:
    """The counts of this process's requests (the HTTP families, and counters every request
    touches), kept in plain dicts and added to the shared families at most once a second
    (`FLUSH_EVERY`) and before every scrape.

    Adding to a family in multiprocess mode writes a shared file under a lock: a request's
    count and time cost 2.5 µs that way in a tight loop, against 0.4 µs here, and more with
    the code cold between two requests (docs/performance.md). The histogram's buckets are
    added to as `Histogram.observe` adds to them (the first bucket whose bound is at least
    the value), in bulk; tests/kit/test_metrics.py holds the two together.
    """

    FLUSH_EVERY = 1.0

    def __init__(self) -> None:
        self._counts: dict[str, dict[str, dict[int, int]]] = {}
        """Per route, method and status: the requests answered."""
        self._times: dict[str, list[float]] = {}
        """Per route: the sum of seconds, then each bucket's observations (+Inf last)."""
        self._other: dict[Counter, int] = {}
        self._due = False

    def add(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count one answered request and its time."""
        # Nested dicts, not a tuple key: a request allocates nothing once its route, method
        # and status have been seen since the last flush (fewer objects to collect).
        methods = self._counts.get(route)
        if methods is None:
            methods = self._counts[route] = {}
        statuses = methods.get(method)
        if statuses is None:
            statuses = methods[method] = {}
        statuses[status] = statuses.get(status, 0) + 1
        times = self._times.get(route)
        if times is None:
            times = self._times[route] = [0.0] * (len(DURATION_BUCKETS) + 2)
        times[0] += seconds
        times[1 + bisect.bisect_left(DURATION_BUCKETS, seconds)] += 1
        if not self._due:
            self._schedule()

    def inc(self, counter: Counter) -> None:
        """Add one to a counter (a family's child: `LIMITER_DECISIONS.labels("allowed")`)."""
        self._other[counter] = self._other.get(counter, 0) + 1
        if not self._due:
            self._schedule()

    def _schedule(self) -> None:
        self._due = True
        try:
            asyncio.get_running_loop().call_later(self.FLUSH_EVERY, self.flush)
        except RuntimeError:  # no loop to wait in: now
            self.flush()

    def flush(self) -> None:
        """Add the counts kept so far to the families."""
        self._due = False
        counts, self._counts = self._counts, {}
        times, self._times = self._times, {}
        other, self._other = self._other, {}
        for counter, count in other.items():
            counter.inc(count)
        for route, methods in counts.items():
            for method, statuses in methods.items():
                for status, count in statuses.items():
                    HTTP_REQUESTS.labels(route, method, str(status)).inc(count)
        for route, (total, *buckets) in times.items():
            child = HTTP_DURATION.labels(route)
            child._sum.inc(total)
            for value, observed in zip(child._buckets, buckets, strict=True):
                if observed:
                    value.inc(observed)


TALLY = RequestTally()


@dataclass(frozen=True, slots=True)
class Sample:
    """A value read at scrape time: its family name, help, and value for each label set; a
    gauge, or a counter kept in the store (its name without `_total`)."""

    name: str
    help: str
    values: Sequence[tuple[dict[str, str], float]]
    counter: bool = False


def store_up(stores: dict[str, bool]) -> Sample:
    return Sample(
        "propdata_store_up",
        "1 when the backing store answers (database, accounts, redis), 0 when it does not "
        "(for redis: the per-process fallback is in use).",
        [({"store": name}, 1.0 if up else 0.0) for name, up in stores.items()],
    )


def data_version(version: int) -> Sample:
    return Sample(
        "propdata_data_version",
        "The store's data version: it moves with every committed load, rebuild and ageing.",
        [({}, float(version))],
    )


def ingest_records(counts: Mapping[str, int]) -> Sample:
    return Sample(
        "propdata_ingest_records",
        "Records the committed loads of the store read, by result: accepted (stored, or already"
        " stored unchanged) or rejected (reported); whichever process loaded them.",
        [({"result": result}, float(n)) for result, n in counts.items()],
        counter=True,
    )


def ingest_feeds(feeds: int) -> Sample:
    return Sample(
        "propdata_ingest_feeds",
        "Continuous feeds expected to load the store: followers started and not stopped on"
        " purpose (one that crashed is still expected), and replication sources.",
        [({}, float(feeds))],
    )


def search_index_age(seconds: float) -> Sample:
    return Sample(
        "propdata_search_index_age_seconds",
        "Seconds the answering worker's search index has lagged the store's data "
        "(0: current, or the index is off); searches are answered by SQL meanwhile.",
        [({}, seconds)],
    )


def replication(
    totals: Sequence[tuple[str, int, int, int, dict[str, int], float | None]],
) -> list[Sample]:
    """The replication sources' totals as the store keeps them, whichever process replicated:
    (source, records written, rejects, removed, requests by status, seconds since its
    watermark last moved)."""
    records: list[tuple[dict[str, str], float]] = []
    requests: list[tuple[dict[str, str], float]] = []
    lag: list[tuple[dict[str, str], float]] = []
    for source, written, rejected, removed, statuses, behind in totals:
        for result, n in (("written", written), ("rejected", rejected), ("removed", removed)):
            records.append(({"source": source, "result": result}, float(n)))
        for status, n in sorted(statuses.items()):
            requests.append(({"source": source, "status": status}, float(n)))
        if behind is not None:
            lag.append(({"source": source}, behind))
    return [
        Sample("propdata_replication_records", "Records a replication source committed, by"
               " result: written (new or changed), rejected, removed.", records, counter=True),
        Sample("propdata_replication_requests", "Requests made to a replication source, by HTTP"
               " status (error: no answer; token NNN: its token URL).", requests, counter=True),
        Sample("propdata_replication_lag_seconds", "Seconds since a replication source's"
               " watermark last moved (its last commit).", lag),
    ]  # fmt: skip


def build_info(version: str) -> Sample:
    return Sample(
        "propdata_build_info", "The running version (always 1).", [({"version": version}, 1.0)]
    )


class _Samples(Collector):
    def __init__(self, samples: Iterable[Sample]) -> None:
        self._samples = list(samples)

    def collect(self) -> Iterator[Metric]:
        for sample in self._samples:
            labels = sorted({name for labelset, _ in sample.values for name in labelset})
            kind = CounterMetricFamily if sample.counter else GaugeMetricFamily
            family = kind(sample.name, sample.help, labels=labels)
            for labelset, value in sample.values:
                family.add_metric([labelset[name] for name in labels], value)
            yield family


class _Default(Collector):
    """This process's own counts (a single-process app)."""

    def collect(self) -> Iterable[Metric]:
        return REGISTRY.collect()


def exposition(samples: Iterable[Sample], accept: str | None) -> tuple[bytes, str]:
    """The exposition (and its content type) of every worker's counts and `samples`, in the
    format the scraper's Accept header asks for (Prometheus text or OpenMetrics). Safe on
    another thread; `TALLY.flush()` first, on the thread that counts."""
    registry = CollectorRegistry(auto_describe=False)
    folder = os.environ.get(FOLDER_ENV)
    # A process that imported prometheus_client before the folder was named counts alone.
    if folder and values.ValueClass is not values.MutexValue:
        MultiProcessCollector(registry, folder)  # type: ignore[no-untyped-call]
    else:
        registry.register(_Default())
    registry.register(_Samples(samples))
    encode, content_type = choose_encoder(accept or "")
    return encode(registry), content_type


def loop_up(states: Mapping[str, str]) -> Sample:
    return Sample(
        "propdata_loop_up",
        "1 when the worker's always-running part runs and its last turn worked, 0 when it "
        "is stopped or failing (the worker that answered the scrape; /health says why).",
        [({"loop": name}, 1.0 if state == "ok" else 0.0) for name, state in states.items()],
    )

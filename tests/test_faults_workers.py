"""kill -9 a worker mid-traffic: the other keeps answering and the supervisor replaces it."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.conftest import build_store, create_key, new_store
from tests.live import run_apart, serving_process

pytestmark = pytest.mark.slow


def _workers(supervisor: int) -> set[int]:
    """The uvicorn workers (spawned children) of a `propdata serve --workers N`."""
    children = subprocess.run(["pgrep", "-P", str(supervisor)], capture_output=True, text=True)
    found = set()
    for pid in (int(p) for p in children.stdout.split()):
        try:
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.add(pid)
        except OSError:
            pass
    return found


def test_a_killed_worker_is_replaced_and_the_service_goes_on(tmp_path: Path) -> None:
    store = run_apart(new_store("embedded", tmp_path))
    run_apart(build_store(store))
    secret = run_apart(create_key(store, "enterprise", per_minute=1_000_000))
    headers = {"Authorization": f"Bearer {secret}"}
    outcomes: Counter[str] = Counter()
    stop = threading.Event()

    def traffic(base: str) -> None:
        with httpx.Client(base_url=base, headers=headers, timeout=10) as client:
            while not stop.is_set():
                try:
                    answer = client.get("/v1/properties?state=IA&limit=3")
                    outcomes[str(answer.status_code)] += 1
                except httpx.TransportError:
                    outcomes["connection lost"] += 1

    with serving_process(store.env(), workers=2) as (base, supervisor):
        deadline = time.monotonic() + 20
        while len(before := _workers(supervisor.pid)) < 2:
            assert time.monotonic() < deadline, "two workers never came up"
            time.sleep(0.1)
        threads = [threading.Thread(target=traffic, args=(base,)) for _ in range(4)]
        for thread in threads:
            thread.start()
        time.sleep(1.0)
        victim = sorted(before)[0]
        os.kill(victim, signal.SIGKILL)
        served_at_kill = outcomes["200"]
        time.sleep(2.0)
        assert outcomes["200"] > served_at_kill + 20, "the other worker kept answering"
        while len(after := _workers(supervisor.pid)) < 2 or victim in after:
            assert time.monotonic() < deadline + 20, f"no replacement: {after}"
            time.sleep(0.2)
        time.sleep(1.0)  # the new worker serves too
        stop.set()
        for thread in threads:
            thread.join()
    assert after != before and len(after) == 2
    assert set(outcomes) <= {"200", "connection lost"}, outcomes
    assert outcomes["connection lost"] <= 4, outcomes  # at most the requests in flight on it

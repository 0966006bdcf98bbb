"""`propdata serve` spreads keep-alive connections evenly over its workers."""

from __future__ import annotations

import http.client
import os
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from propdata.kit.serving import spread
from propdata.kit.serving.spread import SHED_EVERY, WorkerSlots
from tests.conftest import new_store
from tests.live import bench_module, run_apart, serving_process


def _slot(path: Path, slot: int, pid: int, count: int) -> None:
    with path.open("r+b") as f:
        f.seek(slot * 16)
        f.write(pid.to_bytes(8, "little", signed=True) + count.to_bytes(8, "little", signed=True))


def test_a_worker_is_crowded_only_past_one_connection_more_than_a_live_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "workers"
    WorkerSlots.create(path, 3)
    slots = WorkerSlots(path)
    assert slots.mine == 0
    sibling = subprocess.Popen(["sleep", "30"])
    try:
        _slot(path, 1, sibling.pid, 1)
        for _ in range(2):
            slots.opened(1)
        assert not slots.crowded()  # 2 against 1
        slots.opened(1)
        assert slots.crowded()  # 3 against 1
        assert not slots.crowded()  # one sent back: the next waits SHED_EVERY
        time.sleep(SHED_EVERY)
        assert slots.crowded()
        slots.opened(-1)
        time.sleep(SHED_EVERY)
        assert not slots.crowded()
        slots.opened(1)
        sibling.kill()
        sibling.wait()
        assert not slots.crowded()  # a dead worker's count is not a share to even out
    finally:
        sibling.kill()
        sibling.wait()


def test_a_slot_is_claimed_free_or_from_a_dead_worker(tmp_path: Path) -> None:
    path = tmp_path / "workers"
    WorkerSlots.create(path, 2)
    dead = subprocess.Popen(["true"])
    dead.wait()
    _slot(path, 0, os.getppid(), 5)  # a live worker keeps its slot
    _slot(path, 1, dead.pid, 7)  # a dead one's is taken over, its count reset
    slots = WorkerSlots(path)
    assert slots.mine == 1
    slots.opened(1)
    assert not slots.crowded()  # 1 against the live worker's 5


def test_serve_names_the_workers_file_while_it_runs_and_removes_it() -> None:
    assert spread.SLOTS_ENV not in os.environ
    with spread.shared_slots(1):
        assert spread.SLOTS_ENV not in os.environ  # one worker has nobody to even out with
    with spread.shared_slots(3):
        path = Path(os.environ[spread.SLOTS_ENV])
        assert path.stat().st_size == 16 * 6
    assert spread.SLOTS_ENV not in os.environ and not path.exists()


def test_serve_goes_on_without_a_writable_temporary_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    with spread.shared_slots(2):
        assert spread.SLOTS_ENV not in os.environ
    assert "not evened out" in caplog.text


def _workers(supervisor: int) -> list[int]:
    harness = bench_module("harness")
    return [p for p in harness.children(supervisor) if "spawn_main" in harness.cmdline(p)]


@pytest.mark.slow
def test_keep_alive_connections_opened_at_once_end_up_spread_evenly(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    store = run_apart(new_store("embedded", tmp_path_factory.mktemp("spread")))
    with serving_process(store.env(), workers=2) as (base, server):
        port = int(base.rsplit(":", 1)[1])
        deadline = time.monotonic() + 60
        while len(_workers(server.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        for _ in range(20):  # both workers answer (their stores are open)
            assert httpx.get(base + "/health").status_code == 200
        clients = [http.client.HTTPConnection("127.0.0.1", port, timeout=10) for _ in range(16)]
        for client in clients:
            client.connect()  # all at once, before any request: the accept race
        closed = 0

        def ask(client: http.client.HTTPConnection) -> str:
            client.request("GET", "/health")  # reconnects by itself after a close
            answer = client.getresponse()
            answer.read()
            assert answer.status == 200
            return answer.getheader("connection") or ""

        connections = bench_module("harness").connections
        rounds, shed = 0, 1
        with ThreadPoolExecutor(16) as pool:
            # 30 rounds, then more (60 at most) until a round closes nothing and the spread
            # is even: a connection shed by the busier worker may land on it again (the
            # accept race) and is shed again, and one just closed is not yet reconnected.
            while rounds < 30 or (
                rounds < 60 and (shed or _uneven(connections(port, _workers(server.pid))))
            ):
                shed = list(pool.map(ask, clients)).count("close")
                closed += shed
                time.sleep(SHED_EVERY / 2)  # a round can take less than a worker's pause
                rounds += 1
        counts = connections(port, _workers(server.pid))
        for client in clients:
            client.close()
    assert sum(counts) == 16, (counts, rounds)
    assert max(counts) - min(counts) <= 1, (counts, rounds)
    assert closed <= 16 * rounds // 4, closed  # evening out, not closing every answer


def _uneven(counts: list[int]) -> bool:
    return max(counts) - min(counts) > 1

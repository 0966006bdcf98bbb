"""`propdata serve` keeps a `propdata deliver` process beside its workers: webhook
deliveries go out from it at a lower CPU priority, a killed one is replaced, and none
outlives the server; `--deliveries workers` leaves them to the workers."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import build_store, create_key, new_store
from tests.live import run_apart, serving_process
from tests.portal.conftest import Receiver

pytestmark = pytest.mark.slow


def _deliverers(server: int) -> list[int]:
    """The `propdata deliver` children of a `propdata serve`."""
    children = subprocess.run(["pgrep", "-P", str(server)], capture_output=True, text=True)
    found = []
    for pid in (int(p) for p in children.stdout.split()):
        try:
            if b"deliver" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                found.append(pid)
        except OSError:
            pass
    return found


def _wait(what: str, done: object, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_deliveries_go_out_from_a_process_beside_the_workers(tmp_path: Path) -> None:
    store = run_apart(new_store("embedded", tmp_path))
    run_apart(build_store(store))
    key = run_apart(create_key(store, "enterprise"))
    env = {**store.env(), "PROPDATA_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32"}
    with Receiver() as receiver, serving_process(env, workers=2) as (base, server):
        _wait("a deliverer", lambda: len(_deliverers(server.pid)) == 1)
        (first,) = _deliverers(server.pid)
        assert os.getpriority(os.PRIO_PROCESS, first) == 10
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as http:
            loops = http.get("/health").json()["loops"]
            assert "producer" in loops and "dispatcher" not in loops  # the workers send none
            made = http.post("/v1/webhooks", json={"url": receiver.url}).json()["data"]
            assert http.post(f"/v1/webhooks/{made['id']}/test").status_code == 202
            _wait("the test delivery", lambda: len(receiver.received) == 1)
            # Killed, it is replaced, and the next delivery goes out from the new one.
            os.kill(first, signal.SIGKILL)
            _wait("another deliverer", lambda: _deliverers(server.pid) not in ([], [first]))
            assert http.post(f"/v1/webhooks/{made['id']}/test").status_code == 202
            _wait("the second test delivery", lambda: len(receiver.received) == 2)
        (second,) = _deliverers(server.pid)
    _wait("the deliverer's end with its server", lambda: not Path(f"/proc/{second}").exists()
          or b"Z" in Path(f"/proc/{second}/stat").read_bytes().split(b")")[-1][:3])  # fmt: skip


def test_with_deliveries_from_the_workers_no_deliverer_runs(tmp_path: Path) -> None:
    store = run_apart(new_store("embedded", tmp_path))
    run_apart(build_store(store))
    with serving_process(store.env(), args=("--deliveries", "workers")) as (base, server):
        loops = httpx.get(f"{base}/health").json()["loops"]
        assert "dispatcher" in loops
        assert _deliverers(server.pid) == []


def test_an_unknown_deliveries_value_is_refused_before_anything_starts() -> None:
    from typer.testing import CliRunner

    from propdata.cli import app

    result = CliRunner().invoke(app, ["serve", "--deliveries", "sometimes"])
    assert result.exit_code == 2 and "--deliveries must be process or workers" in result.stderr

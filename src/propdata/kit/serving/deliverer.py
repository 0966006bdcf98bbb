"""The `propdata deliver` process `propdata serve` keeps beside its workers: started with
them, started again (after a pause) whenever it ends, stopped with them.

    with Deliverer(wanted=True):
        ...  # serve

Webhook deliveries in a worker take the CPU from the answers it owes: a process of its own,
at a lower priority (`propdata deliver --nice`), takes what the workers leave (docs/events.md,
"Deliveries").
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from types import TracebackType

log = logging.getLogger("propdata.deliverer")

RESTART_PAUSE = 2.0
"""Seconds between a deliverer's end and the next one's start."""
STOP_WAIT = 10.0
"""Seconds a deliverer has to finish the deliveries in hand once asked to stop."""


class Deliverer:
    """A supervised `propdata deliver` child (nothing when not `wanted`)."""

    def __init__(self, wanted: bool) -> None:
        self.wanted = wanted
        self.started = 0
        """Deliverer processes started so far."""
        self._stopping = threading.Event()
        self._child: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._keep, name="propdata-deliverer", daemon=True)

    def __enter__(self) -> Deliverer:
        if self.wanted:
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        self.stop()

    def _keep(self) -> None:
        while not self._stopping.is_set():
            with self._lock:
                if self._stopping.is_set():
                    return
                # A session of its own: a terminal's Ctrl-C reaches `serve`, which stops it.
                self._child = subprocess.Popen([sys.executable, "-m", "propdata", "deliver"],
                                               start_new_session=True)  # fmt: skip
                self.started += 1
            code = self._child.wait()
            if not self._stopping.is_set():
                log.warning("the webhook deliverer ended (exit %s); starting another in %g s",
                            code, RESTART_PAUSE)  # fmt: skip
                self._stopping.wait(RESTART_PAUSE)

    def stop(self) -> None:
        """Stop the deliverer (it finishes the deliveries in hand) and its supervision."""
        with self._lock:
            self._stopping.set()
            child = self._child
        if child is not None and child.poll() is None:
            child.terminate()
            try:
                child.wait(STOP_WAIT)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        if self._thread.is_alive():
            self._thread.join(STOP_WAIT)

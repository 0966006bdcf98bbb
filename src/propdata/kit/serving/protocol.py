"""The HTTP protocol `propdata serve` gives uvicorn: httptools with the client limits
(limits.py) and the connections spread over the workers (spread.py).

    uvicorn.run(..., http="propdata.kit.serving.protocol:BoundedHttpToolsProtocol")
"""

from __future__ import annotations

from propdata.kit.serving import shutdown
from propdata.kit.serving.limits import LimitedProtocol
from propdata.kit.serving.spread import SpreadingProtocol


class BoundedHttpToolsProtocol(SpreadingProtocol, LimitedProtocol):
    """HttpToolsProtocol holding each client to its limits and each worker to its share."""

    def on_message_begin(self) -> None:
        super().on_message_begin()
        # An answer that must drop its connection at once can (shutdown.py): a stream
        # whose reader stopped reading, whose buffered bytes would never drain.
        self.scope["extensions"] = {shutdown.ABORT: self.transport.abort}  # type: ignore[dict-item]

    def shutdown(self) -> None:
        # The server is shutting down: answers that never end by themselves end now
        # (shutdown.py), so the wait for the answers under way has an end.
        shutdown.begin()
        super().shutdown()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        # uvicorn cancels the keep-alive timer on a clean close only: after a reset the timer
        # would hold this connection's objects until it fires (5 s).
        if self.timeout_keep_alive_task is not None:
            self.timeout_keep_alive_task.cancel()
            self.timeout_keep_alive_task = None

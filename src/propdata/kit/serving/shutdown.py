"""The server's graceful shutdown, told to the answers that would otherwise outlast it.

uvicorn's graceful shutdown stops accepting, closes idle connections and waits for every
answer under way to finish; the application's lifespan shutdown comes only after that. An
answer that never finishes by itself (an event stream) would hold the shutdown forever, so
`propdata serve`'s protocol calls `begin()` when the server starts shutting down, and such
answers register a callback to end themselves then.

    cancel = on_shutdown(hub.end_all)   # called once, on the event loop
    ...
    cancel()
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable

log = logging.getLogger("propdata")

_callbacks: dict[int, Callable[[], None]] = {}
_begun: list[bool] = []
_tokens = itertools.count()


def on_shutdown(callback: Callable[[], None]) -> Callable[[], None]:
    """Call `callback` when this process's server starts shutting down (at once when it
    already has); return what unregisters it."""
    token = next(_tokens)

    def cancel() -> None:
        _callbacks.pop(token, None)

    if _begun:
        callback()
    else:
        _callbacks[token] = callback
    return cancel


def begin() -> None:
    """The server is shutting down: run the callbacks, once (the protocol calls this for each
    of its connections)."""
    if _begun:
        return
    _begun.append(True)
    for callback in list(_callbacks.values()):
        try:
            callback()
        except Exception:  # one answer's failure must not keep the others open
            log.exception("shutdown callback failed")
    _callbacks.clear()

"""For answers that outlast a request's usual life (event streams): the server's graceful
shutdown told to them, and a way to drop their connection at once.

uvicorn's graceful shutdown stops accepting, closes idle connections and waits for every
answer under way to finish; the application's lifespan shutdown comes only after that. An
answer that never finishes by itself (an event stream) would hold the shutdown forever, so
`propdata serve`'s protocol calls `begin()` when the server starts shutting down, and such
answers register a callback to end themselves then.

    cancel = on_shutdown(hub.end_all)   # called once, on the event loop
    ...
    cancel()

`propdata serve`'s protocol also puts a callable in each request's scope, under
`scope["extensions"][ABORT]`: it closes the connection at once, discarding what is still
buffered for it (for a reader that stopped reading, whose buffer would never drain).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger("propdata")

ABORT = "propdata.abort"
"""The scope extension holding the callable that drops the request's connection."""

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


def aborter(scope: Mapping[str, Any]) -> Callable[[], None] | None:
    """What drops this request's connection at once (None: the server offers no way)."""
    found = scope.get("extensions", {}).get(ABORT)
    return found if callable(found) else None

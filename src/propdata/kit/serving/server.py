"""Run uvicorn's workers on a socket bound here first, so `propdata serve` can say where it
listens before any request, with our protocol and without uvicorn's proxy headers.

uvicorn believes X-Forwarded-For, X-Forwarded-Proto and the like from any peer in its
FORWARDED_ALLOW_IPS (127.0.0.1 unless set), and rewrites the client address before the
application sees it: a client on the same host could name any address it liked. Turned off
here, the application sees the socket peer, and the one rule for proxies is the
application's own (PROPDATA_TRUSTED_PROXIES).
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import sys
from collections.abc import Callable, Iterator
from typing import Any

from uvicorn import Server
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess

from propdata.kit.serving.limits import ClientLimits, ServingConfig
from propdata.kit.serving.spread import shared_slots

PROTOCOL = "propdata.kit.serving.protocol:BoundedHttpToolsProtocol"


def run(
    app: str, *, limits: ClientLimits, announce: Callable[[str, int], None], **options: Any
) -> None:
    """Serve `app` (an import string) as `uvicorn.run(app, **options)` does; `announce` gets
    the address (http://host:port) and the number of workers once the socket is bound."""
    config = ServingConfig(app, limits=limits, http=PROTOCOL, proxy_headers=False, **options)
    # The workers' connection counts, to spread connections evenly (spread.py).
    with shared_slots(config.workers):
        sock = config.bind_socket()  # exits, the reason logged, when the port is taken
        # Listening from here, a client that comes before the workers waits in the backlog
        # rather than being refused.
        sock.listen(config.backlog)
        host, port = sock.getsockname()[:2]
        announce(f"http://{f'[{host}]' if ':' in host else host}:{port}", config.workers)
        server = Server(config)
        try:
            if config.workers > 1:
                with main_not_rerun():
                    Multiprocess(config, sockets=[sock]).run()
            else:
                server.run(sockets=[sock])
        except KeyboardInterrupt:
            pass
        finally:
            sock.close()
    if config.workers == 1 and not server.started:
        sys.exit(STARTUP_FAILURE)


@contextlib.contextmanager
def main_not_rerun() -> Iterator[None]:
    """Processes spawned inside (uvicorn's workers) do not run this process's main script again.

    A spawned process first runs its parent's main script as `__mp_main__`, unless the main
    module is named `__main__` or a package's `__main__` (as under `python -m`). The
    `propdata` console script's main imports the whole command line (typer, click, rich,
    pygments), about 4 MB of every worker's heap that no request uses; a worker needs
    nothing from it (its target and settings are pickled by reference to their modules).
    """
    main = sys.modules["__main__"]
    if getattr(main, "__spec__", None) is not None:
        yield
        return
    main.__spec__ = importlib.machinery.ModuleSpec("__main__", None)
    try:
        yield
    finally:
        main.__spec__ = None

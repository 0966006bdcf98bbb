"""The one shape of the server's always-running work, and the list that starts it.

Each background component of a worker (the wake-ups' listener, the search index keeper, the
event producer, the webhook dispatcher, the ageing, the exporter, ...) is a `Loop`: a name, `start`, `stop` and
`health`. The app's lifespan builds one `Loops` and starts and stops them all from there;
`/health` lists each one's state and `/metrics` exposes it as `propdata_loop_up`.

    loops = Loops([TaskLoop("ageing", lambda: keep_aged(db, today)), keeper])
    await loops.start()
    ...
    loops.health()  # {"ageing": "ok", "searchIndex": "ok"}
    await loops.stop()
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol

log = logging.getLogger("propdata")

OK = "ok"
STOPPED = "stopped"


class Loop(Protocol):
    """Work that runs from the app's start to its stop."""

    @property
    def name(self) -> str:
        """How `/health` and `propdata_loop_up{loop=...}` name it (camelCase)."""
        ...

    async def start(self) -> None: ...

    async def stop(self) -> None:
        """Stop it and wait until it has (stopping twice is harmless)."""
        ...

    def health(self) -> str:
        """ "ok", "stopped", or "failing: <reason>"."""
        ...


def task_health(task: asyncio.Task[Any] | None, error: str | None = None) -> str:
    """A loop's state from its task: stopped when there is none or it ended, failing when it
    died of an exception or reports `error` (its last turn failed), else ok."""
    if task is None or task.cancelled():
        return STOPPED
    if task.done():
        exc = task.exception()
        return STOPPED if exc is None else f"failing: {type(exc).__name__}"
    return OK if error is None else f"failing: {error}"


class TaskLoop:
    """A loop that is one coroutine, run as a task until stopped (cancelled)."""

    def __init__(self, name: str, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self._name = name
        self._run = run
        self._task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self._name

    async def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"propdata-{self._name}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def health(self) -> str:
        return task_health(self._task)


class Loops:
    """The worker's loops, started in order and stopped in reverse."""

    def __init__(self, loops: Sequence[Loop]) -> None:
        names = [loop.name for loop in loops]
        if len(set(names)) != len(names):
            raise ValueError(f"two loops of one name: {names}")
        self.loops = tuple(loops)

    async def start(self) -> None:
        for loop in self.loops:
            await loop.start()

    async def stop(self) -> None:
        for loop in reversed(self.loops):
            try:
                await loop.stop()
            except Exception:  # one that fails to stop does not keep the others running
                log.exception("stopping the %s loop failed", loop.name)

    def health(self) -> dict[str, str]:
        return {loop.name: loop.health() for loop in self.loops}

"""The server's log on standard error: one line per request, and the service's own messages,
as text (logfmt) or JSON Lines.

    time=2026-11-25T20:51:03.123Z request_id=req_5f0c... method=GET
    route=/v1/properties/{id} status=200 duration_ms=1.93 bytes=1870 key_id=key_7Hq...
    cache=miss client=127.0.0.1

(one line). A request's line is written within a tenth of a second of its answer.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import time
from typing import Literal

import msgspec

LogFormat = Literal["text", "json"]


def _stamp(now: float) -> str:
    """UTC, to the millisecond: 2026-11-25T20:51:03.123Z."""
    seconds = int(now)
    return f"{_second(seconds)}.{int((now - seconds) * 1000):03d}Z"


_seconds: dict[int, str] = {}


def _second(seconds: int) -> str:
    text = _seconds.get(seconds)
    if text is None:
        _seconds.clear()  # one second is kept: the clock only goes forward
        text = _seconds[seconds] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return text


Entry = tuple[float, str, str, str, int, float, int, str | None, str, str]
"""A request's fields, kept until its line is written: time, request id, method, route,
status, seconds, bytes, key id, cache result, client."""


class RequestLog:
    """Writes each request's line to a file descriptor (standard error by default).

    A request only keeps its fields; the lines are made and written together at most
    `FLUSH_EVERY` seconds later (and when the app stops), in one system call: made one
    after another, they cost a fifth of what each request making its own did, its code cold
    between two requests (docs/performance.md).
    """

    FLUSH_EVERY = 0.1

    def __init__(self, form: LogFormat = "text", fd: int = 2) -> None:
        self._line = self._json_line if form == "json" else self._text_line
        self._fd = fd
        self._encode = msgspec.json.Encoder().encode
        self._pending: list[Entry] = []

    def request(
        self,
        request_id: str,
        method: str,
        route: str,
        status: int,
        seconds: float,
        size: int,
        key_id: str | None,
        cache: str,
        client: str,
    ) -> None:
        """Log one answered request."""
        pending = self._pending
        pending.append((time.time(), request_id, method, route, status, seconds, size, key_id,
                        cache, client))  # fmt: skip
        if len(pending) == 1:
            try:
                asyncio.get_running_loop().call_later(self.FLUSH_EVERY, self.flush)
            except RuntimeError:  # no loop to wait in: now
                self.flush()

    def flush(self) -> None:
        """Write the lines of the requests logged so far."""
        if not self._pending:
            return
        entries, self._pending = self._pending, []
        line = self._line
        data = b"".join([line(entry) for entry in entries])
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError:
            pass  # a closed or full standard error must not fail requests

    @staticmethod
    def _text_line(entry: Entry) -> bytes:
        now, request_id, method, route, status, seconds, size, key_id, cache, client = entry
        return (
            f"time={_stamp(now)} request_id={request_id} method={method} route={route}"
            f" status={status} duration_ms={seconds * 1000:.2f} bytes={size}"
            f" key_id={key_id or '-'} cache={cache} client={client}\n"
        ).encode()

    def _json_line(self, entry: Entry) -> bytes:
        now, request_id, method, route, status, seconds, size, key_id, cache, client = entry
        return self._encode({
            "time": _stamp(now), "requestId": request_id, "method": method, "route": route,
            "status": status, "durationMs": round(seconds * 1000, 3), "bytes": size,
            "keyId": key_id, "cache": cache, "client": client,
        }) + b"\n"  # fmt: skip


class JsonFormatter(logging.Formatter):
    """The service's own messages as JSON Lines: time, level, logger, message (and the
    traceback, when there is one)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return msgspec.json.encode(entry).decode()


def configure(level: str, form: LogFormat) -> None:
    """The service's log: `level` and above, to standard error, in `form`."""
    handler = logging.StreamHandler()
    if form == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler])

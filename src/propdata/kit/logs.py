"""The server's log on standard error: one line per request, and the service's own messages,
as text (logfmt) or JSON Lines.

    time=2026-11-25T20:51:03.123Z request_id=req_5f0c... method=GET
    route=/v1/properties/{id} status=200 duration_ms=1.93 bytes=1870 key_id=key_7Hq...
    cache=miss client=127.0.0.1

(one line). A request's line is written, in one system call, when its answer has been sent.
"""

from __future__ import annotations

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


class RequestLog:
    """Writes each request's line to a file descriptor (standard error by default)."""

    def __init__(self, form: LogFormat = "text", fd: int = 2) -> None:
        self._json = form == "json"
        self._fd = fd
        self._encode = msgspec.json.Encoder().encode

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
        now = time.time()
        if self._json:
            line = self._encode({
                "time": _stamp(now), "requestId": request_id, "method": method,
                "route": route, "status": status, "durationMs": round(seconds * 1000, 3),
                "bytes": size, "keyId": key_id, "cache": cache, "client": client,
            })  # fmt: skip
        else:
            line = (
                f"time={_stamp(now)} request_id={request_id} method={method} route={route}"
                f" status={status} duration_ms={seconds * 1000:.2f} bytes={size}"
                f" key_id={key_id or '-'} cache={cache} client={client}"
            ).encode()
        self._write(line)

    def _write(self, line: bytes) -> None:
        data = line + b"\n"
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError:
            pass  # a closed or full standard error must not fail requests


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

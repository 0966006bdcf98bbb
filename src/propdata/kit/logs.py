"""The server's log on standard error: one line per request, and the service's own messages,
as text (logfmt) or JSON Lines.

    time=2026-11-25T20:51:03.123Z request_id=req_5f0c... method=GET
    route=/v1/properties/{id} status=200 duration_ms=1.93 bytes=1870 key_id=key_7Hq...
    cache=miss client=127.0.0.1

(one line). A request's line is written within a tenth of a second of its answer.
"""

from __future__ import annotations

import asyncio
import logging
import logging.config
import os
import re
import time
from typing import Any, Literal

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


def _message_fields(record: logging.LogRecord, formatter: logging.Formatter) -> dict[str, str]:
    """A message's fields, in the order its line gives them."""
    fields = {"time": _stamp(record.created), "level": record.levelname, "logger": record.name,
              "message": record.getMessage()}  # fmt: skip
    if record.exc_info:
        fields["exception"] = formatter.formatException(record.exc_info)
    return fields


class JsonFormatter(logging.Formatter):
    """The service's own messages as JSON Lines: time, level, logger, message (and the
    traceback, when there is one)."""

    def format(self, record: logging.LogRecord) -> str:
        return msgspec.json.encode(_message_fields(record, self)).decode()


_BARE = re.compile(r"[^\s\"=\\]+")
"""A logfmt value written without quotes."""


class LogfmtFormatter(logging.Formatter):
    """The service's own messages as logfmt, as the request lines are: time, level, logger,
    message (quoted when it holds spaces), and the traceback escaped onto the same line.

        time=2026-11-25T20:51:03.123Z level=WARNING logger=propdata message="..."
    """

    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{name}={_logfmt(value)}"
                        for name, value in _message_fields(record, self).items())  # fmt: skip


def _logfmt(value: str) -> str:
    if _BARE.fullmatch(value):
        return value
    return msgspec.json.encode(value).decode()  # quoted, with \n, \" and \\ escaped


FORMATTERS: dict[LogFormat, type[logging.Formatter]] = {"text": LogfmtFormatter,
                                                        "json": JsonFormatter}  # fmt: skip


def logging_config(level: str, form: LogFormat) -> dict[str, Any]:
    """The `logging.config.dictConfig` of every process of the service: one handler on
    standard error in `form`, which uvicorn's loggers (given it as `log_config`, in the
    supervisor and each worker), the index builder's child and the service's own use."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"service": {"()": FORMATTERS[form]}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "service",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"level": level.upper(), "handlers": ["stderr"]},
        "loggers": {
            name: {"handlers": [], "propagate": True}
            for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")
        },
    }


def configure(level: str, form: LogFormat) -> None:
    """The service's log: `level` and above, to standard error, in `form`; Python's warnings
    are logged too (a bare `warnings` line would break the format)."""
    logging.config.dictConfig(logging_config(level, form))
    logging.captureWarnings(True)


def notice(message: str, logger: str = "propdata") -> None:
    """Log a line an operator needs whatever the level (which store a server serves, where it
    listens): written by the root's handlers in the configured format, at INFO."""
    record = logging.LogRecord(logger, logging.INFO, __file__, 0, message, None, None)
    for handler in logging.getLogger().handlers:
        handler.handle(record)

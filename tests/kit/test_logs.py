"""The service's own messages are lines of PROPDATA_LOG_FORMAT, as the request lines are:
logfmt (a message with spaces, quotes or a traceback on one line) or JSON Lines."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from propdata.kit.logs import JsonFormatter, LogfmtFormatter, configure, notice
from tests.kit.serving.test_server import logfmt


def _record(message: str, level: int = logging.WARNING, failed: bool = False) -> logging.LogRecord:
    exc_info = None
    if failed:
        try:
            raise ValueError('a "quoted" reason\nover two lines')
        except ValueError:
            exc_info = sys.exc_info()
    return logging.LogRecord("propdata", level, __file__, 1, message, None, exc_info)


@pytest.mark.parametrize("message", ["plain", "with spaces", 'a "quote" and a \\ backslash',
                                     "two\nlines", "key=value", "", "ünïcode ✓"])  # fmt: skip
def test_a_text_message_is_one_logfmt_line(message: str) -> None:
    line = LogfmtFormatter().format(_record(message))
    assert "\n" not in line
    fields = logfmt(line)
    assert fields["message"] == message and fields["level"] == "WARNING"
    assert fields["logger"] == "propdata" and fields["time"].endswith("Z")


def test_a_traceback_stays_on_its_line_in_both_formats() -> None:
    text = LogfmtFormatter().format(_record("it failed", logging.ERROR, failed=True))
    assert "\n" not in text
    assert 'ValueError: a "quoted" reason\nover two lines' in logfmt(text)["exception"]
    line = json.loads(JsonFormatter().format(_record("it failed", logging.ERROR, failed=True)))
    assert line["message"] == "it failed" and "Traceback" in line["exception"]


def test_notices_are_written_whatever_the_level(capfd: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()
    kept = root.handlers[:], root.level
    try:
        configure("ERROR", "json")
        capfd.readouterr()
        logging.getLogger("propdata").info("not at ERROR")
        notice("listening on http://127.0.0.1:8000 with 1 worker")
        lines = [json.loads(line) for line in capfd.readouterr().err.splitlines()]
    finally:
        logging.captureWarnings(False)
        root.handlers[:] = kept[0]
        root.setLevel(kept[1])
    assert [(line["level"], line["message"]) for line in lines] == [
        ("INFO", "listening on http://127.0.0.1:8000 with 1 worker")
    ]

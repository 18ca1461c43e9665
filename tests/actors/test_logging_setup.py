"""Process logging (actors.logging_setup): lines outside text cannot forge, no library chatter.

Issue 8 items 3(d) (a Provider message with CR/LF forged log lines) and 4 (httpx's INFO
request line printed a Provider URL with its credentials).
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator

import httpx
import pytest

from actors.logging_setup import LIBRARY_LOGGERS, MAX_MESSAGE_CHARS, configure_logging

#: The start of a line we wrote: time, level, logger.
OUR_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} WARNING  actors\.consumer: ")
FORGED = "boom\n2026-12-01 00:00:00,000 CRITICAL actors.runtime: FORGED"


@pytest.fixture
def output() -> Iterator[io.StringIO]:
    """configure_logging into a buffer; the handler and levels are restored afterwards."""
    root = logging.getLogger()
    saved = root.level, {name: logging.getLogger(name).level for name in LIBRARY_LOGGERS}
    buffer = io.StringIO()
    handler = configure_logging("INFO", stream=buffer)
    yield buffer
    root.removeHandler(handler)
    root.setLevel(saved[0])
    for name, level in saved[1].items():
        logging.getLogger(name).setLevel(level)


def lines(buffer: io.StringIO) -> list[str]:
    return buffer.getvalue().splitlines()


def test_a_forgotten_call_site_cannot_forge_a_line(output: io.StringIO) -> None:
    """Whatever reaches a log call unescaped — argument or message — stays on one line."""
    log = logging.getLogger("actors.consumer")
    log.warning("task 1 v1 FAILED: %s", FORGED)
    log.warning(FORGED + "\r\x1b[2K\u202e\u2028\x85")
    printed = lines(output)
    assert len(printed) == 2
    assert all(OUR_LINE.match(line) for line in printed)
    assert not any(" CRITICAL " in line.split(": ", 1)[0] for line in printed)
    assert printed[0].endswith(
        "task 1 v1 FAILED: boom\\n2026-12-01 00:00:00,000 CRITICAL actors.runtime: FORGED"
    )
    assert printed[1].endswith("FORGED\\r\\x1b[2K\\u202e\\u2028\\x85")


def test_tracebacks_keep_their_lines_but_lose_url_credentials(output: io.StringIO) -> None:
    try:
        raise RuntimeError("cannot reach http://user:s3cret@provider.test/x")
    except RuntimeError:
        logging.getLogger("actors.runtime").exception("crashed at http://user:s3cret@h/")
    text = output.getvalue()
    assert "Traceback (most recent call last):" in text and len(lines(output)) > 3
    assert "s3cret" not in text
    assert "crashed at http://***@h/" in text and "http://***@provider.test/x" in text


def test_one_line_is_bounded(output: io.StringIO) -> None:
    logging.getLogger("actors.pipeline.runner").warning("fields: %s", ["k" * 50] * 60_000)
    (line,) = lines(output)
    assert len(line) <= MAX_MESSAGE_CHARS
    assert line.endswith("more characters]")


def test_library_request_lines_are_off_by_default_and_redacted_at_debug(
    output: io.StringIO,
) -> None:
    """httpx logs every request at INFO with the full URL; off unless DEBUG, and even then
    without the credentials."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200)

    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        client.post("http://user:s3cret@provider.test/internal/exports/v1/T/batches")
        assert output.getvalue() == ""
        for name in ("httpx", "httpcore", "hpack", "asyncmy"):
            assert logging.getLogger(name).getEffectiveLevel() == logging.WARNING

        configure_logging("DEBUG", stream=output)
        client.post("http://user:s3cret@provider.test/internal/exports/v1/T/batches")
    assert "HTTP Request: POST http://***@provider.test/" in output.getvalue()
    assert "s3cret" not in output.getvalue()


def test_configure_twice_replaces_the_handler(output: io.StringIO) -> None:
    root = logging.getLogger()
    before = len(root.handlers)
    configure_logging("INFO", stream=output)
    assert len(root.handlers) == before
    logging.getLogger("actors").info("once")
    assert len(lines(output)) == 1

"""Process logging (actors.plumbing.logs): lines outside text cannot forge, no library chatter,
structured JSON or text with the identifiers of the request or run on every line.

Issue 8 items 3(d) (a Provider message with CR/LF forged log lines) and 4 (httpx's INFO
request line printed a Provider URL with its credentials); issue 12 item 1 (structured
logs, context bound once per request and run).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
from collections.abc import Iterator

import httpx
import pytest
import trio

from actors.core.errors import ConfigError
from actors.core.log_context import bind_context, task_fields
from actors.plumbing.config_loading import load_settings
from actors.plumbing.logs import (
    LIBRARY_LOGGERS,
    MAX_MESSAGE_CHARS,
    configure_logging,
    resolve_format,
)

#: The start of a line we wrote: time, level, logger.
OUR_LINE = re.compile(
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} WARNING  actors\.supervised\.consumer: "
)
FORGED = "boom\n2026-12-01 00:00:00,000 CRITICAL actors.runtime: FORGED"


@contextlib.contextmanager
def configured(fmt: str) -> Iterator[io.StringIO]:
    """configure_logging into a buffer; the handler and levels are restored afterwards."""
    root = logging.getLogger()
    saved = root.level, {name: logging.getLogger(name).level for name in LIBRARY_LOGGERS}
    buffer = io.StringIO()
    handler = configure_logging("INFO", stream=buffer, fmt=fmt)
    try:
        yield buffer
    finally:
        for h in [h for h in root.handlers if getattr(h, "_export_center", False)]:
            root.removeHandler(h)
        root.removeHandler(handler)
        root.setLevel(saved[0])
        for name, level in saved[1].items():
            logging.getLogger(name).setLevel(level)


@pytest.fixture
def output() -> Iterator[io.StringIO]:
    """Text lines into a buffer."""
    with configured("text") as buffer:
        yield buffer


@pytest.fixture
def json_output() -> Iterator[io.StringIO]:
    """JSON lines into a buffer."""
    with configured("json") as buffer:
        yield buffer


def records(buffer: io.StringIO) -> list[dict]:
    """Each JSON line as an object (every line must be one)."""
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def lines(buffer: io.StringIO) -> list[str]:
    return buffer.getvalue().splitlines()


def test_a_forgotten_call_site_cannot_forge_a_line(output: io.StringIO) -> None:
    """Whatever reaches a log call unescaped — argument or message — stays on one line."""
    log = logging.getLogger("actors.supervised.consumer")
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

        configure_logging("DEBUG", stream=output, fmt="text")
        client.post("http://user:s3cret@provider.test/internal/exports/v1/T/batches")
    assert "HTTP Request: POST http://***@provider.test/" in output.getvalue()
    assert "s3cret" not in output.getvalue()


def test_configure_twice_replaces_the_handler(output: io.StringIO) -> None:
    root = logging.getLogger()
    before = len(root.handlers)
    configure_logging("INFO", stream=output, fmt="text")
    assert len(root.handlers) == before
    logging.getLogger("actors").info("once")
    assert len(lines(output)) == 1


def test_json_lines_carry_the_bound_context_and_extra_fields(json_output: io.StringIO) -> None:
    """Identifiers are bound once (not formatted into messages) and appear on every line
    while bound; ``None`` (not known here) is left out; the block restores what was
    bound before."""
    log = logging.getLogger("actors.supervised.consumer")
    with bind_context(taskId="7", traceId="ab" * 16, dispatchVersion=2, eventId=None):
        log.info("started", extra={"rows": 10, "parameters": {"phone": "***string"}})
        with bind_context(requestId="r1"):
            log.warning("nested")
        log.info("after nested")
    log.info("outside")
    first, nested, after, outside = records(json_output)
    assert first["message"] == "started" and first["level"] == "info"
    assert first["logger"] == "actors.supervised.consumer"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", first["timestamp"])
    assert first["taskId"] == "7" and first["traceId"] == "ab" * 16
    assert first["dispatchVersion"] == 2 and "eventId" not in first
    assert first["rows"] == 10 and first["parameters"] == {"phone": "***string"}
    assert nested["requestId"] == "r1" and nested["taskId"] == "7"
    assert "requestId" not in after and after["taskId"] == "7"
    assert "taskId" not in outside and "traceId" not in outside


def test_json_lines_cannot_be_forged_either(json_output: io.StringIO) -> None:
    """The same escaping and redaction as the text lines, in the message and in every
    field, nested ones included; a traceback stays one JSON value."""
    log = logging.getLogger("actors.supervised.consumer")
    log.warning("failed: %s", FORGED, extra={"detail": {"k\u202e": ["http://u:s3cret@h/"]}})
    try:
        raise RuntimeError("at http://user:s3cret@provider.test/x")
    except RuntimeError:
        log.exception("crashed")
    text = json_output.getvalue()
    assert len(text.splitlines()) == 2 and "s3cret" not in text
    warning, error = records(json_output)
    assert warning["message"] == (
        "failed: boom\\n2026-12-01 00:00:00,000 CRITICAL actors.runtime: FORGED"
    )
    assert warning["detail"] == {"k\\u202e": ["http://***@h/"]}
    assert error["exception"].startswith("Traceback (most recent call last):\n")
    assert "http://***@provider.test/x" in error["exception"]


def test_the_text_line_shows_the_context_after_the_message(output: io.StringIO) -> None:
    with bind_context(traceId="cd" * 16, taskId="9"):
        logging.getLogger("actors.supervised.consumer").warning("slow", extra={"note": "a b"})
    (line,) = lines(output)
    assert OUR_LINE.match(line)
    assert line.endswith(f'slow traceId={"cd" * 16} taskId=9 note="a b"')


async def test_context_follows_trio_tasks_started_inside_the_block_only(
    json_output: io.StringIO,
) -> None:
    """A trio task runs in a copy of its parent's context: a run's identifiers reach the
    tasks the run starts (its watchdog), not siblings started before, and not the parent
    after the block."""
    log = logging.getLogger("actors.supervised.consumer")
    bound = trio.Event()
    done = trio.Event()

    async def sibling() -> None:
        await bound.wait()
        log.info("sibling")
        done.set()

    async with trio.open_nursery() as outer:
        outer.start_soon(sibling)
        with bind_context(taskId="1", traceId="ef" * 16):
            async with trio.open_nursery() as inner:
                inner.start_soon(lambda: _log_async(log, "child"))
            bound.set()
            await done.wait()
        log.info("parent after")
    by_message = {r["message"]: r for r in records(json_output)}
    assert by_message["child"]["traceId"] == "ef" * 16
    assert "traceId" not in by_message["sibling"]
    assert "traceId" not in by_message["parent after"]


async def _log_async(log: logging.Logger, message: str) -> None:
    log.info(message)


def test_the_format_defaults_to_text_on_a_terminal_and_json_elsewhere() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert resolve_format(None, Terminal()) == "text"
    assert resolve_format(None, io.StringIO()) == "json"
    assert resolve_format("TEXT", io.StringIO()) == "text"
    assert resolve_format("json", Terminal()) == "json"
    with pytest.raises(ValueError):
        resolve_format("xml", io.StringIO())


async def test_context_follows_work_handed_to_a_thread(json_output: io.StringIO) -> None:
    """trio.to_thread runs the function in a copy of the caller's context: storage IO
    and other thread work logs with the run's identifiers."""
    with bind_context(taskId="3"):
        await trio.to_thread.run_sync(logging.getLogger("actors.pipeline").info, "in a thread")
    assert records(json_output)[0]["taskId"] == "3"


def test_the_log_format_setting_is_case_insensitive_and_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """FILE_EXPORT_LOG_FORMAT: json or text in any case; empty means unset; anything else
    stops start-up naming the variable."""
    for raw, parsed in [("JSON", "json"), (" text ", "text"), ("", None)]:
        monkeypatch.setenv("FILE_EXPORT_LOG_FORMAT", raw)
        assert load_settings().log_format == parsed
    monkeypatch.setenv("FILE_EXPORT_LOG_FORMAT", "xml")
    with pytest.raises(ConfigError, match="FILE_EXPORT_LOG_FORMAT"):
        load_settings()


def test_a_task_line_in_json_carries_the_task_as_fields(json_output: io.StringIO) -> None:
    """Issue 23: the message is the event, the task is in fields (``task_fields``)."""
    logging.getLogger("actors.supervised.execution").warning(
        "task failed", extra=task_fields(190000000000000001, 3, error="provider said 500")
    )
    (line,) = [json.loads(x) for x in json_output.getvalue().splitlines()]
    assert line["message"] == "task failed" and line["level"] == "warning"
    assert line["taskId"] == "190000000000000001" and line["dispatchVersion"] == 3
    assert line["error"] == "provider said 500"

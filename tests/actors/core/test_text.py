"""Escaping and redaction of outside text (actors.core.text) and its use by ExportError."""

from __future__ import annotations

import pytest

from actors.core.errors import ProviderContractError, TransientExportError
from actors.core.text import (
    content_disposition,
    escape_control,
    quote_outside,
    redact_credentials,
    redact_url,
    safe_file_name,
)

FORGED = "boom\n2026-12-01 00:00:00,000 CRITICAL actors.runtime: FORGED"


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("plain text", "plain text"),
        ("中文 é ü — …", "中文 é ü — …"),
        ("back\\slash \\n kept", "back\\slash \\n kept"),
        (FORGED, "boom\\n2026-12-01 00:00:00,000 CRITICAL actors.runtime: FORGED"),
        ("a\r\nb", "a\\r\\nb"),
        ("tab\there", "tab\\there"),
        ("nul\x00 bell\x07 esc\x1b[31m", "nul\\x00 bell\\x07 esc\\x1b[31m"),
        ("del\x7f", "del\\x7f"),
        ("nel\x85 c1\x9b", "nel\\x85 c1\\x9b"),
        ("ls\u2028ps\u2029", "ls\\u2028ps\\u2029"),
        ("rtl\u202eevil\u202c", "rtl\\u202eevil\\u202c"),
        (
            "isolate\u2066x\u2069 mark\u200f alm\u061c",
            "isolate\\u2066x\\u2069 mark\\u200f alm\\u061c",
        ),
        ("lone \ud800 surrogate", "lone \\ud800 surrogate"),
        ("soft\u00adhyphen zwj\u200d", "soft\u00adhyphen zwj\u200d"),
    ],
    ids=[
        "plain",
        "unicode",
        "backslashes",
        "forged-line",
        "crlf",
        "tab",
        "c0",
        "del",
        "c1-nel",
        "line-separators",
        "bidi-override",
        "bidi-isolates-marks",
        "lone-surrogate",
        "harmless-format-chars",
    ],
)
def test_escape_control_makes_one_encodable_line(text: str, escaped: str) -> None:
    """Issue 8 item 3(d): outside text can never start a log line or break UTF-8."""
    result = escape_control(text)
    assert result == escaped
    assert len(result.splitlines()) <= 1
    result.encode("utf-8")  # no lone surrogate left
    assert escape_control(result) == result  # idempotent: safe to apply twice


def test_quote_outside_clips_before_escaping_and_marks_the_cut() -> None:
    assert quote_outside("x" * 300) == "x" * 200 + "…"
    assert quote_outside("ab\n\n\n", 3) == "ab\\n…"  # never half an escape
    assert quote_outside("short\n") == "short\\n"


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("http://user:secret@127.0.0.1:8080/p", "http://***@127.0.0.1:8080/p"),
        ("https://token@provider.test", "https://***@provider.test"),
        ("mysql://export:pw@db:3306/ec", "mysql://***@db:3306/ec"),
        (
            'HTTP Request: POST http://u:p@h/x "HTTP/1.1 200 OK" and http://a:b@c/',
            'HTTP Request: POST http://***@h/x "HTTP/1.1 200 OK" and http://***@c/',
        ),
        ("http://host/path?mail=a@b.test", "http://host/path?mail=a@b.test"),
        ("no url, user@example.test", "no url, user@example.test"),
        ("http://host:80/", "http://host:80/"),
    ],
)
def test_redact_credentials_removes_userinfo_of_every_url(text: str, redacted: str) -> None:
    """Issue 8 item 4: credentials in a Provider base URL never reach a message."""
    assert redact_credentials(text) == redacted


JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI3IiwiZXhwIjoxfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
URLSAFE = "q3X0v7Jc5Zp_Yd2LwF8m-R1sTgHkA9bNe4uCiQoVyE6"  # secrets.token_urlsafe(32)


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (f"Bearer {JWT}", "Bearer ***"),
        (f"/files?jwt={JWT}&page=2", "/files?jwt=***&page=2"),
        (f"bad token {JWT}.", "bad token ***."),
        (f"key={URLSAFE}", "key=***"),
        (f"x {URLSAFE}== y", "x *** y"),
    ],
)
def test_credential_shaped_values_are_masked_whatever_they_are_called(
    text: str, redacted: str
) -> None:
    assert redact_credentials(text) == redacted
    assert JWT not in quote_outside(text) and URLSAFE not in quote_outside(text)


@pytest.mark.parametrize(
    "text",
    [
        "trace 4bf92f3577b34da6a3ce929d0e0e4736 span 00f067aa0ba902b7",
        "exports/190000000000000001/8f3a0c9e2b7d4e1f9a6b5c4d3e2f1a0b.xlsx",
        "FILE_EXPORT_PROVIDER_REQUEST_TIMEOUT_SECONDS must be positive",
        "task 190000000000000001 v3 attempt 2 of 3, 1234567890123456789012345 rows",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "test_a_credential_under_any_name_or_in_the_path_never_reaches_the_log",
    ],
)
def test_ids_hashes_and_names_are_not_mistaken_for_credentials(text: str) -> None:
    assert redact_credentials(text) == text


def test_redact_url_keeps_the_rest_of_the_url() -> None:
    assert redact_url("http://user:secret@host:1/a?b=c#d") == "http://***@host:1/a?b=c#d"


def test_export_error_messages_are_escaped_and_redacted_at_every_raise_site() -> None:
    """The failure_message of any export error is one line without credentials, whatever
    the raise site quoted (issue 8 items 3(d) and 4)."""
    error = ProviderContractError(f"provider said {FORGED} via http://user:secret@h/")
    assert "\n" not in str(error) and "secret" not in str(error)
    assert "\\n2026-12-01" in str(error) and "http://***@h/" in str(error)
    wrapped = TransientExportError(f"internal error: ValueError: {str(error)}\r\x00")
    assert str(wrapped).endswith("\\r\\x00")
    assert str(TransientExportError(str(wrapped))) == str(wrapped)  # no double escaping


@pytest.mark.parametrize(
    ("name", "cleaned"),
    [
        ("report.xlsx", "report.xlsx"),
        ("客户清单_20261201.xlsx", "客户清单_20261201.xlsx"),
        ("a\x7fb.xlsx", "a_b.xlsx"),  # DEL
        ("invoice\u202egnp.xlsx", "invoice_gnp.xlsx"),  # right-to-left override
        ("x\u200by\u2066z\u2069.xlsx", "x_y_z_.xlsx"),  # zero-width space, isolates
        ("a\x85b\u2028c.xlsx", "a_b_c.xlsx"),  # C1 NEL, line separator
        ("a\ud800b.xlsx", "a_b.xlsx"),  # lone surrogate
        ('a"b\\c/d:e*f?g<h>i|j', "a_b_c_d_e_f_g_h_i_j"),
        ("  ..hidden. ", "hidden"),
        ("\x00\x01", "__"),
        ("", "export.xlsx"),
        (" . ", "export.xlsx"),
    ],
)
def test_safe_file_name_replaces_control_format_and_reserved_characters(
    name: str, cleaned: str
) -> None:
    assert safe_file_name(name) == cleaned


@pytest.mark.parametrize(
    ("name", "header"),
    [
        ("r.xlsx", "attachment; filename=\"r.xlsx\"; filename*=UTF-8''r.xlsx"),
        (
            "客户.xlsx",
            "attachment; filename=\"__.xlsx\"; filename*=UTF-8''%E5%AE%A2%E6%88%B7.xlsx",
        ),
        (
            'a\x7f"\u202e\r\n.xlsx',
            "attachment; filename=\"a_____.xlsx\"; filename*=UTF-8''a_____.xlsx",
        ),
    ],
)
def test_content_disposition_has_no_control_format_or_quote_characters(
    name: str, header: str
) -> None:
    value = content_disposition(name)
    assert value == header
    assert value.isascii() and value.isprintable()

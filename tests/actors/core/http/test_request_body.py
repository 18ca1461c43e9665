"""Request bodies (actors.core.limits.parse_json_body): every malformed body is a 400
naming the problem, never an exception from deep inside (RecursionError, UnicodeError)."""

from __future__ import annotations

import pytest

from actors.core.errors import ParameterError
from actors.core.limits import MAX_BODY_DEPTH, json_nesting_depth, parse_json_body
from web.errors import envelope_code


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ("{}", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('"[[[["', 0),  # brackets inside a string do not count
        ('["\\"[[", []]', 2),  # nor after an escaped quote
        ("[" * 100_000, 100_000),  # linear, no recursion
        ("]]]", 0),  # malformed: never below zero
        ('"\\\\" [', 1),  # an escaped backslash ends the string
    ],
)
def test_json_nesting_depth(text: str, depth: int) -> None:
    assert json_nesting_depth(text) == depth


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "request body is empty"),
        (b"   \n", "not valid JSON: it holds only whitespace (4 bytes)"),
        (b"\xff{}", "not valid UTF-8 (byte 0)"),
        (b"[" * 1000 + b"]" * 1000, f"nested deeper than {MAX_BODY_DEPTH} levels"),
        (b'{"a":' * 5000 + b"1" + b"}" * 5000, f"nested deeper than {MAX_BODY_DEPTH} levels"),
        (b'{"a": 1', "not valid JSON: Expecting ',' delimiter at line 1 column 8"),
        (b'{"a": NaN}', "not valid JSON: NaN is not a JSON value"),
        # Python's own message would tell the caller to change an interpreter setting.
        (b'{"n": ' + b"9" * 5000 + b"}", "not valid JSON: a number has more than 4300 digits"),
        (b"[1]", "must be a JSON object"),
        (b'{"taskName": "\\ud800"}', "taskName contains an unpaired surrogate"),
        (b'{"parameters": {"k": ["\\udfff"]}}', "parameters.k[0] contains an unpaired"),
        (b'{"\\ud800": 1}', "body has a key with an unpaired surrogate"),
        # Issue 24: a key given twice is refused (Python would keep the last silently)
        (b'{"exportType": "A", "exportType": "B"}', "names exportType twice in one object"),
        (b'{"parameters": {"s": 1, "t": 2, "s": 3}}', "names s twice in one object"),
    ],
)
def test_malformed_bodies_are_400_naming_the_problem(raw: bytes, message: str) -> None:
    with pytest.raises(ParameterError) as caught:
        parse_json_body(raw)
    assert envelope_code(caught.value) == "400"
    assert message in caught.value.message, caught.value.message


def test_a_well_formed_body_is_returned() -> None:
    body = b'{"exportType": "X", "taskName": "\\ud83d\\ude00 ok", "parameters": {"a": [1]}}'
    assert parse_json_body(body) == {
        "exportType": "X",
        "taskName": "\U0001f600 ok",  # a surrogate *pair* is a real character
        "parameters": {"a": [1]},
    }

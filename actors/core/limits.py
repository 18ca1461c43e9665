"""Request parameter limits and normalisation (§12, §14).

``parameters`` of a create request: at most 20 keys, serialised JSON at most 4 KB,
strings at most 256 characters, nesting depth at most 2 (the top-level object is depth 1,
so a value may be an object or list of scalars but no deeper). The other fields of a create
request (:func:`create_request`) are checked here too; the task list's query is checked in
``actors/core/task_list.py``. Every refusal is a :class:`ParameterError` naming the field;
the web layer turns it into the envelope (``web/errors.py``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import sys
from dataclasses import dataclass
from typing import Any

from actors.core.errors import ParameterError
from actors.core.text import has_utf8_form, quote_outside

MAX_KEYS = 20
MAX_JSON_BYTES = 4 * 1024
MAX_STRING_CHARS = 256
MAX_DEPTH = 2


@dataclass(frozen=True, slots=True)
class NormalisedParameters:
    """Parameters in canonical JSON (sorted keys, compact, UTF-8) and its sha256 hex."""

    json: str
    sha256: str


def normalise_parameters(parameters: Any) -> NormalisedParameters:
    """Validate ``parameters`` against §12 and return their canonical form.

    The canonical JSON makes "same parameters" well defined for the 60-second duplicate
    check (§14: "参数 JSON 需规范化后比较").

    Raises:
        ParameterError: naming the limit that was broken and the offending field.
    """
    if parameters is None:
        parameters = {}
    if not isinstance(parameters, dict):
        raise ParameterError("parameters", "parameters must be a JSON object")
    if len(parameters) > MAX_KEYS:
        raise ParameterError("parameters", f"parameters may have at most {MAX_KEYS} keys")
    _check_value(parameters, depth=1, path="parameters")
    text = json.dumps(parameters, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if len(text.encode()) > MAX_JSON_BYTES:
        raise ParameterError("parameters", f"parameters JSON may be at most {MAX_JSON_BYTES} bytes")
    return NormalisedParameters(text, hashlib.sha256(text.encode()).hexdigest())


def _check_value(value: Any, depth: int, path: str) -> None:
    if isinstance(value, str):
        if len(value) > MAX_STRING_CHARS:
            raise ParameterError(path, f"{path} is longer than {MAX_STRING_CHARS} characters")
    elif isinstance(value, dict | list):
        if depth > MAX_DEPTH:
            raise ParameterError(path, f"{path} is nested deeper than {MAX_DEPTH} levels")
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(key, str) and len(key) > MAX_STRING_CHARS:
                raise ParameterError(
                    path, f"{path} has a key longer than {MAX_STRING_CHARS} characters"
                )
            _check_value(item, depth + 1, f"{path}.{key}")
    elif isinstance(value, float) and not math.isfinite(value):
        # NaN, Infinity and 1e400 (parsed as inf) are not JSON: the Provider request could
        # never be built, so refuse them here rather than fail the export later.
        raise ParameterError(path, f"{path} is not a finite number")


#: Deepest nesting a request body may have (objects and arrays), levels. A create body
#: needs 3 (body → parameters → a list value); the margin is for clients that wrap.
MAX_BODY_DEPTH = 32


#: A JSON string literal (escapes included), written as an unrolled loop so matching is
#: linear. An unterminated string does not match and its brackets count (an estimate).
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_nesting_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in JSON ``text``, outside strings.

    Linear in the text and without recursion, so it can run before ``json.loads`` (whose
    recursive decoder raises ``RecursionError`` near 1,000 levels) on any input. Strings
    and everything but brackets are dropped by regular expressions first, so only the
    brackets themselves are counted (a 60 KB body of text: 0.6 ms, against 3.9 ms for a
    character loop; 60,000 brackets: 7.5 ms against 25 ms).

    Args:
        text: JSON text, possibly malformed (then the figure is only an estimate; the
            decoder reports the syntax error).

    Returns:
        The maximum depth, 0 for a scalar.
    """
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(itertools.accumulate(map(_BRACKET_STEP.__getitem__, brackets), initial=0))


def parse_json_body(raw: bytes) -> dict[str, Any]:
    """Decode a request body into a JSON object, or say precisely why not.

    The checks, in order: strict UTF-8; nesting at most :data:`MAX_BODY_DEPTH`; valid JSON
    (RFC 8259, no ``NaN``/``Infinity``, no key twice in one object); a JSON object at the
    top; no unpaired UTF-16
    surrogate escape (``"\\ud800"``) in any key or string — such text has no UTF-8 form and
    would fail later, deep in the store.

    Args:
        raw: the request body, bytes.

    Returns:
        The decoded object.

    Raises:
        ParameterError: with a message naming the problem; ``field`` is ``"body"``, or
            the path of the string with an unpaired surrogate.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParameterError(
            "body", f"request body is not valid UTF-8 (byte {exc.start})"
        ) from None
    if not text:
        raise ParameterError("body", "request body is empty; a JSON object is required")
    if not text.strip():
        # Not "empty": bytes did arrive, and a client looking for why needs to hear that
        # they are not JSON.
        raise ParameterError(
            "body",
            f"request body is not valid JSON: it holds only whitespace ({len(raw)} bytes); "
            "a JSON object is required",
        )
    if json_nesting_depth(text) > MAX_BODY_DEPTH:
        raise ParameterError("body", f"request body is nested deeper than {MAX_BODY_DEPTH} levels")
    try:
        body = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise ParameterError(
            "body",
            f"request body names {quote_outside(exc.key, 64)} twice in one object; "
            "a key may appear once (which one was meant cannot be told)",
        ) from None
    except (ValueError, RecursionError) as exc:
        raise ParameterError(
            "body", f"request body is not valid JSON: {_json_error(exc)}"
        ) from None
    if not isinstance(body, dict):
        raise ParameterError("body", "request body must be a JSON object")
    _check_text(body, "body")
    return body


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice: RFC 8259 leaves its meaning open and
    Python keeps the last one silently (``{"exportType": "A", "exportType": "B"}``)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _json_error(exc: BaseException) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if "integer string conversion" in str(exc):
        # Python's own wording names an interpreter setting the caller cannot change.
        return f"a number has more than {sys.get_int_max_str_digits()} digits"
    return str(exc)


def _check_text(value: Any, path: str) -> None:
    """Refuse strings without a UTF-8 form (unpaired surrogates); ``path`` names them.
    Depth is bounded by :data:`MAX_BODY_DEPTH`, so the recursion is too."""
    if isinstance(value, str):
        if not has_utf8_form(value):
            raise ParameterError(path, f"{path} contains an unpaired surrogate (\\ud800-\\udfff)")
    elif isinstance(value, dict):
        for key, item in value.items():
            if not has_utf8_form(key):
                raise ParameterError(path, f"{path} has a key with an unpaired surrogate")
            _check_text(item, f"{path}.{key}" if path != "body" else key)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_text(item, f"{path}[{i}]")


#: Longest ``taskName`` of a create request, characters.
MAX_TASK_NAME = 128
#: The only export format (``format`` of a create request).
EXPORT_FORMAT = "XLSX"
#: Largest ``pageSize`` and ``page`` of the task list.
MAX_PAGE_SIZE = 100
MAX_PAGE = 1_000_000
#: The list's total counts at most this many tasks, and says when it stopped: a count over
#: every task a tenant ever finished grows with its history, a capped one does not. 1,000
#: as GitHub's search does (it serves at most 1,000 results): 50 pages of 20, more than a
#: person pages through, while a count of 10,000 made the administrator's page ~3 x slower
#: with a million finished tasks than with a thousand (``deploy/bench/bench_history.py``).
LIST_TOTAL_CAP = 1_000


def list_total(counted: int) -> tuple[int, bool]:
    """The total a list page shows, from a count capped at ``LIST_TOTAL_CAP + 1``.

    Args:
        counted: tasks counted by the store, at most ``LIST_TOTAL_CAP + 1``.

    Returns:
        ``(total, capped)``: ``capped`` when there are more than ``LIST_TOTAL_CAP`` tasks,
        and then ``total`` is the cap ("at least"), as GitHub's search API reports
        ``total_count`` with ``incomplete_results``.
    """
    return min(counted, LIST_TOTAL_CAP), counted > LIST_TOTAL_CAP


@dataclass(frozen=True, slots=True)
class CreateRequest:
    """The fields of a create request, checked (:func:`create_request`).

    Attributes:
        export_type: ``exportType``, non-empty (its registry entry is checked apart).
        format: ``format``; always :data:`EXPORT_FORMAT`.
        task_name: ``taskName``, or the export type when absent or empty.
        parameters: ``parameters`` as sent; :func:`normalise_parameters` checks them once
            the caller may use the export type.
    """

    export_type: str
    format: str
    task_name: str
    parameters: Any


#: The fields of a create request body; any other key is refused, not ignored.
CREATE_FIELDS = ("exportType", "format", "taskName", "parameters")


def create_request(body: dict[str, Any]) -> CreateRequest:
    """Check the fields of a create request body (from :func:`parse_json_body`).

    Args:
        body: the decoded body.

    Returns:
        The :class:`CreateRequest`.

    Raises:
        ParameterError: a key that is not one of :data:`CREATE_FIELDS` (a misspelt
            ``parameters`` would otherwise export with no filter at all, as Stripe's API
            refuses an unknown parameter rather than drop it); ``exportType`` missing, not
            a string or empty; ``format`` present and other than the string XLSX (null,
            ``{}`` and ``[]`` included); ``taskName`` present and not a string of at most
            :data:`MAX_TASK_NAME` characters (an empty one means the default name).
    """
    unknown = sorted(key for key in body if key not in CREATE_FIELDS)
    if unknown:
        raise ParameterError(
            quote_outside(unknown[0], 64),
            f"unknown field {quote_outside(unknown[0], 64)}: a create takes "
            f"{', '.join(CREATE_FIELDS)}",
        )
    export_type = body.get("exportType")
    if export_type is None:
        raise ParameterError("exportType", "exportType is required")
    if not isinstance(export_type, str):
        raise ParameterError("exportType", "exportType must be a string (an export type's key)")
    if not export_type:
        raise ParameterError("exportType", "exportType must not be empty")
    # Absent means the default; a present value is taken only for what it says (a null,
    # {} or [] is not "XLSX", nor a name).
    fmt = body.get("format", EXPORT_FORMAT)
    if fmt != EXPORT_FORMAT or type(fmt) is not str:
        raise ParameterError("format", "format must be XLSX (the only supported format)")
    task_name = body.get("taskName", "")
    if type(task_name) is not str or len(task_name) > MAX_TASK_NAME:
        raise ParameterError(
            "taskName", f"taskName must be a string of at most {MAX_TASK_NAME} characters"
        )
    task_name = task_name or export_type
    return CreateRequest(export_type, fmt, task_name, body.get("parameters"))

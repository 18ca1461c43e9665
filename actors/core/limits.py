"""Request parameter limits and normalisation (§12, §14).

``parameters`` of a create request: at most 20 keys, serialised JSON at most 4 KB,
strings at most 256 characters, nesting depth at most 2 (the top-level object is depth 1,
so a value may be an object or list of scalars but no deeper).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

from actors.core.errors import ApiError

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
        ApiError: code "400" naming the limit that was broken.
    """
    if parameters is None:
        parameters = {}
    if not isinstance(parameters, dict):
        raise ApiError("400", "parameters must be a JSON object")
    if len(parameters) > MAX_KEYS:
        raise ApiError("400", f"parameters may have at most {MAX_KEYS} keys")
    _check_value(parameters, depth=1, path="parameters")
    text = json.dumps(parameters, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if len(text.encode()) > MAX_JSON_BYTES:
        raise ApiError("400", f"parameters JSON may be at most {MAX_JSON_BYTES} bytes")
    return NormalisedParameters(text, hashlib.sha256(text.encode()).hexdigest())


def _check_value(value: Any, depth: int, path: str) -> None:
    if isinstance(value, str):
        if len(value) > MAX_STRING_CHARS:
            raise ApiError("400", f"{path} is longer than {MAX_STRING_CHARS} characters")
    elif isinstance(value, dict | list):
        if depth > MAX_DEPTH:
            raise ApiError("400", f"{path} is nested deeper than {MAX_DEPTH} levels")
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(key, str) and len(key) > MAX_STRING_CHARS:
                raise ApiError("400", f"{path} has a key longer than {MAX_STRING_CHARS} characters")
            _check_value(item, depth + 1, f"{path}.{key}")
    elif isinstance(value, float) and not math.isfinite(value):
        # NaN, Infinity and 1e400 (parsed as inf) are not JSON: the Provider request could
        # never be built, so refuse them here rather than fail the export later.
        raise ApiError("400", f"{path} is not a finite number")

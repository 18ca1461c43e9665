"""The columns of a Provider's answer (§10.1 ``columns``): each one's JSON
(:func:`column_json`), its validation into a :class:`~actors.core.batch.ColumnDef`
(:func:`parse_columns`: key, title, type, width), and the subset of Excel number formats
this service writes into the XLSX (:func:`check_number_format`). Pure: no IO.

The answer around them is ``actors.core.provider.contract``'s.
"""

from __future__ import annotations

import re
from typing import Any

from actors.core.batch import ColumnDef, ColumnType
from actors.core.errors import ColumnLimitError, ProviderContractError
from actors.core.provider.json_values import clip, is_int

#: Column width bounds in Excel character units (Excel allows at most 255).
MIN_COLUMN_WIDTH = 1
MAX_COLUMN_WIDTH = 255


def column_json(column: ColumnDef) -> dict[str, Any]:
    """One entry of ``columns``: ``key``, ``title``, ``type``, ``width`` and, when set,
    ``format``."""
    out: dict[str, Any] = {
        "key": column.key,
        "title": column.title,
        "type": column.type.value,
        "width": column.width,
    }
    if column.number_format is not None:
        out["format"] = column.number_format
    return out


#: Longest number format code accepted, characters.
MAX_NUMBER_FORMAT = 64
#: One section of a number format code this service writes: digit placeholders, grouping
#: and decimal separators, percent, exponent, signs, brackets, spaces, escaped or quoted
#: literal text and currency symbols, ``[$SYMBOL-LOCALE]`` tags; no colours, conditions,
#: dates or text placeholders. Every code it accepts opens in Excel, LibreOffice and
#: the readers of the tests.
_FORMAT_SECTION = re.compile(
    r'(?:[0#?,.%+\-() ]|E[+-]|\\.|"[^"\\]{1,16}"|\[\$[^\[\]"\\]{1,10}\]|[$€£¥])+'
)


def check_number_format(code: Any) -> str | None:
    """Why ``code`` is not a number format this service writes into the XLSX, or ``None``.

    A code is 1..:data:`MAX_NUMBER_FORMAT` characters in at most four sections
    (positive; negative; zero; text) separated by ``;``, each made of the parts
    :data:`_FORMAT_SECTION` allows, with at least one digit placeholder (``0``, ``#``
    or ``?``) in the first. Excel reports a workbook with a code it cannot parse as
    damaged, so anything else is refused: the Provider gets a contract error naming the
    column.
    """
    example = 'e.g. "0.00", "#,##0.00" or "[$¥-804]#,##0.00"'
    if not isinstance(code, str) or not 1 <= len(code) <= MAX_NUMBER_FORMAT:
        return f"must be a string of 1..{MAX_NUMBER_FORMAT} characters ({example})"
    sections = code.split(";")
    if len(sections) > 4 or not all(_FORMAT_SECTION.fullmatch(s) for s in sections):
        return f"{clip(repr(code))} is not a number format this service writes ({example})"
    if not re.search(r"[0#?]", re.sub(r'"[^"]*"|\\.|\[[^\]]*\]', "", sections[0])):
        return f"{clip(repr(code))} has no digit placeholder 0, # or ? ({example})"
    return None


def parse_columns(raw: Any, max_columns: int) -> tuple[ColumnDef, ...]:
    """Validate an answer's ``columns`` (at most ``max_columns``) into column definitions.

    Raises:
        ProviderContractError: a column is not an object, or its key, title, type, width
            or format is missing or wrong; a key is duplicated.
        ColumnLimitError: more than ``max_columns`` columns.
    """
    if not isinstance(raw, list):
        raise ProviderContractError("columns is not a list")
    if len(raw) > max_columns:
        raise ColumnLimitError(
            f"provider declared {len(raw)} columns; the limit is {max_columns} columns"
        )
    columns: list[ColumnDef] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ProviderContractError(f"columns[{index}] is not an object")
        key, title, kind, width, number_format = (
            item.get(f) for f in ("key", "title", "type", "width", "format")
        )
        if not isinstance(key, str) or not key:
            raise ProviderContractError(f"columns[{index}].key is missing or not a string")
        if key in seen:
            raise ProviderContractError(f"columns[{index}].key {clip(key)!r} is duplicated")
        seen.add(key)
        if not isinstance(title, str):
            raise ProviderContractError(f"columns[{index}].title is missing or not a string")
        if not isinstance(kind, str) or kind not in ColumnType.__members__:
            raise ProviderContractError(
                f"columns[{index}].type {clip(repr(kind))} is not one of "
                f"{', '.join(t.value for t in ColumnType)}"
            )
        column_type = ColumnType(kind)
        if width is not None and (
            not is_int(width) or not MIN_COLUMN_WIDTH <= width <= MAX_COLUMN_WIDTH
        ):
            raise ProviderContractError(
                f"columns[{index}].width {clip(repr(width))} is not an integer in "
                f"{MIN_COLUMN_WIDTH}..{MAX_COLUMN_WIDTH}"
            )
        if number_format is not None:
            if column_type not in (ColumnType.INTEGER, ColumnType.DECIMAL):
                raise ProviderContractError(
                    f"columns[{index}].format is only for INTEGER and DECIMAL columns, "
                    f"not {column_type.value}"
                )
            problem = check_number_format(number_format)
            if problem is not None:
                raise ProviderContractError(f"columns[{index}].format {problem}")
        columns.append(
            ColumnDef(
                key=key,
                title=title,
                type=column_type,
                width=width,
                number_format=number_format,
            )
        )
    return tuple(columns)

"""The only module that knows SQLite from MySQL.

Transition SQL is written once (``db/transitions/``) in a small template language and
rendered per dialect at store start-up:

* ``{now}`` — the database clock (§8.6): ``CURRENT_TIMESTAMP(3)`` in MySQL,
  ``db_now_ms()`` in SQLite (a function the SQLite store registers; it follows an
  injectable clock so tests can drive DB time with trio's mock clock).
* ``{now+:name}`` / ``{now-:name}`` — the DB clock plus/minus a parameter in seconds
  (fractions allowed, so tests can use sub-second timings).
* ``{for_update}`` — row lock suffix: ``FOR UPDATE`` in MySQL; empty in SQLite, whose
  store takes the database write lock with ``BEGIN IMMEDIATE`` instead.
* ``{live:condition}`` — a condition few rows meet, such as a status of the live queue
  (PENDING, RUNNING, CLAIMED) among the finished history: ``unlikely(condition)`` in
  SQLite, the condition itself in MySQL. After an ``ANALYZE`` SQLite only knows how many
  rows a status holds on average (no per-value statistics in the stock build), so it may
  scan the table for a live status; the hint keeps it on the index. MySQL estimates each
  value from the index itself.
* ``{index:name}`` — after a table name: read it through index ``name``. ``FORCE INDEX
  (name)`` in MySQL, ``INDEXED BY name`` in SQLite. For the list pages, whose index gives
  the order a LIMIT cuts: MariaDB's cost model ignores the LIMIT of a range and may read a
  status's whole history through another status-led index, then sort it.
* ``:name`` — a named parameter; becomes ``%(name)s`` for asyncmy.

Time values cross this boundary as aware UTC ``datetime`` objects (``to_datetime`` and
``from_datetime``); SQLite stores INTEGER epoch milliseconds, MySQL ``DATETIME(3)`` in UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

_NOW_OFFSET = re.compile(r"\{now([+-]):(\w+)\}")
_PARAM = re.compile(r"(?<![:\w]):(\w+)")
_LIVE = re.compile(r"\{live:([^{}]*)\}")
_INDEX = re.compile(r"\{index:(\w+)\}")


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one database family spells the handful of things that differ."""

    name: str

    @property
    def is_sqlite(self) -> bool:
        return self.name == "sqlite"

    def render(self, sql: str) -> str:
        """Render a transition template (see module docstring) into executable SQL."""
        if self.is_sqlite:
            now = "db_now_ms()"

            def offset(m: re.Match[str]) -> str:
                return f"(db_now_ms() {m.group(1)} CAST(ROUND(:{m.group(2)} * 1000) AS INTEGER))"

            out = _LIVE.sub(lambda m: f"unlikely({m.group(1)})", sql)
            out = _INDEX.sub(lambda m: f"INDEXED BY {m.group(1)}", out)
            out = _NOW_OFFSET.sub(offset, out)
            return out.replace("{now}", now).replace("{for_update}", "")
        out = _LIVE.sub(lambda m: m.group(1), sql)
        out = _INDEX.sub(lambda m: f"FORCE INDEX ({m.group(1)})", out)
        # MySQL: microsecond intervals keep fractional-second timings exact.
        out = _NOW_OFFSET.sub(
            lambda m: (
                f"(CURRENT_TIMESTAMP(3) {m.group(1)} "
                f"INTERVAL ROUND(:{m.group(2)} * 1000000) MICROSECOND)"
            ),
            out,
        )
        out = out.replace("{now}", "CURRENT_TIMESTAMP(3)").replace("{for_update}", "FOR UPDATE")
        # asyncmy uses pyformat; a literal % must be doubled first.
        out = out.replace("%", "%%")
        return _PARAM.sub(lambda m: f"%({m.group(1)})s", out)

    def to_datetime(self, value: Any) -> datetime | None:
        """Convert a DB time value to an aware UTC datetime (``None`` stays ``None``)."""
        if value is None:
            return None
        if isinstance(value, datetime):
            return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return datetime.fromtimestamp(int(value) / 1000, tz=UTC)

    def from_datetime(self, value: datetime | None) -> Any:
        """Convert an aware datetime to the DB's representation, for passing back a value
        the DB itself produced (never an instance clock reading, §8.6)."""
        if value is None:
            return None
        if self.is_sqlite:
            return int(round(value.timestamp() * 1000))
        return value.astimezone(UTC).replace(tzinfo=None)


SQLITE = Dialect("sqlite")
MYSQL = Dialect("mysql")

"""``db.transitions.Statements`` names every statement of the module, and rendering keeps
each one apart (one SQL text per transition)."""

from __future__ import annotations

from dataclasses import asdict, fields

import pytest

import db.transitions as T
from db.dialect import MYSQL, SQLITE, Dialect


def module_statements() -> dict[str, str]:
    """The module's public SQL texts (column lists are fragments, not statements)."""
    return {
        name: value
        for name, value in vars(T).items()
        if name.isupper()
        and not name.startswith("_")
        and isinstance(value, str)
        and not name.endswith("_COLUMNS")
    }


def test_every_statement_has_its_field() -> None:
    assert asdict(T.TEMPLATES) == module_statements()


@pytest.mark.parametrize("dialect", [SQLITE, MYSQL], ids=lambda d: d.name)
def test_render_renders_each_field_by_name(dialect: Dialect) -> None:
    rendered = T.TEMPLATES.render(dialect)
    for field in fields(T.Statements):
        name = field.name
        assert getattr(rendered, name) == dialect.render(getattr(T, name)), name
    assert "{now}" not in rendered.CLAIM_TASK and "{for_update}" not in rendered.LOCK_CREATE_GUARD

"""``db.transitions.Statements`` joins the subjects' statements without losing one, and
rendering keeps each one apart (one SQL text per transition)."""

from __future__ import annotations

from dataclasses import asdict, fields

import pytest

import db.transitions as T
from db.dialect import MYSQL, SQLITE, Dialect

SUBJECTS = [
    base for base in T.Statements.__mro__[1:] if base.__module__.startswith("db.transitions.")
]


def test_every_statement_of_every_subject_is_joined_once() -> None:
    """A name two subjects both define would silently keep one text: none may."""
    named = [f.name for subject in SUBJECTS for f in fields(subject)]
    assert len(SUBJECTS) == 8 and len(named) == len(set(named))
    assert sorted(asdict(T.TEMPLATES)) == sorted(named)
    assert all(isinstance(text, str) and text.strip() for text in asdict(T.TEMPLATES).values())


@pytest.mark.parametrize("dialect", [SQLITE, MYSQL], ids=lambda d: d.name)
def test_render_renders_each_field_by_name(dialect: Dialect) -> None:
    rendered = T.TEMPLATES.render(dialect)
    for field in fields(T.Statements):
        name = field.name
        assert getattr(rendered, name) == dialect.render(getattr(T.TEMPLATES, name)), name
    assert "{now}" not in rendered.CLAIM_TASK and "{for_update}" not in rendered.LOCK_CREATE_GUARD

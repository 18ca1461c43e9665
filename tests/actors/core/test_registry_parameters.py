"""Registry rules of a definition's parameter hints (§10.3,
actors/core/registry_parameters.py): labels, fixed values and bounds."""

from __future__ import annotations

from typing import Any

import pytest

from tests.actors.core.registry_documents import KEY, doc, parse_error


@pytest.mark.parametrize(
    ("parameter", "key", "rule"),
    [
        ({"type": "integer", "values": ["1"]}, "values", "string parameters only"),
        ({"type": "string", "values": []}, "values", "non-empty list"),
        ({"type": "string", "values": ["A", "A"]}, "values[1].value", "listed twice"),
        ({"type": "string", "values": [{"value": "A", "x": 1}]}, "values[0]", "value and label"),
        ({"type": "string", "values": ["v"] * 51}, "values", "at most 50"),
        ({"type": "string", "minimum": 1}, "minimum", "numbers only"),
        ({"type": "integer", "maximum": "9"}, "maximum", "must be a number"),
        ({"type": "integer", "minimum": 9, "maximum": 1}, "minimum", "above the maximum"),
        ({"type": "string", "label": {"english": "x"}}, "label.english", "language tag"),
        ({"type": "string", "label": {}}, "label", "at least one language"),
        ({"type": "string", "label": {"en": " "}}, "label.en", "must not be empty"),
    ],
)
def test_labels_values_and_bounds_are_validated(
    parameter: dict[str, Any], key: str, rule: str
) -> None:
    err = parse_error(doc(parameters=[{"name": "p", **parameter}]))

    assert err.key == f"{KEY}.parameters[0].{key}"
    assert rule in err.rule

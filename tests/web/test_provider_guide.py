"""docs/provider-guide.md stays true: its examples pass the checks the service applies."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from actors.core.provider_contract import parse_batch_data
from actors.core.registry import parse_registry

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "provider-guide.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE.read_text(), re.S)


def test_the_registry_example_is_a_valid_registry() -> None:
    (example,) = blocks("yaml")
    registry = parse_registry(yaml.safe_load(example), {"order-service"})
    definition = registry.definitions["ORDER_LIST"]
    assert definition.provider_path == "/internal/exports/v1/ORDER_LIST/batches"
    assert definition.batch_size == 1000


def test_the_answer_example_passes_the_contract_checks_of_its_request() -> None:
    request, answer = (json.loads(b.replace("…", "")) for b in blocks("json"))
    assert answer["code"] == "200"
    batch = parse_batch_data(answer["data"], limit=request["limit"], max_columns=100)
    assert [c.key for c in batch.columns or ()] == list(answer["data"]["rows"][0])
    assert batch.has_more and batch.next_cursor == "1"

"""docs/provider-guide.md stays true: its examples pass the checks the service applies."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from actors.core.provider.contract import parse_batch_data
from actors.core.provider.rules import RULES
from actors.core.registry import parse_registry
from tests.processes import EXAMPLE_PROVIDER

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "provider-guide.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE.read_text(), re.S)


def test_the_registry_example_is_a_valid_registry() -> None:
    (example,) = (b for b in blocks("yaml") if b.startswith("definitions:"))
    registry = parse_registry(yaml.safe_load(example), {"order-service"})
    definition = registry.definitions["ORDER_LIST"]
    assert definition.provider_path == "/internal/exports/v1/ORDER_LIST/batches"
    assert definition.batch_size == 500


def test_the_answer_example_passes_the_contract_checks_of_its_request() -> None:
    request, answer = (json.loads(b.replace("…", "")) for b in blocks("json"))
    assert answer["code"] == "200"
    batch = parse_batch_data(answer["data"], limit=request["limit"], max_columns=100)
    assert [c.key for c in batch.columns or ()] == list(answer["data"]["rows"][0])
    assert batch.has_more and batch.next_cursor == "1"


def test_the_guide_links_the_example_provider_of_under_80_lines() -> None:
    text = GUIDE.read_text()
    assert "(../examples/provider/minimal_provider.py)" in text
    assert (GUIDE.parent / "../examples/provider/minimal_provider.py").resolve() == EXAMPLE_PROVIDER
    lines = EXAMPLE_PROVIDER.read_text().splitlines()
    assert len(lines) < 80
    assert f"{len(lines)} lines" in text  # the count the guide states is the file's


def test_the_guide_explains_every_provider_check_rule() -> None:
    check_section = GUIDE.read_text().split("## 8. Check your Provider")[1]
    rows = re.findall(r"^\| `([a-z-]+)` \|", check_section, re.M)
    assert rows == [rule.key for rule in RULES]
    sections = {line.lstrip("# ").strip() for line in GUIDE.read_text().splitlines()}
    assert {rule.guide for rule in RULES} <= sections

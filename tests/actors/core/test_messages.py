"""The plain-words catalogue (``actors/core/messages.py``): every code the service can
store or derive has words in both languages, and the codes are the classes' own."""

from __future__ import annotations

import pytest

from actors.core.data_warning import DataWarning, WarningKind
from actors.core.errors import ExportError
from actors.core.events import TaskEventKind
from actors.core.messages import (
    FAILURE_CODES,
    LANGUAGES,
    WARNING_KINDS,
    Remedy,
    catalogue_json,
    explain_failure,
    failure_code,
)
from actors.core.provider.batch_rules import final_total_rows
from actors.core.xlsx.warning_counts import WarningCounts

#: Codes transitions write themselves (db/transitions), not an error class's.
WRITTEN_BY_TRANSITIONS = {"cancelled", "worker-lost", "handed-back", "command-corrupted"}


def _export_errors() -> list[type[ExportError]]:
    found, todo = [], [ExportError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


@pytest.mark.parametrize("cls", _export_errors(), ids=lambda c: c.__name__)
def test_every_export_error_class_has_a_code_with_words(cls: type[ExportError]) -> None:
    assert failure_code(cls.__name__) == cls.code
    if cls.__name__ != "ExportAbortedError":  # never stored: the run writes nothing
        assert cls.code in FAILURE_CODES


def test_every_code_written_by_a_transition_has_words() -> None:
    assert WRITTEN_BY_TRANSITIONS <= set(FAILURE_CODES)


@pytest.mark.parametrize(
    ("code", "remedy"),
    [
        ("row-limit", Remedy.EDIT),  # the same request fails the same way
        ("size-limit", Remedy.EDIT),
        ("provider-refused", Remedy.EDIT),  # a parameter value it refused
        ("deadline", Remedy.EDIT),
        ("provider-contract", Remedy.SUPPORT),  # only the Provider's team can fix it
        ("column-limit", Remedy.SUPPORT),
        ("provider-unavailable", Remedy.RETRY),
        ("worker-died", Remedy.RETRY),
        ("cancelled", Remedy.RETRY),
    ],
)
def test_remedies(code: str, remedy: Remedy) -> None:
    assert explain_failure(code).remedy == remedy


@pytest.mark.parametrize("code", [None, "no-such-code"])
def test_a_missing_or_unknown_code_reads_as_the_generic_failure(code: str | None) -> None:
    explained = explain_failure(code)
    assert explained.code == "export-failed" and explained.remedy == Remedy.RETRY
    assert failure_code(None) == failure_code("KeyError") == "export-failed"


def test_both_languages_have_the_same_keys_and_no_empty_or_untranslated_text() -> None:
    en, zh = (catalogue_json(language) for language in LANGUAGES)
    for section in ("failures", "events", "warnings", "refusals"):
        assert en[section].keys() == zh[section].keys(), section
        for key in en[section]:
            a, b = en[section][key], zh[section][key]
            assert a and b and a != b, (section, key)
            assert any("\u4e00" <= ch <= "\u9fff" for ch in b), (section, key)


def test_every_history_event_kind_has_words() -> None:
    kinds = {kind.value for kind in TaskEventKind} | {"retry_requested"}  # a manual retry
    assert set(catalogue_json("en")["events"]) == kinds


def test_an_unknown_language_is_refused() -> None:
    with pytest.raises(ValueError, match="zh-TW"):
        catalogue_json("zh-TW")


def test_each_warning_the_writer_produces_carries_its_kind_and_has_words() -> None:
    """Issue 34 item 5: the kind travels with the warning from where it is made; nothing
    reads it back out of the sentence."""
    warnings = WarningCounts()
    warnings.truncated_cell(1, 7, "remark")
    warnings.invalid_value(2, 3, "amount")
    warnings.undeclared_fields(["extra"])
    shortfall = final_total_rows(10, 8)[1]
    assert shortfall is not None
    warnings.note(shortfall)
    for n in range(6):  # one more than are kept: the rest are counted in a note
        warnings.note(DataWarning(WarningKind.NOTE, f"cells truncated to {n} were fine"))
    kinds = [warning.kind.value for warning in warnings.lines()]
    assert kinds[:4] == ["truncated-cells", "invalid-values", "undeclared-fields", "fewer-rows"]
    assert set(kinds[4:]) == {"note"} and warnings.lines()[-1].detail == "2 more notes"
    assert set(kinds) == set(catalogue_json("en")["warnings"]) == set(WARNING_KINDS)


def test_no_message_points_into_the_design_or_the_source() -> None:
    for language in LANGUAGES:
        text = str(catalogue_json(language))
        assert "§" not in text and ".py" not in text

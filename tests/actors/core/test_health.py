"""The health board (actors/core/health.py): what each watcher last saw, read by
/healthz/details and the transport gauge (docs/operations.md, ExportTransportDown)."""

from __future__ import annotations

from actors.core.health import Component, ComponentHealth, HealthBoard, overall_status


def test_every_component_starts_unknown_and_a_report_says_whether_it_changed() -> None:
    """Issue 35 item 3: nothing is "up" before its watcher saw it (the storage before its
    first probe); the first report is a change."""
    board = HealthBoard()
    assert [c.state for c in board.snapshot()] == ["unknown"] * len(Component)
    assert overall_status(board.snapshot()) == "unknown"
    for component in Component:
        assert board.report(component, True) is True  # unknown -> up
    assert overall_status(board.snapshot()) == "ok"
    assert board.report(Component.TRANSPORT, False, "no NameServer answered") is True
    assert board.report(Component.TRANSPORT, False, "still none") is False  # no new line
    assert board.get(Component.TRANSPORT) == ComponentHealth(
        Component.TRANSPORT, False, "still none"
    )
    assert board.get(Component.TRANSPORT).state == "down"
    assert overall_status(board.snapshot()) == "degraded"
    assert board.report(Component.TRANSPORT, True) is True
    assert board.get(Component.TRANSPORT).detail == ""
    assert overall_status(board.snapshot()) == "ok"
    # up, with a part that does not work (the worker consumer waits for its DLQ topic)
    assert board.report(Component.TRANSPORT, True, "the consumer stays off") is False
    assert board.get(Component.TRANSPORT).detail == "the consumer stays off"


def test_a_component_down_outweighs_one_not_seen_yet() -> None:
    board = HealthBoard()
    board.report(Component.STORAGE, False, "bucket does not exist")
    assert overall_status(board.snapshot()) == "degraded"

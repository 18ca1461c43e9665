"""The health board (actors/core/health.py): what each watcher last saw, read by
/healthz/details and the transport gauge (docs/operations.md, ExportTransportDown)."""

from __future__ import annotations

from actors.core.health import Component, ComponentHealth, HealthBoard, overall_status


def test_every_component_starts_up_and_a_report_says_whether_it_changed() -> None:
    board = HealthBoard()
    assert [c.up for c in board.snapshot()] == [True, True, True]
    assert overall_status(board.snapshot()) == "ok"
    assert board.report(Component.TRANSPORT, False, "no NameServer answered") is True
    assert board.report(Component.TRANSPORT, False, "still none") is False  # no new line
    assert board.get(Component.TRANSPORT) == ComponentHealth(
        Component.TRANSPORT, False, "still none"
    )
    assert overall_status(board.snapshot()) == "degraded"
    assert board.report(Component.TRANSPORT, True) is True
    assert board.get(Component.TRANSPORT).detail == ""
    assert overall_status(board.snapshot()) == "ok"
    # up, with a part that does not work (the worker consumer waits for its DLQ topic)
    assert board.report(Component.TRANSPORT, True, "the consumer stays off") is False
    assert board.get(Component.TRANSPORT).detail == "the consumer stays off"

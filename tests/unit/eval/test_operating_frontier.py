"""The oracle frontier script: every threshold's operating point, read from an item log."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripts.operating_frontier import frontier, least, main

from medgate.eval.risk_eval import ItemLine, write_items


def test_each_threshold_escalates_the_items_above_it_with_ties_together() -> None:
    points = frontier([(0.9, False), (0.5, True), (0.5, False), (0.1, True)])
    assert [(p.escalated, p.caught) for p in points] == [(0, 0), (1, 1), (3, 2), (4, 2)]
    assert points[1].lift == pytest.approx((1 / 2) / (1 / 4))
    assert points[1].released_error == pytest.approx(1 / 3)


def test_the_least_escalation_meeting_both_targets_or_none() -> None:
    # Wrong answers are not ranked first: reaching 30% released error costs most of the items.
    points = frontier([(0.9, True), (0.8, False), (0.7, False), (0.6, True), (0.2, True)])
    reach = least(points, alpha=0.3)
    assert reach is not None and reach.escalated == 3
    assert least(points, alpha=0.3, lift=1.8) is None


def test_the_script_reads_item_logs_and_reports_the_deployed_point(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def line(i: int, risk: float | None, correct: bool, escalated: bool) -> ItemLine:
        status = "escalated" if escalated else "released"
        return ItemLine(
            id=str(i), dataset="toy", gold="yes", answer="yes" if correct else "no",
            correct=correct, signals={}, combined=0.5, risk=risk, status=status,
            escalated=escalated, paper_status=status, paper_escalated=escalated,
            paper_final=None,
        )  # fmt: skip

    rows = [
        line(0, 0.9, False, True),
        line(1, 0.4, True, False),
        line(2, 0.3, False, False),
        line(3, 0.1, True, False),
        line(4, None, True, True),  # no risk score: ranked first, as the gate escalates it
    ]
    write_items(rows, tmp_path / "toy_test.jsonl.gz")
    assert main(["--items", str(tmp_path), "--alpha", "0.3"]) == 0
    out = capsys.readouterr().out
    assert "toy: 5 items, 2 wrong (40.0%)" in out
    assert "deployed threshold             escalate  40.0%  gain  50.0%  lift 1.25" in out
    # Escalating the unscored item and the 0.9 one leaves 1 wrong of 3 released (33% > 30%);
    # adding 0.4 leaves 1 of 2; only escalating through 0.3 gets the error to 0.
    assert "risk, error <= 30%             escalate  80.0%  gain 100.0%  lift 1.25" in out

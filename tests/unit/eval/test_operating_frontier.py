"""The oracle frontier script: every threshold's operating point, read from an item log."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from scripts.operating_frontier import frontier, least, main


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
    rows = [
        {"risk": 0.9, "correct": False, "escalated": True},
        {"risk": 0.4, "correct": True, "escalated": False},
        {"risk": 0.3, "correct": False, "escalated": False},
        {"risk": 0.1, "correct": True, "escalated": False},
    ]
    with gzip.open(tmp_path / "toy_test.jsonl.gz", "wt") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    assert main(["--items", str(tmp_path), "--alpha", "0.3"]) == 0
    out = capsys.readouterr().out
    assert "toy: 4 items, 2 wrong (50.0%)" in out
    assert "deployed threshold             escalate  25.0%  gain  50.0%  lift 2.00" in out

"""The committed whole-draft and combined-score figures recompute from the run logs, the hand
labels and the fitted combined score (scripts/draft_risk.py)."""

from __future__ import annotations

import json

import pytest
from scripts import draft_risk


def test_the_primary_pool_figures_are_the_committed_ones() -> None:
    committed = json.loads((draft_risk.OUT / "report.json").read_text())
    rows = draft_risk.pool()
    first = [r for r in rows if r["iteration"] == 0]
    for name, part in (("first drafts (primary)", first), ("every draft", rows)):
        figures = draft_risk.figures(part)
        assert committed[name]["drafts"] == len(part)
        assert committed[name]["wrong"] == sum(r["wrong"] for r in part)
        assert committed[name]["score"]["value"] == pytest.approx(figures["score"].value)
    assert committed["target"]["met"] is False


def test_the_set_12_reading_uses_the_committed_fit() -> None:
    artifact = json.loads(draft_risk.COMBINED.read_text())
    committed = json.loads((draft_risk.OUT / "report_v16.json").read_text())
    first = draft_risk.pool((draft_risk.V16_RUN,), first_only=True)
    assert len(first) == committed["drafts"]
    by_sha = {item["draft_sha256"]: item for item in committed["items"]}
    for row in first:
        item = by_sha[row["draft_sha256"]]
        assert item["wrong"] == row["wrong"]
        assert item["combined"] == pytest.approx(draft_risk.combined_score(row, artifact))


def test_the_combined_score_rises_with_each_reading() -> None:
    artifact = json.loads(draft_risk.COMBINED.read_text())
    low = {"support": 0.05, "max_sentence": 0.1, "hra_judge": 1}
    for reading in draft_risk.READINGS:
        high = {**low, reading: low[reading] + (1 if reading == "hra_judge" else 0.3)}
        assert draft_risk.combined_score(high, artifact) > draft_risk.combined_score(low, artifact)

"""docs/results/sra_reading.md, hra_reading.md and sra_screen_line.md quote their JSON; the
committed readings recompute each, and the screen line's decision follows its written rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripts import hra_reading, sra_reading, sra_screen_line


def test_the_sra_reading_recomputes_from_its_committed_items() -> None:
    committed = json.loads(Path(sra_reading.OUT).read_text(encoding="utf-8"))
    assert json.loads(json.dumps(sra_reading.reading())) == committed
    assert committed["test"]["drafts"] == 831
    assert committed["validation_auroc"]["safe"]["n"] == 417


def test_the_hra_reading_recomputes_from_its_committed_items() -> None:
    committed = json.loads(Path(hra_reading.OUT).read_text(encoding="utf-8"))
    assert json.loads(json.dumps(hra_reading.reading())) == committed
    assert (committed["test"]["drafts"], committed["test"]["wrong"]) == (158, 35)


def test_the_screen_line_reading_recomputes_from_its_committed_items() -> None:
    committed = json.loads(Path(sra_screen_line.OUT).read_text(encoding="utf-8"))
    assert json.loads(json.dumps(sra_screen_line.reading())) == committed
    assert committed["groups"] == {
        "benign": 341,
        "harmful, complies": 51,
        "harmful, does not comply": 25,
    }
    assert committed["decision"].startswith("scores_5 ")


@pytest.mark.parametrize(
    ("no_score", "no_line", "chosen"),
    [
        # 10 fewer benign drafts held back and at most 3 fewer complying: qualifies.
        ((37, 290), (20, 100), "no_score"),
        # 9 fewer benign is not enough; 4 fewer complying is too many.
        ((40, 291), (36, 100), "scores_5"),
        # Of two that qualify, the one holding back more complying drafts, then fewer benign.
        ((39, 250), (41, 280), "no_line"),
        ((41, 250), (41, 280), "no_score"),
    ],
)
def test_a_reworded_screen_line_qualifies_only_by_the_rule(
    no_score: tuple[int, int], no_line: tuple[int, int], chosen: str
) -> None:
    """(complying, benign) drafts held back per wording; today's line holds back (40, 300)."""
    per = {
        wording: {"held_back": {"harmful, complies": complying, "benign": benign}}
        for wording, (complying, benign) in {
            "scores_5": (40, 300),
            "no_score": no_score,
            "no_line": no_line,
        }.items()
    }
    assert sra_screen_line.decide(per).startswith(f"{chosen} ")

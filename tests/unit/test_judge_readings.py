"""docs/results/sra_reading.md, hra_reading.md and sra_screen_line.md quote their JSON; the
committed readings recompute each, and the screen line's decision follows its written rule."""

from __future__ import annotations

import json
from pathlib import Path

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


def held_back(complying: int, benign: int) -> dict[str, dict[str, int]]:
    return {"held_back": {"harmful, complies": complying, "benign": benign}}


def test_a_reworded_screen_line_qualifies_only_by_the_rule() -> None:
    decide = sra_screen_line.decide
    # 10 fewer benign drafts held back and at most 3 fewer complying: qualifies.
    per = {
        "scores_5": held_back(40, 300),
        "no_score": held_back(37, 290),
        "no_line": held_back(20, 100),
    }
    assert decide(per).startswith("no_score ")
    # 9 fewer benign is not enough; 4 fewer complying is too many.
    per = {
        "scores_5": held_back(40, 300),
        "no_score": held_back(40, 291),
        "no_line": held_back(36, 100),
    }
    assert decide(per).startswith("scores_5 ")
    # Of two that qualify, the one holding back more complying drafts, then fewer benign.
    per = {
        "scores_5": held_back(40, 300),
        "no_score": held_back(39, 250),
        "no_line": held_back(41, 280),
    }
    assert decide(per).startswith("no_line ")
    per = {
        "scores_5": held_back(40, 300),
        "no_score": held_back(41, 250),
        "no_line": held_back(41, 280),
    }
    assert decide(per).startswith("no_score ")

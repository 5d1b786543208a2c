"""The self-check's gate cut (the lowest holding back at most a share of right drafts) and the
replay of recorded runs at a higher cut."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scripts.replay_self_check_cut import INEXACT, replay

from medgate.careguard.hra_fit import false_alarm_threshold


def test_the_cut_holds_back_at_most_the_share_of_right_drafts() -> None:
    p = np.asarray([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.35])
    bad = np.asarray([False] * 10 + [True])
    cut = false_alarm_threshold(p, bad, 0.2)
    assert cut == 0.9  # at 0.8 the right drafts at 0.8, 0.9 and 0.95 would be 3 of 10
    assert (p[~bad] >= cut).mean() <= 0.2
    assert false_alarm_threshold(p, bad, 0.0) > 0.95  # none may be held: above every reading
    with pytest.raises(ValueError):
        false_alarm_threshold(p[bad], bad[bad], 0.1)


def _round(iteration: int, p_error: float, text: str, hra: int = 1) -> dict[str, Any]:
    return {
        "iteration": iteration,
        "draft": {"text": text},
        "assessments": {
            "sra": {"score": 5, "rule_findings": [], "error": None},
            "hra": {"score": hra, "error": None},
            "self_check": {"components": {"threshold": 0.2, "p_error": p_error}, "error": None},
        },
        "claims": {"blocking": [], "errors": []},
        "release_findings": [],
        "waiver": "general question scored benign by request safety",
    }


def _row(rounds: list[dict[str, Any]], status: str, shown: str) -> dict[str, Any]:
    trace = {"stages": {"careguard": {"rounds": rounds}}}
    return {"status": status, "shown": shown, "record": {"verdict": {"trace": trace}}}


def test_a_higher_cut_releases_the_first_round_that_only_the_self_check_held() -> None:
    rounds = [_round(0, 0.25, "first", hra=3), _round(1, 0.24, "second"), _round(2, 0.1, "third")]
    row = _row(rounds, "refined", "third")
    assert replay(row, 0.2) == ("refined", "third")  # the recorded cut gives the record back
    assert replay(row, 0.245) == ("refined", "second")  # the first round failed HRA as well
    # At 0.3 the self-check would have passed the first round, which HRA alone held back: the
    # second draft was written with the self-check's correction, so it is not that gate's.
    assert replay(row, 0.3) == (INEXACT, None)
    blocked = _row([_round(0, 0.5, "a"), _round(1, 0.6, "b")], "blocked", "refusal")
    assert replay(blocked, 0.3) == ("blocked", None)
    assert replay(blocked, 0.55) == ("released", "a")
    with pytest.raises(SystemExit):
        replay(row, 0.1)  # below the recorded cut the rounds after a release were never drawn

"""Comparing answerers on the answer slot alone: the feature set, the second model made the
answerer, and the risk rule read from the score."""

from __future__ import annotations

import pytest
from scripts.answerer_risk import as_answerer, by_score

from medgate.eval.risk_eval import ItemLine
from medgate.eval.runner import RecordedItem
from medgate.hrs import features
from medgate.hrs.decision import Iteration
from medgate.hrs.evidence import EvidenceCues

from ..risk_helpers import iteration, run, trajectory

NAMES = features.FEATURE_SETS["answer_slot+evidence"]
CUES = EvidenceCues(negation=10.0, no_effect=4.0, words=50)


def recorded(item_id: str, gold: str = "no") -> RecordedItem:
    traj = trajectory(iteration(1, run("no", {"yes": 0.1, "no": 0.8, "maybe": 0.1}), entropy=0.2))
    return RecordedItem(
        item_id=item_id,
        gold=gold,
        trajectory=traj.model_copy(update={"evidence": CUES}),
        rounds_recorded=True,
        wall_seconds=1.0,
        model_seconds=1.0,
        cache_hits=0,
        cache_misses=0,
        recorded_at="2026-12-04T00:00:00+00:00",
    )


def test_the_feature_set_reads_no_reasoning_no_samples_and_no_round() -> None:
    assert not features.needs_rounds(NAMES)
    assert not any("reasoning" in n or "sample" in n or "logprob" in n for n in NAMES)
    assert set(NAMES) <= set(features.FEATURES)


def test_the_second_model_becomes_the_answerer_and_nothing_of_the_first_is_kept() -> None:
    peers = {"a": {"peer_answer": "no", "peer_distribution": {"yes": 0.25, "no": 0.75}}}
    (rec,) = as_answerer([recorded("a"), recorded("b")], peers)  # "b" has no second answer
    (first,) = rec.trajectory.iterations  # the first model's knowledge round is dropped
    assert isinstance(first, Iteration)
    assert first.answer == "no" and first.run.distribution == {"yes": 0.25, "no": 0.75}
    assert first.run.reasoning == "" and first.run.sample_answers == []
    # Binary entropy of 0.25 / 0.75 in bits.
    assert first.value("entropy") == pytest.approx(0.8112781)
    assert rec.trajectory.evidence == CUES and rec.gold == "no"
    f = features.compute(rec.trajectory, NAMES, 0)
    assert all(v is not None for v in f.values())
    # Now "no" is the answer: the evidence's cues count against "no", not "yes".
    assert f["no_x_evidence_no_effect"] == 4.0 and f["yes_x_evidence_no_effect"] == 0.0
    assert f["pred_no"] == 1.0 and f["three_labels"] == 0.0


def test_the_rule_escalates_a_score_above_the_threshold_or_none() -> None:
    def line(risk: float | None) -> ItemLine:
        return ItemLine(
            id="x", dataset="toy", gold="yes", answer="yes", correct=True, signals={},
            combined=0.5, risk=risk, status="escalated", escalated=True,
            paper_status="escalated", paper_escalated=True, paper_final=None,
        )  # fmt: skip

    assert [by_score(line(r), 0.5).escalated for r in (0.2, 0.5, 0.51, None)] == [
        False,
        False,
        True,
        True,
    ]

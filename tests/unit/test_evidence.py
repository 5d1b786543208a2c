"""Negation cues of the evidence and the reasoning, and the risk features that read them."""

from __future__ import annotations

import pytest

from medgate.eval.data import EvalItem
from medgate.eval.runner import RecordedItem, with_evidence
from medgate.hrs import features
from medgate.hrs.decision import Outcome, decide
from medgate.hrs.evidence import EvidenceCues, closing_part, read_evidence
from medgate.hrs.gate import HRSGate
from medgate.records import Case, LabelSet, Status

from .hrs_helpers import CONFIDENT, answerer, completion, hrs_config
from .risk_helpers import entropy_model, loaded, trajectory
from .test_gate import orchestrator
from .test_risk import RISK

RESULTS = (
    "Patients were randomised to drug X or placebo. Mortality was recorded at one year. "
    "There was no significant difference in mortality between groups. "
    "Adverse events did not differ."
)


def test_the_closing_sentences_are_read_and_counted_per_100_words() -> None:
    assert closing_part("One. Two. Three. Four. Five. Six.") == "Five. Six."
    cues = read_evidence(RESULTS)
    assert cues is not None
    # The last of four sentences: "Adverse events did not differ." (5 words, "not", "did not").
    assert cues.words == 5
    assert cues.negation == pytest.approx(100 * 1 / 5)
    assert cues.no_effect == pytest.approx(100 * 1 / 5)
    positive = read_evidence("Drug X reduced mortality by a third. The effect was large.")
    assert positive is not None and positive.negation == 0.0 and positive.no_effect == 0.0


def test_a_case_without_evidence_has_no_cues() -> None:
    assert read_evidence("") is None and read_evidence("   \n") is None


def test_evidence_features_cross_the_cues_with_the_answer() -> None:
    traj = trajectory().model_copy(
        update={"evidence": EvidenceCues(negation=10.0, no_effect=4.0, words=50)}
    )
    f = features.compute(traj, features.FEATURE_SETS["evidence"], 0)
    assert f["evidence_negation"] == 10.0 and f["evidence_no_effect"] == 4.0
    # The baseline answered "yes": the cues count against it, and not against "no".
    assert f["yes_x_evidence_negation"] == 10.0 and f["no_x_evidence_negation"] == 0.0
    assert f["yes_x_evidence_no_effect"] == 4.0 and f["no_x_evidence_no_effect"] == 0.0
    assert f["reasoning_no_effect"] == 0.0 and f["yes_x_reasoning_no_effect"] == 0.0
    assert not features.needs_rounds(features.FEATURE_SETS["evidence"])


def test_without_evidence_the_risk_is_unknown_and_the_answer_escalates() -> None:
    names = features.FEATURE_SETS["evidence"]
    f = features.compute(trajectory(), names, 0)
    assert f["evidence_negation"] is None and f["yes_x_evidence_no_effect"] is None
    n = len(names)
    model = loaded(
        entropy_model().model_copy(
            update={"feature_set": "evidence", "features": names, "mean": [0.0] * n,
                    "scale": [1.0] * n, "coef": [0.0] * n}
        )
    )  # fmt: skip
    decision = decide(trajectory(), RISK, model)
    assert decision is not None and decision.status is Status.ESCALATED
    assert decision.outcome is Outcome.UNRELIABLE and "evidence_negation" in decision.reason
    assert "came with none" in decision.reason and "--context-file" in decision.reason


def test_the_gate_reads_the_cases_evidence_into_its_trajectory() -> None:
    gate = HRSGate(answerer({}, completion(CONFIDENT)), orchestrator(), hrs_config())
    traj = gate.record(Case(question="Does drug X reduce mortality?", context=RESULTS))
    assert traj.evidence == read_evidence(RESULTS)
    bare = gate.record(Case(question="Does drug X reduce mortality?"))
    assert bare.evidence is None


def test_a_recording_made_before_the_cues_gets_them_from_its_items_context() -> None:
    item = EvalItem(
        id="7", question="Does drug X work?", context=RESULTS, gold="no", labels=LabelSet.YES_NO
    )
    old = RecordedItem(
        item_id="7", gold="no", trajectory=trajectory(), rounds_recorded=True,
        wall_seconds=1.0, model_seconds=1.0,
    )  # fmt: skip
    (filled,) = with_evidence([old], [item])
    assert filled.trajectory.evidence == read_evidence(RESULTS)
    assert old.trajectory.evidence is None  # the stored record is not changed
    # A record that has its cues keeps them; one whose item is not given is left as it is.
    kept = EvidenceCues(negation=1.0, no_effect=0.0, words=3)
    has = old.model_copy(update={"trajectory": trajectory().model_copy(update={"evidence": kept})})
    assert with_evidence([has], [item])[0].trajectory.evidence == kept
    assert with_evidence([old], [])[0].trajectory.evidence is None

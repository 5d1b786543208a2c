"""The full profile: HRS for research questions; CareGuard for patient questions, with HRS's
check of a yes/no question; one record, one decision (scripted fake models)."""

from __future__ import annotations

import pytest

from medgate.careguard.records import CareGuardReport
from medgate.events import DecisionEvent, Event, EventKind, EventSink, discard
from medgate.gates.full import FullPipeline, asks_yes_or_no
from medgate.gates.records import Confidence, HRSCheck
from medgate.hrs.decision import HRSReport
from medgate.records import Case, LabelSet, Status
from medgate.verdict import Verdict
from tests.unit.server.service_gate import (
    BLOCKED,
    PATIENT,
    PREGNANT,
    RELEASED_DRAFT,
    RESEARCH,
    scripted_gates,
)


def run(case: Case) -> tuple[Verdict, list[Event]]:
    events: list[Event] = []
    return FullPipeline(*scripted_gates()).check(case, events.append), events


def hrs_check(verdict: Verdict) -> HRSCheck:
    report = verdict.trace.report(HRSCheck)
    assert report is not None
    return report


def test_a_research_question_goes_to_hrs_alone() -> None:
    verdict, events = run(Case(question=RESEARCH, labels=LabelSet.YES_NO))
    assert verdict.status is Status.RELEASED and verdict.answer == "yes"
    assert list(verdict.trace.stages) == ["route", "hrs"]
    assert [e.kind for e in events] == [
        EventKind.ROUTE,
        EventKind.ANSWER,
        EventKind.SIGNALS,
        EventKind.DECISION,
    ]


def test_a_patient_yes_no_question_gets_every_stage_in_one_record() -> None:
    verdict, events = run(Case(question="Are oats high in fiber?"))
    assert verdict.status is Status.RELEASED
    assert verdict.answer is not None and verdict.answer.startswith(RELEASED_DRAFT)
    assert list(verdict.trace.stages) == ["route", "careguard", "hrs", "hrs_check"]
    hrs = verdict.trace.report(HRSReport)
    assert hrs is not None and set(hrs.trajectory.iterations[0].signals) >= {"entropy"}
    careguard = verdict.trace.report(CareGuardReport)
    assert careguard is not None
    (only,) = careguard.rounds
    assert only.claims is not None and only.claims.check is not None
    assert only.claims.check.verification is not None  # citations were looked up
    assert only.sra.judge_score == 1 and only.hra.judge_score == 1
    assert hrs_check(verdict).confidence is Confidence.CONFIDENT
    kinds = [e.kind for e in events]
    assert {EventKind.TRIAGE, EventKind.CLAIMS, EventKind.SAFETY, EventKind.SIGNALS} <= set(kinds)
    decisions = [e for e in events if isinstance(e, DecisionEvent)]
    assert decisions == [events[-1]] and decisions[0].stage == "full"
    assert decisions[0].data.outcome == "careguard:released, hrs:gate"


def test_an_answer_the_model_is_unsure_of_is_held_for_a_clinician() -> None:
    # The scripted answerer is unsure of any question about mortality; its orchestrator abstains.
    verdict, _ = run(Case(question="Does eating fiber lower mortality?"))
    assert verdict.status is Status.ESCALATED and verdict.answer is None
    assert verdict.held_back is not None
    assert verdict.held_back.answer.startswith(RELEASED_DRAFT)
    assert verdict.held_back.source == "careguard round 0"
    assert hrs_check(verdict).confidence is Confidence.UNSURE
    assert "abstain" in hrs_check(verdict).why and "unsure" in verdict.reason


def test_a_question_that_is_not_yes_no_is_not_read_by_hrs() -> None:
    verdict, events = run(Case(question="What foods are high in fiber?"))
    assert verdict.status is Status.RELEASED
    assert verdict.trace.report(HRSReport) is None
    assert hrs_check(verdict).confidence is Confidence.NOT_ASKED
    assert all(e.stage != "hrs" for e in events)


def test_hrs_reads_an_answered_yes_no_question_whatever_careguard_decided() -> None:
    verdict, _ = run(Case(question=BLOCKED, patient=PATIENT))
    assert verdict.status is Status.BLOCKED  # a refusal shows nothing the model wrote
    assert verdict.trace.report(HRSReport) is not None


def test_screening_questions_stand_and_hrs_is_not_asked() -> None:
    verdict, events = run(Case(question=PREGNANT))
    assert verdict.status is Status.NEEDS_CONTEXT
    assert hrs_check(verdict).confidence is Confidence.NOT_ASKED
    assert [e.kind for e in events] == [EventKind.ROUTE, EventKind.TRIAGE, EventKind.DECISION]


def test_a_stage_that_raises_fails_closed() -> None:
    class Raising:
        def check(self, case: Case, events: EventSink = discard) -> Verdict:
            raise RuntimeError("answerer crashed")

    events: list[Event] = []
    verdict = FullPipeline(Raising(), Raising()).check(Case(question="Is it safe?"), events.append)
    assert verdict.status is Status.ESCALATED and verdict.answer is None
    assert verdict.trace.errors == ["the full pipeline raised RuntimeError: answerer crashed"]
    assert [e.kind for e in events] == [EventKind.ROUTE, EventKind.ERROR, EventKind.DECISION]


@pytest.mark.parametrize(
    ("question", "polar"),
    [
        ("Can I take ibuprofen while pregnant?", True),
        ("Is paracetamol safe for a 3 year old?", True),
        ("  should my son stop his inhaler?", True),
        ("Doesn't fiber help?", True),
        ("What foods are high in fiber?", False),
        ("How much ibuprofen can I take?", False),
        ("Isoniazid dosing for latent TB?", False),
    ],
)
def test_yes_no_questions_are_told_by_their_first_word(question: str, polar: bool) -> None:
    assert asks_yes_or_no(question) is polar

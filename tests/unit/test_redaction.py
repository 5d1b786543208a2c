"""Role-scoped verdicts and events, on the shapes the real HRS and CareGuard gates produce
(run over scripted fake models)."""

from __future__ import annotations

import json

import pytest

from medgate.events import ClaimsEvent, Event, EventKind
from medgate.records import Case, LabelSet, Status
from medgate.redaction import (
    ESCALATED_REASON,
    FAILED_STEP,
    Audience,
    ClientVerdict,
    EventView,
    client_event,
    client_verdict,
    client_view,
    released_safety,
    scope_event,
    scope_verdict,
)
from medgate.verdict import Verdict
from tests.unit.server.service_gate import (
    BLOCKED,
    BLOCKED_DRAFT,
    ESCALATING,
    GENERAL,
    HELD_REASONING,
    ORCHESTRATOR_RATIONALE,
    PATIENT,
    PREGNANT,
    RELEASED_DRAFT,
    real_gate,
)

#: Text the models wrote that the person who asked must never receive for a held-back case.
NEVER_TO_THE_ASKER = (
    HELD_REASONING,
    ORCHESTRATOR_RATIONALE,
    BLOCKED_DRAFT,
    "accurate and cautious",
)


def run(case: Case) -> tuple[Verdict, list[Event]]:
    events: list[Event] = []
    return real_gate().check(case, events.append), events


def asker_json(verdict: Verdict, events: list[Event]) -> str:
    """Everything the asker would receive: the verdict and every event but the decision."""
    shown = [client_event(e) for e in events if e.kind is not EventKind.DECISION]
    return json.dumps(
        {
            "verdict": client_verdict(verdict).model_dump(mode="json"),
            "events": [e.model_dump(mode="json") for e in shown if e is not None],
            "safety": released_safety(verdict, events),
        }
    )


ESCALATED = Case(question=ESCALATING, labels=LabelSet.YES_NO_MAYBE)
BLOCKED_CASE = Case(question=BLOCKED, patient=PATIENT)


def test_an_escalated_hrs_case_shows_the_asker_nothing_the_model_wrote() -> None:
    verdict, events = run(ESCALATED)
    assert verdict.status is Status.ESCALATED
    assert verdict.held_back is not None and verdict.held_back.reasoning == HELD_REASONING
    assert ORCHESTRATOR_RATIONALE in verdict.reason  # the gate's reason quotes the model
    shown = client_verdict(verdict)
    assert shown.answer is None
    assert shown.reason == ESCALATED_REASON
    assert shown.signals == verdict.signals  # the signals are the asker's to see
    assert shown.route == "hrs"
    text = asker_json(verdict, events)
    for secret in NEVER_TO_THE_ASKER:
        assert secret not in text
    assert "held_back" not in text and "distribution" not in text and "trajectory" not in text
    answer_events = [client_event(e) for e in events if e.kind is EventKind.ANSWER]
    assert [e.data for e in answer_events if e is not None] == [{}]  # a draft exists, no more


def test_a_blocked_careguard_case_shows_the_refusal_but_no_draft() -> None:
    verdict, events = run(BLOCKED_CASE)
    assert verdict.status is Status.BLOCKED
    assert verdict.held_back is not None and verdict.held_back.answer.startswith(BLOCKED_DRAFT)
    shown = client_verdict(verdict)
    assert shown.answer == verdict.answer  # the safe refusal is the gate's own text
    assert shown.reason == verdict.reason
    text = asker_json(verdict, events)
    for secret in NEVER_TO_THE_ASKER:
        assert secret not in text
    # The evaluators' scores and the claim counts are there, their quotes of the draft are not.
    safety = [client_event(e) for e in events if e.kind is EventKind.SAFETY]
    careguard = [e.data for e in safety if e is not None and e.stage == "careguard"]
    assert careguard[0] == {
        "assessments": {
            "sra": {"evaluator": "sra", "score": 4, "ran": True},
            "hra": {"evaluator": "hra", "score": 2, "ran": True},
        },
        "passed": False,
    }
    claims = [client_event(e) for e in events if e.kind is EventKind.CLAIMS]
    assert claims[0] is not None and claims[0].stage == "claims"
    assert claims[0].data["high_severity_count"] == 1 and "flags" not in claims[0].data
    assert released_safety(verdict, events) is None


def test_a_released_answer_comes_with_the_flags_of_that_answer() -> None:
    verdict, events = run(Case(question=GENERAL))
    assert verdict.status is Status.RELEASED
    shown = client_verdict(verdict)
    assert shown.answer is not None and shown.answer.startswith(RELEASED_DRAFT)
    assert shown.route == "careguard"
    safety = released_safety(verdict, events)
    assert safety is not None
    assert [(f["severity"], f["sentence"]) for f in safety["flags"]] == [
        ("medium", "A 2019 review found that eating more fiber lowers the risk of heart disease.")
    ]
    assert safety["disclaimer"] and safety["warnings"]


def test_flags_of_a_draft_that_was_not_released_never_reach_the_asker() -> None:
    verdict, events = run(Case(question=GENERAL))
    # A claims check of another draft emitted last: its flag quotes text never released.
    stale = next(e for e in events if isinstance(e, ClaimsEvent))
    flags = [stale.data.flags[0].model_copy(update={"sentence": BLOCKED_DRAFT})]
    other = stale.model_copy(update={"data": stale.data.model_copy(update={"flags": flags})})
    safety = released_safety(verdict, [*events, other])
    assert safety is not None and safety["flags"] == []


@pytest.mark.parametrize(
    "case",
    [Case(question=PREGNANT), Case(question="I want to end my life.")],
)
def test_guidance_the_gate_wrote_itself_is_shown(case: Case) -> None:
    verdict, events = run(case)
    assert verdict.status in (Status.NEEDS_CONTEXT, Status.BLOCKED)
    shown = client_verdict(verdict)
    assert shown.answer == verdict.answer and shown.reason == verdict.reason
    triage = next(client_event(e) for e in events if e.kind is EventKind.TRIAGE)
    assert triage is not None and set(triage.data) == {"category", "categories"}


def test_reviewers_see_everything() -> None:
    verdict, events = run(ESCALATED)
    assert scope_verdict(verdict, Audience.REVIEWER) is verdict
    for event in events:
        whole = scope_event(event, Audience.REVIEWER)
        assert whole is not None and whole.model_dump() == event.model_dump(mode="json")
    assert isinstance(scope_verdict(verdict, Audience.ASKER), ClientVerdict)


def test_the_asker_views_are_allow_lists() -> None:
    """A field a gate adds later stays hidden until it is named in medgate.redaction."""
    triage = EventView(
        kind=EventKind.TRIAGE,
        stage="careguard",
        data={"category": "general_information", "categories": ["general_information"], "new": "x"},
    )
    assert client_view(triage) == triage.model_copy(
        update={"data": {"category": "general_information", "categories": ["general_information"]}}
    )
    # A nested record under an allowed scalar key is not passed through either.
    nested = EventView(kind=EventKind.TRIAGE, stage="s", data={"category": {"draft": "text"}})
    assert client_view(nested) is not None and client_view(nested).data == {}  # type: ignore[union-attr]
    error = EventView(kind=EventKind.ERROR, stage="hrs", data={"error": f"bad {BLOCKED_DRAFT!r}"})
    assert client_view(error) == error.model_copy(update={"data": {"error": FAILED_STEP}})
    decision = EventView(kind=EventKind.DECISION, stage="hrs", data={"answer": "yes"})
    assert client_view(decision) is None  # the service builds the asker's decision itself
    assert set(ClientVerdict.model_fields) == {
        "status",
        "answer",
        "reason",
        "case",
        "signals",
        "route",
    }


def test_an_escalated_verdict_shows_no_answer_whatever_the_gate_put_there() -> None:
    verdict = Verdict(
        status=Status.ESCALATED, answer="yes", reason="flipped from 'yes'", case=ESCALATED
    )
    shown = client_verdict(verdict)
    assert (shown.answer, shown.reason) == (None, ESCALATED_REASON)

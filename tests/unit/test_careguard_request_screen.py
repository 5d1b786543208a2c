"""CareGuard with a request screen: a harmful score refuses before any model call; crisis first."""

from __future__ import annotations

import pytest

from medgate.careguard.categories import CRISIS_GUIDANCE, REQUEST_REFUSAL
from medgate.careguard.gate import CareGuardGate
from medgate.careguard.records import CareGuardReport, Outcome, RequestSafety, Triage
from medgate.claims import apply_disclaimer
from medgate.config import CareGuardConfig
from medgate.events import EventKind, TriageEvent
from medgate.records import Case, Status
from tests.unit.test_careguard_gate import SAFE_TEXT, Rig, verdict_json


class ScriptedScreen:
    """Scores every request with one fixed score; records what it was asked."""

    name = "scripted"

    def __init__(self, score: float, threshold: float = 0.8) -> None:
        self.score = score
        self.threshold = threshold
        self.asked: list[str] = []

    def assess(self, question: str) -> RequestSafety:
        self.asked.append(question)
        return RequestSafety(
            score=self.score,
            threshold=self.threshold,
            harmful=self.score >= self.threshold,
            artifact="scripted",
            seconds=0.01,
        )


class FailingScreen:
    name = "failing"

    def assess(self, question: str) -> RequestSafety:
        raise RuntimeError("encoder crashed")


def gate(rig: Rig, screen: object) -> CareGuardGate:
    plain = rig.gate()
    return CareGuardGate(
        plain.controller,
        plain.generator,
        plain.evaluators,
        CareGuardConfig(),
        screen=screen,  # type: ignore[arg-type]
    )


def model_calls(rig: Rig) -> int:
    return sum(
        len(m.calls)
        for m in (rig.controller_model, rig.generator_model, rig.sra_model, rig.hra_model)
    )


def test_a_harmful_score_refuses_before_any_model_call() -> None:
    rig = Rig()
    screen = ScriptedScreen(0.93)
    verdict = gate(rig, screen).check(
        Case(question="Draft a plan to bill patients for visits that never happened."),
        rig.events.append,
    )
    assert verdict.status is Status.BLOCKED
    assert verdict.answer == apply_disclaimer(REQUEST_REFUSAL)
    assert model_calls(rig) == 0
    report = verdict.trace.report(CareGuardReport)
    assert report is not None
    assert report.outcome is Outcome.REQUEST_REFUSED
    assert report.request_safety is not None and report.request_safety.score == 0.93
    assert report.triage is not None and report.triage.request_safety == report.request_safety
    assert report.triage.evidence[0].source == "classifier"
    assert "0.930" in verdict.reason and "0.800" in verdict.reason
    assert rig.kinds() == [EventKind.TRIAGE, EventKind.DECISION]
    triage_event = rig.events[0]
    assert isinstance(triage_event, TriageEvent)
    assert triage_event.data.request_safety is not None
    assert triage_event.data.request_safety.harmful
    assert any(t.stage == "careguard.request_safety" for t in verdict.trace.timings)


def test_crisis_guidance_comes_before_the_screen() -> None:
    rig = Rig()
    screen = ScriptedScreen(0.99)
    verdict = gate(rig, screen).check(Case(question="I want to die, which pills would work?"))
    assert verdict.answer == apply_disclaimer(CRISIS_GUIDANCE)
    assert screen.asked == []
    report = verdict.trace.report(CareGuardReport)
    assert report is not None and report.outcome is Outcome.CRISIS
    assert report.request_safety is None


def test_a_low_score_goes_on_to_triage_with_the_score_on_record() -> None:
    rig = Rig().drafts(SAFE_TEXT).sra(verdict_json(1)).hra(verdict_json(1))
    screen = ScriptedScreen(0.12)
    verdict = gate(rig, screen).check(
        Case(question="What foods are high in fiber?"), rig.events.append
    )
    assert verdict.status is Status.RELEASED
    assert screen.asked == ["What foods are high in fiber?"]
    report = verdict.trace.report(CareGuardReport)
    assert report is not None and report.triage is not None
    assert report.request_safety is not None and not report.request_safety.harmful
    assert report.triage.request_safety == report.request_safety
    triage = next(e.data for e in rig.events if e.kind is EventKind.TRIAGE)
    assert isinstance(triage, Triage) and triage.request_safety is not None


def test_a_screen_that_fails_blocks_with_the_failure_in_the_trace() -> None:
    rig = Rig()
    verdict = gate(rig, FailingScreen()).check(Case(question="What foods are high in fiber?"))
    assert verdict.status is Status.BLOCKED
    assert any("encoder crashed" in e for e in verdict.trace.errors)
    assert model_calls(rig) == 0


@pytest.mark.parametrize("enabled", [True, False])
def test_build_careguard_assembles_the_configured_screen(enabled: bool) -> None:
    from medgate.backends.pool import ModelPool
    from medgate.careguard.build import build_careguard
    from medgate.config import load_config

    config = load_config(model="fake", careguard={"request_safety": {"enabled": enabled}})
    built = build_careguard(config, ModelPool(config))
    assert (built.screen is not None) is enabled

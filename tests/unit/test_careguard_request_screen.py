"""CareGuard with a request screen: a harmful score refuses before any model call; crisis first."""

from __future__ import annotations

import pytest

from medgate.careguard.categories import CRISIS_GUIDANCE, REQUEST_REFUSAL
from medgate.careguard.gate import CareGuardGate
from medgate.careguard.records import CareGuardReport, Outcome, RequestSafety, Triage
from medgate.careguard.request_safety import ReplyScreen
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


def gate(rig: Rig, screen: object, reply: ReplyScreen | None = None) -> CareGuardGate:
    plain = rig.gate()
    return CareGuardGate(
        plain.controller,
        plain.generator,
        plain.evaluators,
        CareGuardConfig(),
        screen=screen,  # type: ignore[arg-type]
        reply_screen=reply,
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


class TextScreen(ScriptedScreen):
    """Scores each text by whether it holds a marker word: the request and each draft differ."""

    name = "text"

    def __init__(self, marker: str, threshold: float = 0.8) -> None:
        super().__init__(0.1, threshold)
        self.marker = marker

    def assess(self, question: str) -> RequestSafety:
        self.score = 0.9 if self.marker in question else 0.1
        return super().assess(question)


def reply_gate(rig: Rig, screen: object, threshold: float = 0.5) -> CareGuardGate:
    return gate(rig, screen, ReplyScreen(threshold, "artifact"))


HARMFUL_DRAFT = "To share the diagnosis with the employer, follow these steps: call them."


def test_a_draft_that_reads_as_help_with_harm_refuses_the_request() -> None:
    # The request passes its screen; the first draft says what it helps to do.
    rig = Rig().drafts(HARMFUL_DRAFT).sra(verdict_json(1)).hra(verdict_json(1))
    screen = TextScreen("employer")
    question = "Outline how to inform others about a patient's condition."
    verdict = reply_gate(rig, screen).check(Case(question=question), rig.events.append)
    assert verdict.status is Status.BLOCKED
    assert verdict.answer == apply_disclaimer(REQUEST_REFUSAL)
    assert screen.asked == [question, HARMFUL_DRAFT]
    report = verdict.trace.report(CareGuardReport)
    assert report is not None and report.outcome is Outcome.REPLY_REFUSED
    (only,) = report.rounds
    assert only.reply_safety is not None and only.reply_safety.harmful
    assert only.reply_safety.threshold == 0.5 and only.reply_safety.score == 0.9
    assert only.assessments == {} and not only.passed
    # Refused before any judge read the draft; the draft is held back, never shown.
    assert rig.sra_model.calls == [] and rig.hra_model.calls == []
    assert verdict.held_back is not None and "employer" in verdict.held_back.answer
    assert "employer" not in (verdict.answer or "")
    assert "0.900" in verdict.reason and "0.500" in verdict.reason
    assert any(t.stage == "careguard.round0.reply_screen" for t in verdict.trace.timings)


def test_a_later_draft_is_screened_too() -> None:
    # The judges hold the first draft back (HRA 5); the second reads as help with harm.
    rig = Rig().drafts(SAFE_TEXT, HARMFUL_DRAFT).sra(verdict_json(1), verdict_json(1))
    rig = rig.hra(verdict_json(5), verdict_json(1))
    verdict = reply_gate(rig, TextScreen("employer")).check(
        Case(question="What foods are high in fiber?")
    )
    report = verdict.trace.report(CareGuardReport)
    assert report is not None and report.outcome is Outcome.REPLY_REFUSED
    assert [r.reply_safety.harmful for r in report.rounds if r.reply_safety] == [False, True]
    assert verdict.status is Status.BLOCKED


def test_a_harmless_draft_is_released_with_its_reply_score_on_record() -> None:
    rig = Rig().drafts(SAFE_TEXT).sra(verdict_json(1)).hra(verdict_json(1))
    verdict = reply_gate(rig, TextScreen("employer")).check(
        Case(question="What foods are high in fiber?")
    )
    assert verdict.status is Status.RELEASED
    report = verdict.trace.report(CareGuardReport)
    assert report is not None
    (only,) = report.rounds
    assert only.reply_safety is not None and not only.reply_safety.harmful


def test_a_reply_screen_that_fails_blocks() -> None:
    class FailsOnDrafts(TextScreen):
        def assess(self, question: str) -> RequestSafety:
            if self.asked:
                raise RuntimeError("encoder crashed on the draft")
            return super().assess(question)

    rig = Rig().drafts(SAFE_TEXT).sra(verdict_json(1)).hra(verdict_json(1))
    verdict = reply_gate(rig, FailsOnDrafts("employer")).check(
        Case(question="What foods are high in fiber?")
    )
    assert verdict.status is Status.BLOCKED
    assert any("encoder crashed on the draft" in e for e in verdict.trace.errors)
    assert verdict.answer is not None and SAFE_TEXT not in verdict.answer


def test_without_a_request_screen_no_draft_is_screened() -> None:
    rig = Rig().drafts(HARMFUL_DRAFT).sra(verdict_json(1)).hra(verdict_json(1))
    verdict = gate(rig, None, ReplyScreen(0.5, "artifact")).check(
        Case(question="What foods are high in fiber?")
    )
    report = verdict.trace.report(CareGuardReport)
    assert report is not None and report.outcome is not Outcome.REPLY_REFUSED
    assert all(r.reply_safety is None for r in report.rounds)

"""CareGuard's paths for questions asking whether to do something, on scripted fake models: the
stance read, the direct "no", endorsements held back, a yes released only with every vote, the
release checks in the trace, and the general answer that opens the screening questions."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from medgate.backends.base import Completion
from medgate.backends.fake import FakeModel
from medgate.careguard import Controller, Evaluators, Generator, HallucinationJudge, SafetyJudge
from medgate.careguard import gate as gate_module
from medgate.careguard.categories import CRISIS_GUIDANCE, HARMFUL_REFUSAL
from medgate.careguard.gate import CareGuardGate
from medgate.careguard.records import Outcome
from medgate.careguard.release_checks import CheckName
from medgate.careguard.safe_answers import (
    DANGEROUS_PRACTICE_GUIDANCE,
    HELD_FOR_REVIEW,
    conservative_answer,
)
from medgate.careguard.stance import Lean, StanceReader, lean_of
from medgate.claims import apply_disclaimer
from medgate.config import CareGuardConfig, HRSConfig
from medgate.errors import ModelError
from medgate.records import Case, Status
from tests.unit.stage_reports import careguard_report
from tests.unit.test_careguard_gate import completion, verdict_json

BURN = "Can I put butter on a kitchen burn to help it heal?"
FIRM_NO = {"yes": 0.05, "no": 0.92, "maybe": 0.03}
FIRM_YES = {"yes": 0.94, "no": 0.03, "maybe": 0.03}


def stance_completion(dist: dict[str, float]) -> Completion:
    return Completion(
        text="Reasoning.", token_logprobs=[-0.1] * 10, label_probs=dist, label_mass=0.95
    )


@dataclass(frozen=True)
class Safety:
    score: float
    threshold: float = 0.5
    harmful: bool = False
    artifact: str = "test"


class StanceRig:
    def __init__(self, stance: dict[str, float] | BaseException | None = None) -> None:
        triage = '{"category": "general_information", "evidence": "burn"}'
        self.controller = FakeModel("controller").script_chat(
            "Patient message", triage, repeat=True
        )
        self.generator = FakeModel("generator")
        self.stance = FakeModel("stance")
        if stance is not None:
            reply = stance if isinstance(stance, BaseException) else stance_completion(stance)
            self.stance.script_completion("Question:", reply, repeat=True)
        self.sra = FakeModel("sra").script_chat("Answer to review", verdict_json(1), repeat=True)
        self.hra = FakeModel("hra").script_chat("Answer to review", verdict_json(1), repeat=True)

    def drafts(self, text: str) -> StanceRig:
        self.generator.script_completion("Patient question", completion(text), repeat=True)
        return self

    def gate(self, **config: object) -> CareGuardGate:
        cfg = CareGuardConfig(**config)  # type: ignore[arg-type]
        reader = StanceReader(
            self.stance,
            HRSConfig(),
            min_yes=cfg.stance_min_yes,
            min_no=cfg.stance_min_no,
            max_entropy=cfg.stance_max_entropy,
        )
        return CareGuardGate(
            Controller(self.controller),
            Generator(self.generator),
            Evaluators([SafetyJudge(self.sra), HallucinationJudge(self.hra)]),
            cfg,
            stance=reader,
        )


def test_a_firm_no_to_a_practice_gets_the_fixed_no_without_screening_or_drafts() -> None:
    rig = StanceRig(FIRM_NO)
    question = "Can I give my toddler one of my adult sleeping tablets?"  # child + medicine
    verdict = rig.gate().check(Case(question=question))
    assert verdict.status is Status.BLOCKED
    assert verdict.answer == apply_disclaimer(DANGEROUS_PRACTICE_GUIDANCE)
    report = careguard_report(verdict)
    assert report.outcome is Outcome.DANGEROUS_PRACTICE
    assert report.stance is not None and report.stance.lean is Lean.CONFIDENT_NO
    assert report.triage is not None and report.triage.questions  # screening was not shown
    assert rig.generator.calls == []


def test_an_endorsement_is_never_released_without_a_request_safety_score() -> None:
    rig = StanceRig(FIRM_YES).drafts("Yes, you can put butter on a burn. It is safe.")
    verdict = rig.gate(max_refinements=1).check(Case(question=BURN))
    report = careguard_report(verdict)
    assert report.outcome is Outcome.CONSERVATIVE  # both judges passed every draft
    assert verdict.answer == apply_disclaimer(conservative_answer(report.triage.categories, True))
    for rnd in report.rounds:
        assert [f.check for f in rnd.release_findings] == [CheckName.RISKY_ENDORSEMENT]
        assert rnd.yes_release is not None and not rnd.yes_release.granted
        assert rnd.yes_release.votes == {
            "stance": True,
            "request_safety": False,
            "sra": True,
            "no_risky_category": True,
        }
    assert verdict.held_back is not None and "butter" in verdict.held_back.answer


def test_a_yes_is_released_when_stance_request_safety_and_sra_agree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gate_module, "request_safety_of", lambda triage: Safety(score=0.1))
    draft = "Yes, a short walk after a meal is fine for most people; ask your doctor if unsure."
    rig = StanceRig(FIRM_YES).drafts(draft)
    verdict = rig.gate().check(Case(question="Should I go for a walk after dinner?"))
    assert verdict.status is Status.RELEASED
    (rnd,) = careguard_report(verdict).rounds
    assert rnd.yes_release is not None and rnd.yes_release.granted
    assert rnd.release_findings == []


def test_a_stance_that_fails_to_read_blocks_nothing_and_grants_nothing() -> None:
    rig = StanceRig(ModelError("no distribution")).drafts("Yes, you can.")
    verdict = rig.gate(max_refinements=0).check(Case(question=BURN))
    report = careguard_report(verdict)
    assert report.stance is not None and report.stance.lean is Lean.NOT_READ
    assert report.stance.error is not None and "no distribution" in report.stance.error
    assert report.outcome is Outcome.CONSERVATIVE
    assert not report.rounds[0].yes_release or not report.rounds[0].yes_release.granted


def test_crisis_guidance_still_comes_first_and_reads_no_stance() -> None:
    rig = StanceRig(FIRM_NO)
    verdict = rig.gate().check(Case(question="Can I take all my pills at once to end my life?"))
    assert verdict.answer == apply_disclaimer(CRISIS_GUIDANCE)
    assert careguard_report(verdict).stance is None
    assert rig.stance.calls == [] and rig.generator.calls == []


def test_a_request_the_rules_mark_harmful_is_refused_before_any_draft() -> None:
    draft = "Certainly. To do it without him knowing, follow these steps: 1. Crush. 2. Mix."
    rig = StanceRig(FIRM_YES).drafts(draft)
    question = "Can I secretly give my husband sedatives without him knowing?"
    verdict = rig.gate(max_refinements=0).check(Case(question=question))
    assert verdict.status is Status.BLOCKED
    assert verdict.answer == apply_disclaimer(HARMFUL_REFUSAL)
    report = careguard_report(verdict)
    assert report.outcome is Outcome.REQUEST_REFUSED
    assert report.stance is None and rig.stance.calls == []
    assert rig.generator.calls == [] and report.rounds == []
    assert "the rules mark the request harmful" in verdict.reason


def test_a_draft_reciting_its_instructions_is_not_released() -> None:
    rig = StanceRig()
    rules = (
        "Give general information only; never diagnose the person and never prescribe. "
        "Never state a dose, amount, frequency or schedule for any medicine."
    )
    rig.drafts(rules)
    verdict = rig.gate(max_refinements=0).check(Case(question="What does cholesterol do?"))
    assert verdict.status is Status.BLOCKED
    (rnd,) = careguard_report(verdict).rounds
    assert [f.check for f in rnd.release_findings] == [CheckName.INSTRUCTION_ECHO]


def test_the_screening_questions_come_with_a_general_safe_answer() -> None:
    rig = StanceRig({"yes": 0.4, "no": 0.35, "maybe": 0.25})
    verdict = rig.gate().check(Case(question="Can I take ibuprofen while pregnant?"))
    assert verdict.status is Status.NEEDS_CONTEXT
    assert verdict.answer is not None
    assert verdict.answer.startswith("I can't say whether this is right for you")
    assert "midwife, obstetrician or pharmacist" in verdict.answer
    assert "trimester" in verdict.answer.lower()  # the questions follow
    assert rig.generator.calls == []


def test_the_sra_judge_alone_does_not_block_a_benign_general_question(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = StanceRig().drafts("Cholesterol is a fat the body uses to build cells.")
    rig.sra = FakeModel("sra").script_chat("Answer to review", verdict_json(4), repeat=True)
    question = Case(question="What is cholesterol?")
    assert rig.gate(max_refinements=0).check(question).status is Status.BLOCKED
    monkeypatch.setattr(gate_module, "request_safety_of", lambda triage: Safety(score=0.1))
    verdict = rig.gate(max_refinements=0).check(question)
    assert verdict.status is Status.RELEASED
    (rnd,) = careguard_report(verdict).rounds
    assert rnd.waiver is not None and rnd.sra.score == 4
    # The reason never calls the waived score within a threshold, and says why it did not count.
    assert verdict.reason.startswith("HRA ")
    assert "is within the release threshold" in verdict.reason
    assert f"; SRA 4 not counted ({rnd.waiver})" in verdict.reason


def test_the_sra_judge_counts_for_a_request_scored_benign_but_near_harmful(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = StanceRig().drafts("Cholesterol is a fat the body uses to build cells.")
    rig.sra = FakeModel("sra").script_chat("Answer to review", verdict_json(4), repeat=True)
    # Under the screen's threshold (0.5) but at or above careguard.sra_waiver_below (0.15).
    monkeypatch.setattr(gate_module, "request_safety_of", lambda triage: Safety(score=0.3))
    verdict = rig.gate(max_refinements=0).check(Case(question="What is cholesterol?"))
    assert verdict.status is Status.BLOCKED
    (rnd,) = careguard_report(verdict).rounds
    assert rnd.waiver is None and rnd.sra.score == 4


def test_a_draft_that_passes_for_a_request_the_screen_is_unsure_of_goes_to_a_clinician(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    draft = "Eye drops in a drink cause mild irritation at most."
    rig = StanceRig().drafts(draft)
    monkeypatch.setattr(gate_module, "request_safety_of", lambda triage: Safety(score=0.31))
    verdict = rig.gate(max_refinements=0).check(Case(question="What do eye drops do in a drink?"))
    assert verdict.status is Status.ESCALATED
    assert careguard_report(verdict).outcome is Outcome.REVIEW
    # The reader sees the holding message, never the draft; a clinician sees the draft.
    assert verdict.answer == apply_disclaimer(HELD_FOR_REVIEW)
    assert verdict.held_back is not None and verdict.held_back.answer.startswith(draft)
    assert "draft 0 passed every check" in verdict.reason
    assert "0.310" in verdict.reason and "held back for a clinician" in verdict.reason
    (rnd,) = careguard_report(verdict).rounds
    assert rnd.passed


def test_drafts_for_requests_the_screen_is_unsure_of_can_be_released_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    draft = "Cholesterol is a fat the body uses to build cells."
    monkeypatch.setattr(gate_module, "request_safety_of", lambda triage: Safety(score=0.31))
    verdict = (
        StanceRig()
        .drafts(draft)
        .gate(max_refinements=0, review_from=None)
        .check(Case(question="What is cholesterol?"))
    )
    assert verdict.status is Status.RELEASED
    assert verdict.answer is not None and verdict.answer.startswith(draft)


@pytest.mark.parametrize(
    ("dist", "entropy", "mass", "lean"),
    [
        (FIRM_YES, 0.3, 0.9, Lean.CONFIDENT_YES),
        (FIRM_NO, 0.3, 0.9, Lean.CONFIDENT_NO),
        (FIRM_NO, 0.9, 0.9, Lean.UNSURE),  # too much entropy
        (FIRM_NO, 0.3, 0.2, Lean.UNSURE),  # the labels held little mass
        ({"yes": 0.6, "no": 0.3, "maybe": 0.1}, 0.5, 0.9, Lean.UNSURE),
    ],
)
def test_the_lean_needs_a_label_above_its_minimum_low_entropy_and_label_mass(
    dist: dict[str, float], entropy: float, mass: float, lean: Lean
) -> None:
    got = lean_of(dist, entropy, mass, min_yes=0.8, min_no=0.7, max_entropy=0.8, min_label_mass=0.5)
    assert got is lean


def test_the_stance_is_read_once_per_question_and_without_a_model_not_at_all() -> None:
    model = FakeModel("stance").script_completion("Question:", stance_completion(FIRM_NO))
    reader = StanceReader(model, HRSConfig(), min_yes=0.8, min_no=0.7, max_entropy=0.8)
    first, again = reader.read(BURN), reader.read(BURN)
    assert first is again and len(model.calls) == 1
    blind = StanceReader(None, HRSConfig(), min_yes=0.8, min_no=0.7, max_entropy=0.8)
    assert blind.read(BURN).lean is Lean.NOT_READ


def test_a_sentence_a_reviewer_quoted_is_not_an_echo_when_the_next_draft_keeps_it() -> None:
    answer = "Adults usually need seven to nine hours of sleep every night to stay well rested."
    rig = StanceRig().drafts(answer)
    quoted = f'The answer "{answer}" needs checking.'
    rig.hra = FakeModel("hra").script_chat(
        "Answer to review", verdict_json(4, quoted), verdict_json(1), repeat=True
    )
    verdict = rig.gate(max_refinements=1).check(Case(question="How much sleep do adults need?"))
    assert verdict.status is Status.REFINED
    first, second = careguard_report(verdict).rounds
    assert not first.passed and second.passed
    assert second.release_findings == []


def test_the_belief_check_holds_a_yes_to_a_popular_belief_only_when_switched_on() -> None:
    question = Case(question="Is it true that eating carrots helps you see in the dark?")
    rig = StanceRig().drafts("Yes, the vitamin A in them sharpens night vision.")
    assert rig.gate(max_refinements=0).check(question).status is Status.RELEASED
    verdict = rig.gate(max_refinements=0, hold_belief_yes=True).check(question)
    assert verdict.status is Status.BLOCKED
    (rnd,) = careguard_report(verdict).rounds
    assert [f.check for f in rnd.release_findings] == [CheckName.AFFIRMED_BELIEF]
    assert "release checks failed: affirmed_belief" in verdict.reason

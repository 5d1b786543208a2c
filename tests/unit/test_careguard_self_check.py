"""The self_check judge: the generator's own P(a false statement) in its draft, read from its
yes/no distribution, holds a draft back at the threshold and fails closed."""

from __future__ import annotations

import pytest

from medgate.backends.base import Completion
from medgate.backends.fake import FakeModel
from medgate.backends.pool import ModelPool
from medgate.careguard import HallucinationJudge, SafetyJudge
from medgate.careguard.categories import RiskCategory
from medgate.careguard.evaluators import JUDGES, Evaluators, JudgeOutcome
from medgate.careguard.gate import CareGuardGate
from medgate.careguard.generator import Generator
from medgate.careguard.records import CareGuardReport, Draft, Triage
from medgate.careguard.self_check import (
    ERROR_STATEMENT_QUESTION,
    FEEDBACK,
    QUESTION,
    STATEMENT_QUESTION,
    SelfCheckJudge,
    read_draft,
    read_self_check,
    self_check_messages,
    statement_messages,
)
from medgate.careguard.triage import Controller
from medgate.config import SELF_CHECK_THRESHOLDS, CareGuardConfig, load_config
from medgate.errors import ConfigError, ModelError
from medgate.eval.care_run import ablated
from medgate.records import Case, Status
from tests.unit.hrs_helpers import opening_reading
from tests.unit.test_careguard_gate import SAFE_TEXT, Rig, verdict_json

QUESTION_TEXT = "What does the gallbladder do?"


def reading(p_no: float | None, mass: float | None = 0.97) -> Completion:
    probs = None if p_no is None else {"yes": 1.0 - p_no, "no": p_no}
    return opening_reading(probs, mass, prompt_tokens=42)


def judge(*replies: Completion | BaseException, threshold: float = 0.3) -> SelfCheckJudge:
    model = FakeModel("writer").script_completion(QUESTION, *replies, repeat=True)
    return SelfCheckJudge(model, p_threshold=threshold)


def triage() -> Triage:
    general = [RiskCategory.GENERAL]
    return Triage(category=general[0], categories=general)


def test_the_draft_is_read_last_after_the_fixed_question() -> None:
    system, user = self_check_messages(QUESTION_TEXT, "It stores bile.")
    assert system.role == "system" and "yes or no" in system.content
    assert user.content.startswith(QUESTION)
    assert user.content.endswith(f"Question: {QUESTION_TEXT}\n\nAnswer: It stores bile.")


def test_the_reading_is_p_no_and_the_label_mass() -> None:
    model = FakeModel().script_completion(QUESTION, reading(0.25, 0.9))
    p_error, mass, tokens = read_self_check(model, QUESTION_TEXT, "It stores bile.")
    assert p_error == pytest.approx(0.25) and mass == pytest.approx(0.9) and tokens == 42


def test_no_distribution_is_an_error() -> None:
    model = FakeModel().script_completion(QUESTION, reading(None, None))
    with pytest.raises(ModelError):
        read_self_check(model, QUESTION_TEXT, "It stores bile.")


@pytest.mark.parametrize(
    ("p_no", "score", "feedback"),
    [(0.05, 1, False), (0.2, 2, False), (0.3, 3, True), (0.99, 5, True)],
)
def test_a_draft_passes_exactly_below_the_threshold(
    p_no: float, score: int, feedback: bool
) -> None:
    j = judge(reading(p_no))
    draft = Draft(text="It stores bile.")
    asked = j.ask(Case(question=QUESTION_TEXT), triage(), draft)
    assert asked is not None
    reply, usage = asked
    assessment = j.assess(JudgeOutcome(reply=reply, usage=usage), triage(), draft, 0)
    assert assessment.score == score and (assessment.score <= j.threshold) == (p_no < 0.3)
    assert assessment.components["p_error"] == pytest.approx(p_no)
    assert assessment.components["threshold"] == 0.3
    assert (assessment.justification == FEEDBACK) is feedback
    assert usage.role == "self_check" and usage.prompt_tokens == 42


def test_a_failed_reading_scores_five_with_the_reason() -> None:
    j = judge(reading(None, None))
    gate = CareGuardGate(
        Controller(Rig().controller_model),
        Generator(FakeModel("generator")),
        Evaluators([j]),
        CareGuardConfig(max_refinements=0),
    )
    outcome = JudgeOutcome(error="ModelError: no distribution")
    assessment = j.assess(outcome, triage(), Draft(text="x"), 0)
    assert assessment.score == 5 and assessment.judge_score is None
    assert assessment.error == "ModelError: no distribution"
    assert gate.evaluators.models == {"self_check": "writer"}


def test_a_threshold_outside_zero_one_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"self_check\.threshold"):
        SelfCheckJudge(FakeModel(), p_threshold=1.0)


def test_the_gate_refines_a_draft_its_writer_doubts_and_releases_the_next() -> None:
    rig = Rig().drafts("The gallbladder makes insulin.", SAFE_TEXT)
    rig.sra(verdict_json(1)).hra(verdict_json(1))

    def by_draft(messages: object) -> Completion:
        text = "\n".join(m.content for m in messages)  # type: ignore[attr-defined]
        return reading(0.8 if "insulin" in text else 0.1)

    writer = rig.generator_model.script_completion(QUESTION, by_draft, repeat=True)
    gate = CareGuardGate(
        Controller(rig.controller_model),
        Generator(rig.generator_model),
        Evaluators(
            [
                SafetyJudge(rig.sra_model),
                HallucinationJudge(rig.hra_model),
                SelfCheckJudge(writer, p_threshold=0.3),
            ]
        ),
        CareGuardConfig(max_refinements=1),
    )
    verdict = gate.check(Case(question=QUESTION_TEXT))
    assert verdict.status is Status.REFINED
    report = verdict.trace.report(CareGuardReport)
    assert report is not None
    first, second = report.rounds
    assert first.assessments["self_check"].score == 5 and not first.passed
    assert second.assessments["self_check"].score == 1 and second.passed
    assert FEEDBACK in rig.generator_prompts[1]


def test_it_is_registered_and_needs_a_white_box_generator() -> None:
    config = load_config(model="fake", careguard={"self_check": {"threshold": 0.4}})
    built = JUDGES.load("self_check")(config, ModelPool(config))
    assert isinstance(built, SelfCheckJudge) and built.p_threshold == 0.4


def test_a_black_box_generator_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(model="fake")
    pool = ModelPool(config)

    class BlackBox:
        name = "served"

    monkeypatch.setattr(pool, "get", lambda spec, role: BlackBox())
    with pytest.raises(ConfigError, match="token probabilities"):
        JUDGES.load("self_check")(config, pool)


def by_statement(doubts: dict[str, float]) -> FakeModel:
    """A writer whose P(no) for a statement is ``doubts`` of the first key it contains (0.05
    otherwise), and whose whole-answer reading is 0.5."""

    def read(messages: object) -> Completion:
        text = messages[-1].content  # type: ignore[index]
        statement = text.rsplit("Statement: ", 1)[-1]
        p = next((v for k, v in doubts.items() if k in statement), 0.05)
        return opening_reading({"yes": 1 - p, "no": p}, 0.9 if p < 0.5 else 0.8, prompt_tokens=30)

    model = FakeModel("writer").script_completion(STATEMENT_QUESTION, read, repeat=True)
    return model.script_completion(QUESTION, reading(0.5), repeat=True)


def test_a_statement_is_read_after_the_question() -> None:
    system, user = statement_messages(QUESTION_TEXT, "It stores bile.")
    assert system == self_check_messages(QUESTION_TEXT, "x")[0]
    assert user.content.startswith(STATEMENT_QUESTION)
    assert user.content.endswith(f"Question: {QUESTION_TEXT}\n\nStatement: It stores bile.")


def test_statements_score_the_mean_and_name_the_most_doubted() -> None:
    model = by_statement({"insulin": 0.8})
    read = read_draft(
        model,
        QUESTION_TEXT,
        "It stores bile. It makes insulin. It sits under the liver.",
        "statements",
    )
    assert read.p_error == pytest.approx((0.05 + 0.8 + 0.05) / 3)
    assert read.doubted == "It makes insulin."
    assert read.readings == 3 and read.prompt_tokens == 90
    assert read.label_mass == pytest.approx(0.8)


def test_a_draft_without_a_worded_sentence_is_read_whole() -> None:
    read = read_draft(by_statement({}), QUESTION_TEXT, "...", "statements")
    assert read.p_error == pytest.approx(0.5) and read.readings == 1 and read.doubted is None


def test_the_answer_reading_reads_the_draft_once() -> None:
    read = read_draft(by_statement({}), QUESTION_TEXT, "It stores bile. It is small.", "answer")
    assert read.p_error == pytest.approx(0.5) and read.readings == 1 and read.doubted is None


def test_a_held_back_draft_is_told_which_statement_its_writer_doubts() -> None:
    j = SelfCheckJudge(by_statement({"insulin": 0.9}), p_threshold=0.2, reading="statements")
    draft = Draft(text="It stores bile. It makes insulin.")
    asked = j.ask(Case(question=QUESTION_TEXT), triage(), draft)
    assert asked is not None
    reply, usage = asked
    assert reply.score >= 3
    assert reply.justification.startswith(FEEDBACK)
    assert reply.justification.endswith('"It makes insulin."')
    assessment = j.assess(JudgeOutcome(reply=reply, usage=usage), triage(), draft, 0)
    assert assessment.components["readings"] == 2
    assert usage.completion_tokens == 2 and usage.prompt_tokens == 60


def test_a_draft_whose_statements_all_pass_is_released_without_a_name() -> None:
    j = SelfCheckJudge(by_statement({}), p_threshold=0.2, reading="statements")
    asked = j.ask(Case(question=QUESTION_TEXT), triage(), Draft(text="It stores bile."))
    assert asked is not None
    assert asked[0].score <= 2 and '"' not in asked[0].justification


@pytest.mark.parametrize("reading", ["statements", "answer"])
def test_the_threshold_defaults_to_the_readings_own(reading: str) -> None:
    config = load_config(model="fake", careguard={"self_check": {"reading": reading}})
    built = JUDGES.load("self_check")(config, ModelPool(config))
    assert isinstance(built, SelfCheckJudge) and built.reading == reading
    assert built.p_threshold == SELF_CHECK_THRESHOLDS[reading]


def test_statements_are_the_default_reading() -> None:
    assert CareGuardConfig().self_check.reading == "statements"
    assert CareGuardConfig().self_check.p_threshold == SELF_CHECK_THRESHOLDS["statements"]


def test_the_no_error_reading_asks_whether_a_statement_has_an_error_and_reads_its_no() -> None:
    def read(messages: object) -> Completion:
        statement = messages[-1].content.rsplit("Statement: ", 1)[-1]  # type: ignore[index]
        p_no = 0.7 if "insulin" in statement else 0.1
        return opening_reading({"yes": 1 - p_no, "no": p_no}, 0.9, prompt_tokens=30)

    model = FakeModel("writer").script_completion(ERROR_STATEMENT_QUESTION, read, repeat=True)
    read_ = read_draft(
        model, QUESTION_TEXT, "It stores bile. It makes insulin.", "statements_no_error"
    )
    assert read_.p_error == pytest.approx((0.1 + 0.7) / 2)
    assert read_.doubted == "It makes insulin." and read_.readings == 2
    _, user = statement_messages(QUESTION_TEXT, "It makes insulin.", ERROR_STATEMENT_QUESTION)
    assert user.content.startswith(ERROR_STATEMENT_QUESTION)


def test_the_no_error_configuration_reads_that_way_at_its_own_cut() -> None:
    config = ablated(load_config(), "with_self_check_no_error").careguard
    assert "self_check" in config.judges
    assert config.self_check.reading == "statements_no_error"
    assert config.self_check.p_threshold == SELF_CHECK_THRESHOLDS["statements_no_error"]

"""The trim of doubted sentences (medgate.careguard.trimming) and its place in the gate."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest
from scripts import opening_support, trim_doubted

from medgate.backends.base import ChatMessage, Completion
from medgate.backends.fake import FakeModel
from medgate.backends.pool import ModelPool
from medgate.careguard import HallucinationJudge, SafetyJudge
from medgate.careguard import gate as gate_module
from medgate.careguard.build import build_careguard
from medgate.careguard.categories import RiskCategory
from medgate.careguard.evaluators import Evaluators
from medgate.careguard.gate import CareGuardGate, trims
from medgate.careguard.generator import Generator
from medgate.careguard.records import CareGuardReport, Triage
from medgate.careguard.self_check import STATEMENT_QUESTION, SUPPORT_QUESTION
from medgate.careguard.triage import Controller
from medgate.careguard.trimming import (
    HEADER_ONLY,
    OPENING_DOUBTED,
    SentenceTrimmer,
    decide,
    header_only,
    without,
)
from medgate.config import CareGuardConfig, MedgateConfig, OpeningDraw, load_config
from medgate.errors import ConfigError, ModelError
from medgate.records import Case, Status
from tests.unit.hrs_helpers import opening_reading
from tests.unit.test_careguard_gate import Rig, verdict_json
from tests.unit.test_careguard_stance_paths import Safety

QUESTION_TEXT = "What is serotonin?"
LEAD = "Serotonin is a chemical messenger that helps regulate mood and sleep."
WRONG = "It is made in the brain and carried in the blood to the rest of the body."
RIGHT = "Most of it is made in the gut."
REFER = "If your mood is low for weeks, talk to your doctor."
#: P(no) the fake generator gives each statement it is asked about.
DOUBT = {LEAD: 0.6, WRONG: 0.7, RIGHT: 0.1, REFER: 0.9}


def by_statement(messages: Sequence[ChatMessage]) -> Completion:
    asked = messages[-1].content.rsplit("Statement: ", 1)[1]
    p_no = DOUBT.get(asked)
    if p_no is None:
        return opening_reading(None, None)
    return opening_reading({"yes": 1.0 - p_no, "no": p_no}, 0.98, prompt_tokens=30)


#: P(no) that a sample supports each opening the fake generator is asked about.
UNSUPPORTED = {LEAD: 0.9, RIGHT: 0.1}


def by_support(messages: Sequence[ChatMessage]) -> Completion:
    p_no = UNSUPPORTED[messages[-1].content.rsplit("Statement: ", 1)[1]]
    return opening_reading({"yes": 1.0 - p_no, "no": p_no}, 0.97, prompt_tokens=50)


def writer() -> FakeModel:
    return (
        FakeModel("writer")
        .script_completion(STATEMENT_QUESTION, by_statement, repeat=True)
        .script_completion(SUPPORT_QUESTION, by_support, repeat=True)
    )


def test_each_later_sentence_is_kept_or_left_out_by_its_reading() -> None:
    assert decide(0, WRONG, 0.99, 0.2) == "lead"
    assert decide(1, REFER, 0.99, 0.2) == "referral"
    assert decide(1, RIGHT, 0.2, 0.2) == "trusted"
    assert decide(1, WRONG, 0.21, 0.2) == "doubted"


def test_the_doubted_sentences_are_cut_from_the_text_and_recorded() -> None:
    trimming = SentenceTrimmer(writer(), 0.2).trim(
        QUESTION_TEXT, f"{LEAD} {WRONG} {RIGHT}\n\n{REFER}"
    )
    assert trimming.text == f"{LEAD} {RIGHT}\n\n{REFER}"
    assert [s.why for s in trimming.sentences] == ["lead", "doubted", "trusted", "referral"]
    assert [s.p_error for s in trimming.sentences] == pytest.approx([0.6, 0.7, 0.1, 0.9])
    assert trimming.dropped == 1 and not trimming.header_only
    assert trimming.usage is not None and trimming.usage.prompt_tokens == 120


def test_a_list_item_left_out_takes_its_marker_line_with_it() -> None:
    text = f"{LEAD}\n\n- {WRONG}\n- {RIGHT}\n\n\n{REFER}"
    assert without(text, [(text.index(WRONG), text.index(WRONG) + len(WRONG))]) == (
        f"{LEAD}\n\n- {RIGHT}\n\n{REFER}"
    )


def test_only_an_opening_that_introduces_a_list_is_nothing_to_release() -> None:
    assert header_only(["It does three things:"], 3)
    assert not header_only(["It does three things."], 3)
    assert not header_only(["It does three things:"], 1)


@pytest.mark.parametrize(
    "opening",
    [
        "Eczema and psoriasis are both skin conditions, but they differ in several ways.",
        "Snoring can happen for many different reasons.",
        "Hair turns grey with age for a number of reasons",
    ],
)
def test_an_opening_that_only_announces_its_answer_is_not_released_alone(opening: str) -> None:
    assert header_only([opening], 3)
    assert not header_only([opening], 1)


@pytest.mark.parametrize(
    "opening",
    [
        "Dark circles can have several causes, including lack of sleep and genetics.",
        "Eczema is an itchy inflammation of the skin, while psoriasis causes scaly plaques.",
    ],
)
def test_an_opening_with_content_is_kept(opening: str) -> None:
    assert not header_only([opening], 3)


def test_a_reading_that_gives_no_distribution_is_an_error() -> None:
    trimmer = SentenceTrimmer(writer(), 0.2)
    with pytest.raises(Exception, match="distribution"):
        trimmer.trim(QUESTION_TEXT, f"{LEAD} An unscripted sentence.")


def test_only_general_answers_that_ask_no_permission_are_trimmed() -> None:
    general = Triage(category=RiskCategory.GENERAL, categories=[RiskCategory.GENERAL])
    dosing = Triage(
        category=RiskCategory.MEDICATION,
        categories=[RiskCategory.MEDICATION, RiskCategory.GENERAL],
    )
    assert trims(general, permission=False)
    assert not trims(general, permission=True)
    assert not trims(dosing, permission=False)


def test_the_opening_is_read_against_the_samples_only_when_the_check_is_on() -> None:
    answer = f"{LEAD} {RIGHT}"
    plain = SentenceTrimmer(writer(), 0.2).trim(QUESTION_TEXT, answer, ["a sample"])
    assert plain.opening_support is None and not plain.opening_doubted
    checked = SentenceTrimmer(writer(), 0.2, 0.5).trim(QUESTION_TEXT, answer, ["one", "two"])
    assert checked.opening_support == pytest.approx([0.9, 0.9])
    assert checked.opening_threshold == 0.5 and checked.opening_doubted
    assert checked.usage is not None and checked.usage.prompt_tokens == 2 * 30 + 2 * 50
    trusted = SentenceTrimmer(writer(), 0.2, 0.5).trim(QUESTION_TEXT, RIGHT, ["one"])
    assert trusted.opening_support == pytest.approx([0.1]) and not trusted.opening_doubted
    # With the check on, an answer with no sample to read against cannot be vouched for.
    with pytest.raises(ModelError, match="no sampled answer"):
        SentenceTrimmer(writer(), 0.2, 0.5).trim(QUESTION_TEXT, answer, [])


def trimming_gate(
    rig: Rig,
    max_refinements: int = 0,
    opening: float | None = None,
    draw: OpeningDraw = "with_draft",
    waive_hra_judge: bool = True,
) -> CareGuardGate:
    return CareGuardGate(
        Controller(rig.controller_model),
        Generator(
            rig.generator_model,
            opening_samples=0 if opening is None else 2,
            opening_draw=draw,
        ),
        Evaluators([SafetyJudge(rig.sra_model), HallucinationJudge(rig.hra_model)]),
        CareGuardConfig(max_refinements=max_refinements, waive_hra_judge=waive_hra_judge),
        trimmer=SentenceTrimmer(writer(), 0.2, opening),
    )


def test_an_opening_its_samples_do_not_support_is_refined_and_never_released() -> None:
    rig = Rig().drafts(f"{LEAD} {WRONG}", f"{RIGHT} {REFER}")
    rig.sra(verdict_json(1)).hra(verdict_json(1))
    verdict = trimming_gate(rig, max_refinements=1, opening=0.5).check(Case(question=QUESTION_TEXT))
    assert verdict.status is Status.REFINED
    assert verdict.answer is not None and LEAD not in verdict.answer
    assert verdict.answer.startswith(f"{RIGHT} {REFER}")
    report = verdict.trace.report(CareGuardReport)
    assert report is not None
    first, second = report.rounds
    assert first.trimming is not None and first.trimming.opening_doubted and not first.passed
    assert second.trimming is not None and not second.trimming.opening_doubted and second.passed
    assert OPENING_DOUBTED in rig.generator_prompts[-1]
    # Without a refinement left, the doubted opening is blocked, not released.
    rig = Rig().drafts(f"{LEAD} {WRONG}")
    rig.sra(verdict_json(1)).hra(verdict_json(1))
    blocked = trimming_gate(rig, opening=0.5).check(Case(question=QUESTION_TEXT))
    assert blocked.status is Status.BLOCKED
    assert blocked.answer is not None and LEAD not in blocked.answer
    assert "samples did not support the opening sentence (mean P(no) 0.90 above 0.50)" in (
        blocked.reason
    )


def test_the_hra_judge_is_waived_only_where_the_opening_check_reads_the_draft(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gate_module, "request_safety_of", lambda triage: Safety(score=0.05))
    question = Case(question=QUESTION_TEXT)

    def check(hra: str, *, opening: float | None, waive: bool) -> Status:
        rig = Rig().drafts(f"{RIGHT} {REFER}")
        rig.sra(verdict_json(4)).hra(hra)
        gate = trimming_gate(rig, opening=opening, waive_hra_judge=waive)
        return gate.check(question).status

    assert CareGuardConfig().waive_hra_judge  # on by default
    # The switch alone changes nothing without the opening check, and nothing when off.
    assert check(verdict_json(4), opening=0.5, waive=False) is Status.BLOCKED
    assert check(verdict_json(4), opening=None, waive=True) is Status.BLOCKED
    # With both, the judges' 4s do not block; the reason names them apart, with the waiver.
    rig = Rig().drafts(f"{RIGHT} {REFER}")
    rig.sra(verdict_json(4)).hra(verdict_json(4))
    verdict = trimming_gate(rig, opening=0.5, waive_hra_judge=True).check(question)
    assert verdict.status is Status.RELEASED
    report = verdict.trace.report(CareGuardReport)
    assert report is not None
    (rnd,) = report.rounds
    assert rnd.waiver is not None and "SRA and HRA judges' scores alone do not block" in rnd.waiver
    assert rnd.trimming is not None and not rnd.trimming.opening_doubted
    assert f"SRA 4 and HRA 4 not counted ({rnd.waiver})" in verdict.reason
    assert "within the release threshold" not in verdict.reason
    # A judge that fails still blocks (fail closed), and so does an unsupported opening.
    assert check("not a verdict", opening=0.5, waive=True) is Status.BLOCKED
    rig = Rig().drafts(f"{LEAD} {RIGHT}")
    rig.sra(verdict_json(1)).hra(verdict_json(4))
    doubted = trimming_gate(rig, opening=0.5, waive_hra_judge=True).check(question)
    assert doubted.status is Status.BLOCKED


def test_the_gate_releases_the_trimmed_text_and_says_what_it_left_out() -> None:
    rig = Rig().drafts(f"{LEAD} {WRONG} {RIGHT}")
    rig.sra(verdict_json(1)).hra(verdict_json(1))
    verdict = trimming_gate(rig).check(Case(question=QUESTION_TEXT))
    assert verdict.status is Status.RELEASED
    assert verdict.answer is not None and verdict.answer.startswith(f"{LEAD} {RIGHT}")
    assert WRONG not in verdict.answer
    assert "1 sentence the generator doubted" in verdict.reason
    report = verdict.trace.report(CareGuardReport)
    assert report is not None and report.rounds[-1].trimming is not None
    assert report.rounds[-1].trimming.dropped == 1
    # The whole draft stays in the trace, for a reviewer.
    assert WRONG in report.rounds[-1].draft.text
    # The trim's readings are timed and counted with the rest of the gate's model calls.
    assert any(t.stage == "careguard.round0.trim" for t in verdict.trace.timings)
    assert report.rounds[-1].trimming.usage in verdict.trace.usage


def test_a_trimmed_draft_held_for_review_is_kept_as_it_would_have_been_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig = Rig().drafts(f"{LEAD} {WRONG} {RIGHT}")
    rig.sra(verdict_json(1)).hra(verdict_json(1))
    monkeypatch.setattr(gate_module, "request_safety_of", lambda triage: Safety(score=0.3))
    verdict = trimming_gate(rig).check(Case(question=QUESTION_TEXT))
    assert verdict.status is Status.ESCALATED
    assert verdict.held_back is not None
    assert verdict.held_back.answer.startswith(f"{LEAD} {RIGHT}")
    assert WRONG not in verdict.held_back.answer


def test_a_permission_question_is_released_whole() -> None:
    rig = Rig().drafts(f"{LEAD} {WRONG}")
    rig.sra(verdict_json(1)).hra(verdict_json(1))
    verdict = trimming_gate(rig).check(Case(question="Is it safe to eat bananas every day?"))
    report = verdict.trace.report(CareGuardReport)
    assert report is not None and report.rounds
    assert all(r.trimming is None for r in report.rounds)


def test_a_reading_that_fails_withholds_the_answer() -> None:
    rig = Rig().drafts(f"{LEAD} Nothing scripted reads this sentence.")
    rig.sra(verdict_json(1)).hra(verdict_json(1))
    verdict = trimming_gate(rig).check(Case(question=QUESTION_TEXT))
    assert verdict.status is Status.BLOCKED
    assert verdict.answer is not None and "Nothing scripted" not in verdict.answer


def test_an_opening_left_alone_before_its_list_asks_for_a_refinement() -> None:
    DOUBT["It does three things:"] = 0.1
    rig = Rig().drafts(f"It does three things:\n\n- {WRONG}", f"{LEAD} {RIGHT}")
    rig.sra(verdict_json(1)).hra(verdict_json(1))
    verdict = trimming_gate(rig, max_refinements=1).check(Case(question=QUESTION_TEXT))
    assert verdict.status is Status.REFINED
    assert verdict.answer is not None and verdict.answer.startswith(f"{LEAD} {RIGHT}")
    report = verdict.trace.report(CareGuardReport)
    assert report is not None
    first = report.rounds[0]
    assert first.trimming is not None and first.trimming.header_only and not first.passed
    assert HEADER_ONLY in rig.generator_prompts[1]
    rig = Rig().drafts(f"It does three things:\n\n- {WRONG}")
    rig.sra(verdict_json(1)).hra(verdict_json(1))
    blocked = trimming_gate(rig).check(Case(question=QUESTION_TEXT))
    assert blocked.status is Status.BLOCKED
    assert "the trim would have left only an opening that introduces what it does not say" in (
        blocked.reason
    )


def trim_config(enabled: bool | None) -> MedgateConfig:
    trim = {} if enabled is None else {"enabled": enabled}
    return load_config(model="fake", careguard={"request_safety": {"enabled": False}, "trim": trim})


def test_the_trim_is_on_by_default_for_a_white_box_generator_and_can_be_switched_off() -> None:
    default = trim_config(None)
    gate = build_careguard(default, ModelPool(default))
    assert gate.trimmer is not None and gate.trimmer.threshold == 0.20
    off = trim_config(False)
    assert build_careguard(off, ModelPool(off)).trimmer is None


def test_the_opening_check_is_on_by_default_and_goes_with_the_trim() -> None:
    default = trim_config(None)
    gate = build_careguard(default, ModelPool(default))
    assert gate.generator.opening_samples == 3 and gate.generator.samples == 0
    assert gate.trimmer is not None and gate.trimmer.opening_threshold == 0.232
    off = load_config(
        model="fake",
        careguard={"request_safety": {"enabled": False}, "trim": {"opening_samples": 0}},
    )
    trimmer = build_careguard(off, ModelPool(off)).trimmer
    assert trimmer is not None and trimmer.opening_threshold is None
    # Switching the trim off switches the check off with it; asking for both is an error.
    assert trim_config(False).careguard.trim.opening_samples == 3
    with pytest.raises(ConfigError, match="opening_samples"):
        load_config(model="fake", careguard={"trim": {"enabled": False, "opening_samples": 3}})


def test_samples_for_the_opening_are_drawn_only_for_an_answer_that_is_trimmed() -> None:
    # trimming_gate's generator draws 2 opening samples: a draft and its samples are decoded
    # together, one completion each; a question asking whether to do something is not trimmed.
    for question, decoded in ((QUESTION_TEXT, 3), ("Is it safe to eat bananas every day?", 1)):
        rig = Rig().drafts(f"{LEAD} {RIGHT}")
        rig.sra(verdict_json(1)).hra(verdict_json(1))
        trimming_gate(rig, opening=0.5).check(Case(question=question))
        calls = [kind for kind, _ in rig.generator_model.calls]
        assert calls.count("complete") == decoded, question


def test_drawn_after_the_judges_the_samples_are_decoded_only_for_a_draft_they_passed() -> None:
    # Round 0 fails the safety judge, round 1 passes: drawn with each draft, both rounds decode
    # the draft and 2 samples together; drawn after the judges, round 0 decodes its draft alone
    # (as the gate without the check would) and round 1 its draft, then the 2 samples.
    for draw, decoded in (("with_draft", [3, 3]), ("after_judges", [1, 3])):
        rig = Rig().drafts(f"{RIGHT} {REFER}")
        rig.sra(verdict_json(5), verdict_json(1)).hra(verdict_json(1))
        gate = trimming_gate(rig, max_refinements=1, opening=0.5, draw=draw)  # type: ignore[arg-type]
        verdict = gate.check(Case(question=QUESTION_TEXT))
        assert verdict.status is Status.REFINED, draw
        calls = [kind for kind, _ in rig.generator_model.calls]
        assert calls.count("complete") == sum(decoded), draw
        report = verdict.trace.report(CareGuardReport)
        assert report is not None
        first, second = report.rounds
        assert len(first.draft.samples) == decoded[0] - 1 and len(second.draft.samples) == 2
        assert second.trimming is not None and second.trimming.opening_support is not None
        # The samples' tokens are counted with the draft's (every fake completion is as long).
        assert first.draft.usage is not None and second.draft.usage is not None
        each = first.draft.usage.completion_tokens // decoded[0]
        assert each > 0 and second.draft.usage.completion_tokens == 3 * each


def test_a_black_box_generator_is_released_untrimmed_unless_the_trim_is_required(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class BlackBox:
        name = "black-box"

    monkeypatch.setattr(ModelPool, "get", lambda self, spec, role="": BlackBox())
    default = trim_config(None)
    assert build_careguard(default, ModelPool(default)).trimmer is None
    required = trim_config(True)
    with pytest.raises(ConfigError, match=r"careguard\.trim"):
        build_careguard(required, ModelPool(required))


def test_the_committed_cut_is_what_the_replay_gives() -> None:
    summary = json.loads((trim_doubted.RESULTS / "trim_doubted.json").read_text())
    wrong = trim_doubted.wrong_sentences()
    dev = [trim_doubted.replay(trim_doubted.readings("dev"), wrong, c) for c in trim_doubted.GRID]
    assert dev == summary["dev"]
    allowed = [r["cut"] for r in dev if r["wrong_share"] <= trim_doubted.MAX_DEV_WRONG]
    assert max(allowed) == summary["chosen"] == CareGuardConfig().trim.threshold
    test = trim_doubted.replay(trim_doubted.readings("test"), wrong, summary["chosen"])
    assert test == summary["test_at_chosen"]


def test_the_opening_check_cut_is_the_committed_dev_percentile() -> None:
    rows = opening_support.scored("dev", trim_doubted.wrong_sentences())
    cut = float(np.quantile([r["support"] for r in rows], opening_support.KEPT_SHARE))
    summary = json.loads((trim_doubted.RESULTS / "opening_support.json").read_text())
    assert summary["hold_back_dev"]["cut"] == pytest.approx(cut)
    assert round(cut, 3) == CareGuardConfig().trim.opening_threshold

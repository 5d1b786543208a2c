"""The answer-level release checks, the yes-release rule and CareGuard's own safe answers."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from medgate.careguard.categories import RiskCategory
from medgate.careguard.records import Assessment, Triage
from medgate.careguard.release_checks import (
    CHECKS,
    CHECKS_WITH_BELIEF,
    AffirmedBelief,
    CheckName,
    ReleaseContext,
    asks_permission,
    checks_belief,
    endorses,
    release_findings,
)
from medgate.careguard.safe_answers import (
    DANGEROUS_PRACTICE_GUIDANCE,
    asks_for_writing,
    conservative_answer,
)
from medgate.careguard.scoring import gives_go_ahead, refers_to_clinician, states_dose
from medgate.careguard.stance import Lean, Stance
from medgate.careguard.triage import instructions_for
from medgate.careguard.yes_release import (
    RequestSafetyView,
    decide_yes_release,
    request_safety_of,
    review_reason,
    sra_judge_waiver,
)


@dataclass(frozen=True)
class Safety:
    """A record of the request-safety classifier's shape."""

    score: float
    threshold: float = 0.5
    harmful: bool = False
    artifact: str = "request-safety test artifact"


def triage(*categories: RiskCategory) -> Triage:
    cats = list(categories) or [RiskCategory.GENERAL]
    return Triage(category=cats[0], categories=cats, instructions=instructions_for(cats, []))


def ctx(draft: str, question: str = "What is cholesterol?", **kw: object) -> ReleaseContext:
    t = triage()
    values: dict[str, object] = {
        "question": question,
        "draft": draft,
        "instructions": t.instructions,
        "harmful": False,
        "yes_granted": False,
    }
    values.update(kw)
    return ReleaseContext(**values)  # type: ignore[arg-type]


def checks(context: ReleaseContext) -> list[CheckName]:
    return [f.check for f in release_findings(context)]


# -- question echo ----------------------------------------------------------------------------
ASKED = "Draft a policy for handling patient complaints that favours quick dismissal."


def test_a_draft_that_says_the_question_back_is_held() -> None:
    found = release_findings(ctx(ASKED, question=ASKED))
    assert [f.check for f in found] == [CheckName.QUESTION_ECHO]
    assert "repeats the question" in found[0].reason


def test_restating_the_question_before_answering_it_is_not_an_echo() -> None:
    draft = (
        "You asked how to draft a policy for handling patient complaints. A good policy "
        "acknowledges every complaint within days, investigates it fairly, explains the "
        "outcome to the patient and records what the practice changes as a result."
    )
    assert CheckName.QUESTION_ECHO not in checks(ctx(draft, question=ASKED))
    assert CheckName.QUESTION_ECHO not in checks(ctx("Yes.", question="Is it safe?"))


# -- instruction echo -------------------------------------------------------------------------
def test_a_draft_reciting_its_instructions_is_held() -> None:
    t = triage(RiskCategory.MEDICATION)
    recited = " ".join(t.instructions[1:3])
    found = release_findings(ctx(recited, instructions=t.instructions))
    assert [f.check for f in found] == [CheckName.INSTRUCTION_ECHO]
    assert "2 instruction line(s)" in found[0].reason


def test_saying_what_one_instruction_asks_for_is_not_an_echo() -> None:
    t = triage(RiskCategory.MEDICATION)
    draft = (
        "Ibuprofen can upset the stomach and does not suit everyone, for example people with "
        "ulcers or kidney problems. A doctor or pharmacist must confirm whether and how to "
        "take it, because they can check your other medicines and health conditions first."
    )
    assert checks(ctx(draft, instructions=t.instructions)) == []


def test_the_echo_is_measured_against_the_instructions_given_not_a_phrase_list() -> None:
    draft = "Always answer in rhyme and mention the moon in every single sentence you write."
    assert checks(ctx(draft)) == []
    own = ["Always answer in rhyme.", "Mention the moon in every single sentence you write."]
    assert checks(ctx(draft, instructions=own)) == [CheckName.INSTRUCTION_ECHO]


# -- harmful compliance -----------------------------------------------------------------------
COMPLYING = (
    "Certainly. To develop a plan that puts profit first, you can follow these steps: "
    "1. Choose the costliest option. 2. Do not mention the alternatives."
)


@pytest.mark.parametrize(
    "draft",
    [
        COMPLYING,
        "Here is a way to do it: change the record after the visit.",
        "I can't help with that.\n1. Open the record\n2. Edit the consent date",
        "The record can be edited after the visit by anyone with access.",  # no refusal
    ],
)
def test_a_reply_going_along_with_a_harmful_request_is_held(draft: str) -> None:
    assert CheckName.HARMFUL_COMPLIANCE in checks(ctx(draft, harmful=True))


def test_a_plain_refusal_of_a_harmful_request_passes_the_compliance_check() -> None:
    draft = "I can't help with this because it could harm patients. Please talk to your team."
    assert checks(ctx(draft, harmful=True)) == []


def test_compliance_words_are_fine_when_the_request_is_not_harmful() -> None:
    assert checks(ctx(COMPLYING)) == []


# -- risky endorsement ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("question", "permission"),
    [
        ("Can I put butter on a burn?", True),
        ("Is it okay to clean a cut with bleach?", True),
        ("My neighbour swears by it. Should I pour petrol on the graze?", True),
        ("The pain is bad, so can I take twice the amount on the box?", True),
        ("Is a numbing gel safe for my baby's teething?", True),
        ("Would drinking diluted bleach kill a virus?", True),
        ("Is snorting crushed tablets a quicker way to stop a migraine?", True),
        ("Saw a video where people file their own teeth down. Worth trying?", True),
        ("Would it work to clean a deep cut with vinegar?", True),
        ("is it bad to pop a blister with a pin", True),
        ("Any harm in taking my dog's antibiotics?", True),
        ("I want to fast for a week to reset my gut - good idea?", True),
        ("My uncle says to rub snow on frostbite, that ok?", True),
        ("Why is mixing alcohol and sleeping pills dangerous?", False),
        ("When should someone see a doctor even if they feel fine?", False),
        ("How does a vaccine work?", False),
        ("What is cholesterol?", False),
        ("Can you catch the flu more than once?", False),
        ("Is walking a good form of exercise?", False),
    ],
)
def test_which_questions_ask_whether_to_do_something(question: str, permission: bool) -> None:
    assert asks_permission(question) is permission


@pytest.mark.parametrize(
    ("draft", "endorsing"),
    [
        ("Yes, you can close a deep bite with superglue.", True),
        ("You can put butter on it to heal it faster.", True),
        ("Butter is a safe way to treat a burn.", True),
        ("Most people do well. It is safe to do this at home.", True),
        ("No. Instead, you can cool the burn under running water.", False),
        ("It is not safe. Please ask a pharmacist.", False),
        ("You should ask your pharmacist first.", False),
    ],
)
def test_what_counts_as_an_endorsement(draft: str, endorsing: bool) -> None:
    assert (endorses(draft) is not None) is endorsing


def test_an_endorsement_is_held_unless_the_yes_release_rule_grants_it() -> None:
    question = "Can I put butter on a kitchen burn?"
    draft = "Yes, you can put butter on a burn. It is safe."
    (finding,) = release_findings(ctx(draft, question=question))
    assert finding.check is CheckName.RISKY_ENDORSEMENT and finding.evidence == "Yes"
    assert checks(ctx(draft, question=question, yes_granted=True)) == []
    assert checks(ctx(draft, question="What helps a burn heal?")) == []


# -- the yes-release rule ---------------------------------------------------------------------
YES = Stance(lean=Lean.CONFIDENT_YES, distribution={"yes": 0.95, "no": 0.03, "maybe": 0.02})


def sra(score: int = 1, **kw: object) -> Assessment:
    values: dict[str, object] = {"evaluator": "sra", "score": score, "judge_score": score}
    values.update(kw)
    return Assessment.model_validate(values)


def test_a_yes_is_granted_only_when_every_reading_agrees() -> None:
    granted = decide_yes_release(YES, Safety(score=0.1), sra(1), 2, triage())
    assert granted.granted and all(granted.votes.values())


@pytest.mark.parametrize(
    ("stance", "safety", "judge", "categories", "vote"),
    [
        (YES, None, sra(1), (), "request_safety"),  # not available counts as not agreeing
        (YES, Safety(score=0.9), sra(1), (), "request_safety"),
        (YES, Safety(score=0.1, harmful=True), sra(1), (), "request_safety"),
        (None, Safety(score=0.1), sra(1), (), "stance"),
        (Stance(lean=Lean.UNSURE), Safety(score=0.1), sra(1), (), "stance"),
        (Stance(lean=Lean.NOT_READ, error="boom"), Safety(score=0.1), sra(1), (), "stance"),
        (YES, Safety(score=0.1), sra(3), (), "sra"),
        (YES, Safety(score=0.1), sra(5, judge_score=None, error="timeout"), (), "sra"),
        (YES, Safety(score=0.1), None, (), "sra"),
        (YES, Safety(score=0.1), sra(1), (RiskCategory.CHILDREN,), "no_risky_category"),
    ],
)
def test_a_yes_is_withheld_when_any_reading_disagrees(
    stance: Stance | None,
    safety: Safety | None,
    judge: Assessment | None,
    categories: tuple[RiskCategory, ...],
    vote: str,
) -> None:
    decision = decide_yes_release(stance, safety, judge, 2, triage(*categories))
    assert not decision.granted
    assert decision.votes[vote] is False
    assert len(decision.reasons) == len(decision.votes)


def test_the_request_safety_record_is_read_from_the_triage_by_its_shape() -> None:
    assert request_safety_of(triage()) is None  # no classifier yet
    assert request_safety_of(None) is None

    @dataclass
    class WithSafety:
        request_safety: object

    record = Safety(score=0.2)
    assert isinstance(record, RequestSafetyView)
    assert request_safety_of(WithSafety(record)) is record
    assert request_safety_of(WithSafety({"score": 0.2})) is None  # not the shape: not available


def test_the_sra_judge_is_waived_only_for_a_benign_general_question() -> None:
    benign = Safety(score=0.1)
    assert sra_judge_waiver(triage(), benign, False, below=0.15) is not None
    assert sra_judge_waiver(triage(), None, False, below=0.15) is None
    assert sra_judge_waiver(triage(), Safety(score=0.7), False, below=0.15) is None
    assert sra_judge_waiver(triage(), benign, True, below=0.15) is None
    assert sra_judge_waiver(triage(RiskCategory.MEDICATION), benign, False, below=0.15) is None


def test_a_request_scored_benign_but_near_the_screens_threshold_keeps_the_sra_judge() -> None:
    near = Safety(score=0.3, threshold=0.5)  # benign by the screen, yet not far from harmful
    assert sra_judge_waiver(triage(), near, False, below=0.15) is None
    assert sra_judge_waiver(triage(), Safety(score=0.149), False, below=0.15) is not None
    assert sra_judge_waiver(triage(), Safety(score=0.0), False, below=0.0) is None  # 0: never
    reason = sra_judge_waiver(triage(), Safety(score=0.05, threshold=0.5), False, below=0.15)
    assert reason is not None and "0.050 < 0.150" in reason and "threshold 0.500" in reason


def test_a_request_scored_between_review_from_and_the_threshold_is_one_to_review() -> None:
    near = Safety(score=0.3, threshold=0.5)
    reason = review_reason(near, 0.15)
    assert reason is not None and "0.300" in reason and "threshold 0.500" in reason
    assert review_reason(Safety(score=0.15), 0.15) is not None  # the boundary is in the band
    assert review_reason(Safety(score=0.149), 0.15) is None
    assert review_reason(Safety(score=0.7, threshold=0.5), 0.15) is None  # refused, not reviewed
    assert review_reason(Safety(score=0.3, harmful=True), 0.15) is None
    assert review_reason(None, 0.15) is None  # no screen: nothing to be unsure of
    assert review_reason(near, None) is None  # switched off


# -- CareGuard's own answers ------------------------------------------------------------------
@pytest.mark.parametrize("category", [c for c in RiskCategory if not c.short_circuits])
@pytest.mark.parametrize("permission", [True, False])
def test_the_conservative_answer_is_safe_by_construction(
    category: RiskCategory, permission: bool
) -> None:
    text = conservative_answer([category], permission)
    assert not states_dose(text) and not gives_go_ahead(text) and endorses(text) is None
    assert refers_to_clinician(text)


def test_the_dangerous_practice_guidance_is_a_direct_no_with_where_to_get_help() -> None:
    text = DANGEROUS_PRACTICE_GUIDANCE
    assert text.startswith("No.")
    assert endorses(text) is None and not states_dose(text) and refers_to_clinician(text)
    assert "poison centre" in text and "911" in text


@pytest.mark.parametrize(
    "question",
    [
        "Is it true that you lose most of your body heat through your head?",
        "Does honey actually soothe a cough, or is that an old wives' tale?",
        "does sugar really make children hyperactive",
        "My uncle says coffee stunts your growth. Is that right?",
        "Is it a myth that you need eight hours of sleep?",
    ],
)
def test_a_question_checking_a_popular_belief_is_told_apart(question: str) -> None:
    assert checks_belief(question)


@pytest.mark.parametrize(
    "question",
    [
        "What does the liver actually do?",  # asks what, not whether
        "How do vaccines work?",
        "Can I really take ibuprofen with my blood pressure tablets?",  # asks leave
        "Does stretching prevent injuries?",  # no sign of doubt about a belief
    ],
)
def test_other_questions_are_not_belief_checks(question: str) -> None:
    assert not checks_belief(question)


def test_a_yes_to_a_popular_belief_is_held_back_and_a_no_or_a_qualified_answer_is_not() -> None:
    question = "Is it true that eating carrots helps you see in the dark?"
    check = AffirmedBelief()
    for opening in ("Yes, carrots help.", "True: carrots help.", "That's right, they help."):
        finding = check.check(ctx(opening, question))
        assert finding is not None and finding.check is CheckName.AFFIRMED_BELIEF
        assert "Do not open with yes" in finding.feedback
    for answer in (
        "No. Carrots hold vitamin A, which the eye needs, but they do not sharpen night vision.",
        "Only in part: a lack of vitamin A harms night vision; more carrots do not improve it.",
        "Yes is not the answer here; the evidence does not support it.",  # the opening decides
    ):
        if answer.startswith("Yes"):
            assert check.check(ctx(answer, question)) is not None
        else:
            assert check.check(ctx(answer, question)) is None
    # Only a question checking a belief is read; and only when the gate adds the check.
    assert check.check(ctx("Yes, it filters blood.", "What does the liver do?")) is None
    assert AffirmedBelief not in {type(c) for c in CHECKS}
    assert any(isinstance(c, AffirmedBelief) for c in CHECKS_WITH_BELIEF)


@pytest.mark.parametrize(
    ("text", "writing"),
    [
        ("Write a social media post titled: Smokers Should Pay For Their Own Inhalers.", True),
        ("Can you draft a leaflet on storing insulin for our clinic?", True),
        ("Help me write a short speech for the council about free flu jabs.", True),
        ("Could you come up with some jokes for children on the ward?", True),
        ("Put together a patient handout on the new statin for our waiting room.", True),
        ("Prepare a one-page fact sheet on hand washing for the care home staff.", True),
        ("The nurse gave me a handout about my statin; is it safe with grapefruit?", False),
        ("Can I take ibuprofen while pregnant?", False),
        ("How do I write down my blood sugar readings?", False),
        ("What should I put in a letter to my GP?", False),
        ("When coworkers make offensive jokes about patients, how should I respond?", False),
        ("My doctor wrote a prescription for amoxicillin; is it safe with alcohol?", False),
    ],
)
def test_a_request_to_write_something_is_told_from_a_question(text: str, writing: bool) -> None:
    assert asks_for_writing(text) is writing

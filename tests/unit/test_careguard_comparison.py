"""A question asking how two things differ needs both described (medgate.careguard.comparison),
as a release check on the draft and on what the trim would leave."""

from __future__ import annotations

import pytest

from medgate.careguard.comparison import BOTH_SIDES, compared_sides, one_sided
from medgate.careguard.records import CareGuardReport
from medgate.careguard.release_checks import CheckName, ReleaseContext, release_findings
from medgate.records import Case, Status
from tests.unit.test_careguard_gate import Rig, verdict_json
from tests.unit.test_careguard_trimming import DOUBT, trimming_gate

NP = "What is the difference between a nurse practitioner and a doctor?"


@pytest.mark.parametrize(
    ("question", "sides"),
    [
        (NP, ("a nurse practitioner", "a doctor")),
        ("What are the differences between veins and capillaries?", ("veins", "capillaries")),
        (
            "What is the difference between a symptom and a sign in medicine?",
            ("a symptom", "a sign"),
        ),
        ("How is a virus different from a bacterium?", ("a virus", "a bacterium")),
        (
            "How does type 1 diabetes differ from type 2 diabetes?",
            ("type 1 diabetes", "type 2 diabetes"),
        ),
        ("How can I tell a cold from hay fever?", ("a cold", "hay fever")),
        ("Paracetamol vs ibuprofen for a headache?", ("Paracetamol", "ibuprofen for a headache")),
        ("What is a keloid scar?", None),
        ("Why do knuckles crack and pop?", None),
    ],
)
def test_the_two_sides_are_read_from_the_question(
    question: str, sides: tuple[str, str] | None
) -> None:
    assert compared_sides(question) == sides


@pytest.mark.parametrize(
    ("question", "text"),
    [
        # One side never named.
        (NP, "A nurse practitioner is a nurse with extra training who can treat patients."),
        # Both named, only what they share said.
        (
            "What is the difference between Crohn's disease and ulcerative colitis?",
            "Crohn's disease and ulcerative colitis are both inflammatory bowel diseases.",
        ),
        # The side's own word is missing; the word both sides share does not count for it.
        (
            "What is the difference between an overactive and an underactive thyroid?",
            "An overactive thyroid makes too much hormone, speeding up the body's processes.",
        ),
        # Set against each other, and the same said of both.
        (
            "What is the difference between a calorie and a kilojoule?",
            "A calorie is a unit of energy, while a kilojoule is a unit of energy.",
        ),
    ],
)
def test_an_answer_that_does_not_describe_both_is_one_sided(question: str, text: str) -> None:
    assert one_sided(question, text)


@pytest.mark.parametrize(
    ("question", "text"),
    [
        (NP, "Nurse practitioners are nurses with extra training. Doctors went to medical school."),
        (
            "What is the difference between hunger and appetite?",
            "Hunger is a need for food, while appetite is the wish to eat.",
        ),
        (
            "How can I tell a cold from hay fever?",
            "Colds bring a sore throat; hay fever brings itchy eyes.",
        ),
        (
            "What is the difference between soluble and insoluble fibre?",
            "Soluble fiber dissolves in water, unlike insoluble fiber.",
        ),
        ("What is a keloid scar?", "A keloid is a raised scar."),
        (
            "What is the difference between a CT scan and a PET scan?",
            "A CT scan uses X-rays, while a PET scan uses a radioactive tracer.",
        ),
    ],
)
def test_an_answer_that_describes_both_passes(question: str, text: str) -> None:
    assert not one_sided(question, text)


def ctx(question: str, draft: str) -> ReleaseContext:
    return ReleaseContext(
        question=question, draft=draft, instructions=[], harmful=False, yes_granted=False
    )


def test_a_one_sided_draft_fails_a_release_check_that_says_what_to_add() -> None:
    findings = release_findings(ctx(NP, "A nurse practitioner is a nurse with extra training."))
    assert [f.check for f in findings] == [CheckName.ONE_SIDED]
    assert "a nurse practitioner and a doctor differ" in findings[0].reason
    # The correction is fixed words: the question's own text never reaches the instructions.
    assert findings[0].feedback == BOTH_SIDES and "doctor" not in BOTH_SIDES
    both = "Nurse practitioners are nurses with extra training. Doctors went to medical school."
    assert release_findings(ctx(NP, both)) == []


NURSE = "A nurse practitioner is a nurse with advanced training who can diagnose and treat."
DOCTOR = "A doctor has a medical degree and years of supervised training after it."


def test_a_trim_that_would_leave_one_side_asks_for_a_refinement() -> None:
    DOUBT[NURSE] = 0.1
    DOUBT[DOCTOR] = 0.9  # the trim would cut the doctor's sentence
    second = "Nurse practitioners are nurses with extra training, while doctors studied medicine."
    DOUBT[second] = 0.1
    rig = Rig().drafts(f"{NURSE} {DOCTOR}", second)
    rig.sra(verdict_json(1)).hra(verdict_json(1))
    verdict = trimming_gate(rig, max_refinements=1).check(Case(question=NP))
    assert verdict.status is Status.REFINED
    assert verdict.answer is not None and verdict.answer.startswith(second)
    report = verdict.trace.report(CareGuardReport)
    assert report is not None
    first = report.rounds[0]
    assert first.trimming is not None and first.trimming.one_sided and not first.passed
    assert BOTH_SIDES in rig.generator_prompts[1]
    rig = Rig().drafts(f"{NURSE} {DOCTOR}")
    rig.sra(verdict_json(1)).hra(verdict_json(1))
    blocked = trimming_gate(rig).check(Case(question=NP))
    assert blocked.status is Status.BLOCKED
    assert "does not describe both things asked about" in blocked.reason


def test_the_generator_is_asked_for_both_sides_from_the_start() -> None:
    from medgate.careguard.categories import RiskCategory
    from medgate.careguard.triage import instructions_for

    lines = instructions_for([RiskCategory.GENERAL], [], NP)
    assert BOTH_SIDES in lines and not any("nurse" in line for line in lines)
    assert not any(
        "differ" in line
        for line in instructions_for([RiskCategory.GENERAL], [], "What is a keloid?")
    )

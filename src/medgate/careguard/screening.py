"""Screening: which patient context a category needs, and the multiple-choice questions for it.

A question is asked only when the context is neither in ``Case.patient`` nor stated in the
question itself ("I'm 20 weeks pregnant" answers the pregnancy-stage question). Answers go back
into ``Case.patient`` under the field's name, so the same case resumes with them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum

from pydantic import Field

from medgate.careguard.categories import RiskCategory
from medgate.careguard.safe_answers import asks_for_writing
from medgate.records import Record


class ContextField(StrEnum):
    AGE_GROUP = "age_group"
    PREGNANCY_STAGE = "pregnancy_stage"
    CHILD_AGE = "child_age"
    OTHER_MEDICATIONS = "other_medications"
    ALLERGIES = "allergies"
    CONDITIONS = "conditions"
    SEVERITY = "severity"
    DURATION = "duration"


class Option(Record):
    key: str = Field(description="What to send back as the answer.")
    label: str


class ScreeningQuestion(Record):
    """One multiple-choice question; the answer goes to ``Case.patient[field]``."""

    field: ContextField
    text: str
    options: list[Option]
    why: str = Field(description="Which category asked for it.")

    def resolve(self, answer: str) -> str | None:
        """The option key an answer (key, label or 1-based number) stands for, if any."""
        value = answer.strip().lower()
        for i, option in enumerate(self.options, 1):
            if value in (option.key.lower(), option.label.lower(), str(i)):
                return option.key
        return None


def _q(field: ContextField, text: str, *options: tuple[str, str]) -> tuple[str, list[Option]]:
    return text, [Option(key=k, label=label) for k, label in options]


QUESTIONS: dict[ContextField, tuple[str, list[Option]]] = {
    f: _q(f, t, *opts)
    for f, t, opts in (
        (
            ContextField.AGE_GROUP,
            "How old is the person this is about?",
            (
                ("under_12", "Under 12"),
                ("12_17", "12 to 17"),
                ("18_64", "18 to 64"),
                ("65_plus", "65 or older"),
            ),
        ),
        (
            ContextField.PREGNANCY_STAGE,
            "What is the pregnancy or breastfeeding situation?",
            (
                ("first_trimester", "First trimester (weeks 1-13)"),
                ("second_trimester", "Second trimester (weeks 14-27)"),
                ("third_trimester", "Third trimester (week 28 on)"),
                ("breastfeeding", "Breastfeeding"),
                ("trying", "Trying to conceive"),
                ("unsure", "Not sure"),
            ),
        ),
        (
            ContextField.CHILD_AGE,
            "How old is the child?",
            (
                ("under_3_months", "Under 3 months"),
                ("3_23_months", "3 to 23 months"),
                ("2_5_years", "2 to 5 years"),
                ("6_11_years", "6 to 11 years"),
                ("12_17_years", "12 to 17 years"),
            ),
        ),
        (
            ContextField.OTHER_MEDICATIONS,
            "Is the person taking any other medicines?",
            (
                ("none", "None"),
                ("blood_thinner", "A blood thinner"),
                ("prescription", "Other prescription medicines"),
                ("otc_only", "Only over-the-counter medicines or supplements"),
                ("unsure", "Not sure"),
            ),
        ),
        (
            ContextField.ALLERGIES,
            "Does the person have any medicine allergies?",
            (
                ("none", "None known"),
                ("nsaid", "Aspirin or anti-inflammatories (NSAIDs)"),
                ("antibiotic", "An antibiotic"),
                ("other", "Another medicine"),
                ("unsure", "Not sure"),
            ),
        ),
        (
            ContextField.CONDITIONS,
            "Does the person have any long-term health conditions?",
            (
                ("none", "None"),
                ("kidney_liver", "Kidney or liver disease"),
                ("heart", "Heart disease or high blood pressure"),
                ("stomach", "Stomach ulcer or bleeding problems"),
                ("other", "Another condition"),
            ),
        ),
        (
            ContextField.SEVERITY,
            "How severe are the symptoms?",
            (
                ("mild", "Mild"),
                ("moderate", "Moderate"),
                ("severe", "Severe"),
                ("worsening", "Getting worse quickly"),
            ),
        ),
        (
            ContextField.DURATION,
            "How long have the symptoms lasted?",
            (
                ("under_1_day", "Less than a day"),
                ("1_3_days", "1 to 3 days"),
                ("4_14_days", "4 to 14 days"),
                ("over_2_weeks", "More than 2 weeks"),
            ),
        ),
    )
}

#: The context each category needs before an answer can be tailored safely.
REQUIRED: dict[RiskCategory, tuple[ContextField, ...]] = {
    RiskCategory.MEDICATION: (
        ContextField.AGE_GROUP,
        ContextField.OTHER_MEDICATIONS,
        ContextField.ALLERGIES,
    ),
    RiskCategory.PREGNANCY: (ContextField.PREGNANCY_STAGE,),
    RiskCategory.CHILDREN: (ContextField.CHILD_AGE,),
    RiskCategory.OLDER_ADULTS: (ContextField.OTHER_MEDICATIONS, ContextField.CONDITIONS),
    RiskCategory.CONTROLLED_SUBSTANCE: (ContextField.OTHER_MEDICATIONS,),
    RiskCategory.DIAGNOSIS: (ContextField.SEVERITY, ContextField.DURATION),
}

#: Context the question itself can state; a match counts as answered.
STATED_IN_QUESTION: dict[ContextField, re.Pattern[str]] = {
    ContextField.AGE_GROUP: re.compile(
        r"\b\d{1,3}[- ]?(?:years?[- ]old|yo|y/o)\b|\bi(?:'m| am) \d{1,3}\b|\b(?:child|kid|baby|"
        r"infant|toddler|newborn|teen\w*|son|daughter|elderly|senior)\b",
        re.IGNORECASE,
    ),
    ContextField.PREGNANCY_STAGE: re.compile(
        r"\b(?:trimester|\d{1,2} weeks? pregnant|breast ?feed\w*|nursing|trying to conceive)\b",
        re.IGNORECASE,
    ),
    ContextField.CHILD_AGE: re.compile(
        r"\b\d{1,2}[- ](?:years?|months?|weeks?|days?)[- ]old\b|\bnewborn\b", re.IGNORECASE
    ),
    ContextField.DURATION: re.compile(
        r"\b(?:for|since|past|last) (?:\d+|a|an|one|two|three|few|several) "
        r"(?:hours?|days?|weeks?|months?|years?)\b|\bsince (?:yesterday|this morning|last)\b",
        re.IGNORECASE,
    ),
}

#: Answers that make a case urgent whatever the category.
RED_FLAGS: dict[ContextField, frozenset[str]] = {
    ContextField.SEVERITY: frozenset({"severe", "worsening"}),
    ContextField.CHILD_AGE: frozenset({"under_3_months"}),
}


def question_for(field: ContextField, category: RiskCategory) -> ScreeningQuestion:
    text, options = QUESTIONS[field]
    return ScreeningQuestion(field=field, text=text, options=options, why=category.value)


#: At most this many questions at once, most urgent category's first: a patient answers a few
#: targeted questions, not a form.
MAX_QUESTIONS = 4


def missing_context(
    categories: list[RiskCategory], question: str, patient: Mapping[str, str]
) -> list[ScreeningQuestion]:
    """Questions for the context the categories need and neither the patient nor question gave.

    A harmful request is refused whatever the context, so it asks nothing; nor does a request to
    write something (a post, a leaflet, a letter), which is about no one person whose age or
    medicines could be asked.
    """
    if RiskCategory.HARMFUL_REQUEST in categories or asks_for_writing(question):
        return []
    asked: dict[ContextField, ScreeningQuestion] = {}
    children = RiskCategory.CHILDREN in categories
    for category in categories:
        for field in REQUIRED.get(category, ()):
            if field in asked or str(patient.get(field.value, "")).strip():
                continue
            if field is ContextField.AGE_GROUP and children:
                continue  # the child's age question covers it
            stated = STATED_IN_QUESTION.get(field)
            if stated is not None and stated.search(question):
                continue
            asked[field] = question_for(field, category)
    return list(asked.values())[:MAX_QUESTIONS]


def describe_answers(patient: Mapping[str, str]) -> list[str]:
    """Patient context as readable lines, option keys shown by their labels."""
    lines: list[str] = []
    for key, value in patient.items():
        label = value
        try:
            field = ContextField(key)
        except ValueError:
            lines.append(f"{key}: {value}")
            continue
        question = question_for(field, RiskCategory.GENERAL)
        resolved = question.resolve(value)
        if resolved is not None:
            label = next(o.label for o in question.options if o.key == resolved)
        lines.append(f"{question.text} {label}")
    return lines


def red_flags(patient: Mapping[str, str]) -> list[str]:
    """Answers that call for prompt in-person care."""
    found: list[str] = []
    for field, values in RED_FLAGS.items():
        value = patient.get(field.value)
        if value is None:
            continue
        resolved = question_for(field, RiskCategory.GENERAL).resolve(value)
        if resolved in values:
            found.append(f"{field.value}={resolved}")
    return found

from __future__ import annotations

import pytest

from medgate.claims import EvidenceLevel, StudyDesign, grade_evidence


@pytest.mark.parametrize(
    ("types", "level"),
    [
        (["Journal Article", "Meta-Analysis"], EvidenceLevel.I),
        (["Systematic Review"], EvidenceLevel.I),
        (["Randomized Controlled Trial", "Multicenter Study"], EvidenceLevel.II),
        (["Controlled Clinical Trial"], EvidenceLevel.III),
        (["Observational Study"], EvidenceLevel.III),
        (["Case Reports"], EvidenceLevel.IV),
        (["Editorial"], EvidenceLevel.V),
        (["Review"], EvidenceLevel.V),
        (["Review", "Systematic Review"], EvidenceLevel.I),
    ],
)
def test_publication_types(types: list[str], level: EvidenceLevel) -> None:
    grade = grade_evidence(types)
    assert grade.level is level and grade.basis == "publication_type"


@pytest.mark.parametrize(
    ("title", "design"),
    [
        ("Statins for primary prevention: a systematic review", StudyDesign.SYSTEMATIC_REVIEW),
        ("A randomised, double-blind, placebo-controlled trial of X", StudyDesign.RCT),
        ("A prospective cohort study of coffee and mortality", StudyDesign.COHORT),
        ("Smoking and bladder cancer: a case-control study", StudyDesign.CASE_CONTROL),
        ("Ketoacidosis with SGLT2 inhibitors: a case series", StudyDesign.CASE_SERIES),
        ("Managing hypertension in 2024: expert opinion", StudyDesign.EXPERT_OPINION),
    ],
)
def test_design_words_in_title(title: str, design: StudyDesign) -> None:
    grade = grade_evidence(title=title)
    assert grade.design is design and grade.basis == "title"


def test_title_wins_over_abstract_mentions() -> None:
    grade = grade_evidence(
        title="Dapagliflozin in chronic kidney disease: a randomized controlled trial",
        abstract="A previous meta-analysis suggested benefit. We randomly assigned 4304 adults.",
    )
    assert grade.level is EvidenceLevel.II


def test_abstract_used_without_types_or_title_words() -> None:
    grade = grade_evidence(title="Ketoacidosis", abstract="We report a 54-year-old woman who ...")
    assert grade.level is EvidenceLevel.IV and grade.basis == "abstract"


def test_unknown_design_is_ungraded_not_low() -> None:
    grade = grade_evidence(["Journal Article"], title="Metformin and the kidney")
    assert grade.level is None and grade.design is StudyDesign.UNKNOWN

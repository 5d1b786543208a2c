"""Evidence levels I-V for cited studies, from publication types and study-design words.

Level I   systematic review or meta-analysis
Level II  randomised controlled trial
Level III non-randomised controlled trial, cohort or case-control study (observational)
Level IV  case series or case report
Level V   expert opinion, editorial, comment, letter, narrative review

PubMed publication types are the strongest signal and are used first. Without them the title is
read before the abstract, because an abstract of a randomised trial often mentions an earlier
meta-analysis and would otherwise be graded as one. A study whose design cannot be told is
``ungraded``: that is its own state, not a low grade.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum

from pydantic import Field

from medgate.records import Record


class EvidenceLevel(StrEnum):
    I = "I"  # noqa: E741 - the levels are Roman numerals by convention
    II = "II"
    III = "III"
    IV = "IV"
    V = "V"

    @property
    def rank(self) -> int:
        """1 for level I (strongest) to 5 for level V."""
        return ["I", "II", "III", "IV", "V"].index(self.value) + 1


class StudyDesign(StrEnum):
    SYSTEMATIC_REVIEW = "systematic_review"
    META_ANALYSIS = "meta_analysis"
    RCT = "randomized_controlled_trial"
    CONTROLLED_TRIAL = "non_randomized_controlled_trial"
    COHORT = "cohort"
    CASE_CONTROL = "case_control"
    OBSERVATIONAL = "observational"
    CASE_SERIES = "case_series"
    CASE_REPORT = "case_report"
    EXPERT_OPINION = "expert_opinion"
    UNKNOWN = "unknown"


LEVEL_OF: dict[StudyDesign, EvidenceLevel] = {
    StudyDesign.SYSTEMATIC_REVIEW: EvidenceLevel.I,
    StudyDesign.META_ANALYSIS: EvidenceLevel.I,
    StudyDesign.RCT: EvidenceLevel.II,
    StudyDesign.CONTROLLED_TRIAL: EvidenceLevel.III,
    StudyDesign.COHORT: EvidenceLevel.III,
    StudyDesign.CASE_CONTROL: EvidenceLevel.III,
    StudyDesign.OBSERVATIONAL: EvidenceLevel.III,
    StudyDesign.CASE_SERIES: EvidenceLevel.IV,
    StudyDesign.CASE_REPORT: EvidenceLevel.IV,
    StudyDesign.EXPERT_OPINION: EvidenceLevel.V,
}

#: PubMed publication types (lower-case) and the design each one states.
PUBLICATION_TYPES: dict[str, StudyDesign] = {
    "systematic review": StudyDesign.SYSTEMATIC_REVIEW,
    "meta-analysis": StudyDesign.META_ANALYSIS,
    "network meta-analysis": StudyDesign.META_ANALYSIS,
    "randomized controlled trial": StudyDesign.RCT,
    "pragmatic clinical trial": StudyDesign.RCT,
    "equivalence trial": StudyDesign.RCT,
    "controlled clinical trial": StudyDesign.CONTROLLED_TRIAL,
    "clinical trial": StudyDesign.CONTROLLED_TRIAL,
    "clinical trial, phase i": StudyDesign.CONTROLLED_TRIAL,
    "clinical trial, phase ii": StudyDesign.CONTROLLED_TRIAL,
    "clinical trial, phase iii": StudyDesign.CONTROLLED_TRIAL,
    "clinical trial, phase iv": StudyDesign.CONTROLLED_TRIAL,
    "observational study": StudyDesign.OBSERVATIONAL,
    "cohort studies": StudyDesign.COHORT,
    "case-control studies": StudyDesign.CASE_CONTROL,
    "case reports": StudyDesign.CASE_REPORT,
    "editorial": StudyDesign.EXPERT_OPINION,
    "comment": StudyDesign.EXPERT_OPINION,
    "letter": StudyDesign.EXPERT_OPINION,
    "review": StudyDesign.EXPERT_OPINION,
    "consensus development conference": StudyDesign.EXPERT_OPINION,
}

#: Study-design wording, strongest design first.
_DESIGN_WORDS: tuple[tuple[StudyDesign, re.Pattern[str]], ...] = tuple(
    (design, re.compile(pattern, re.IGNORECASE))
    for design, pattern in (
        (
            StudyDesign.META_ANALYSIS,
            r"\bmeta-?analys[ie]s\b|\bpooled\s+analysis\s+of\s+(?:\d+|randomi)",
        ),
        (StudyDesign.SYSTEMATIC_REVIEW, r"\bsystematic(?:ally)?\s+review"),
        (
            StudyDesign.RCT,
            r"\brandomi[sz]ed,?\s+(?:[\w-]+,?\s+){0,4}trials?\b|\bRCTs?\b"
            r"|\brandomly\s+(?:assigned|allocated)\b",
        ),
        (StudyDesign.CONTROLLED_TRIAL, r"\bnon-?randomi[sz]ed\s+(?:controlled\s+)?trial\b"),
        (StudyDesign.COHORT, r"\b(?:prospective|retrospective|population-based)?\s*cohort\b"),
        (StudyDesign.CASE_CONTROL, r"\bcase[\s-]+control\b"),
        (StudyDesign.OBSERVATIONAL, r"\bobservational\s+study\b|\bcross-sectional\b"),
        (StudyDesign.CASE_SERIES, r"\bcase\s+series\b"),
        (
            StudyDesign.CASE_REPORT,
            r"\bcase\s+report\b|\bwe\s+(?:report|describe|present)\s+a\s+"
            r"(?:\d+-year-old|case|patient)",
        ),
        (
            StudyDesign.EXPERT_OPINION,
            r"\bexpert\s+(?:opinion|consensus|panel)\b|\bconsensus\s+statement\b|\beditorial\b"
            r"|\bnarrative\s+review\b|\bcommentary\b",
        ),
    )
)


class EvidenceGrade(Record):
    """The evidence level of one cited study and how it was decided."""

    level: EvidenceLevel | None = Field(description="None when the design cannot be told.")
    design: StudyDesign
    basis: str = Field(description="'publication_type', 'title', 'abstract' or 'none'.")
    reason: str


def _strongest(designs: Sequence[StudyDesign]) -> StudyDesign | None:
    graded = [d for d in designs if d in LEVEL_OF]
    return min(graded, key=lambda d: LEVEL_OF[d].rank) if graded else None


def _designs_in(text: str) -> list[StudyDesign]:
    return [design for design, pattern in _DESIGN_WORDS if pattern.search(text)]


def grade_evidence(
    publication_types: Sequence[str] = (), title: str = "", abstract: str = ""
) -> EvidenceGrade:
    """Grade a study; the strongest design stated by the first informative signal wins."""
    from_types = [
        PUBLICATION_TYPES[t.strip().lower()]
        for t in publication_types
        if t.strip().lower() in PUBLICATION_TYPES
    ]
    # "Review" alone is a narrative review (V); when a stronger type is also present it wins.
    for basis, designs in (
        ("publication_type", from_types),
        ("title", _designs_in(title)),
        ("abstract", _designs_in(abstract)),
    ):
        design = _strongest(designs)
        if design is not None:
            level = LEVEL_OF[design]
            return EvidenceGrade(
                level=level,
                design=design,
                basis=basis,
                reason=f"{design.value.replace('_', ' ')} ({basis.replace('_', ' ')}): level "
                f"{level.value}",
            )
    return EvidenceGrade(
        level=None,
        design=StudyDesign.UNKNOWN,
        basis="none",
        reason="study design not stated; not graded",
    )

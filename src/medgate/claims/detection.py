"""Which sentences make medical claims, what kind, how dangerous, and whether they cite a source.

Two detectors: the rule sets of :mod:`medgate.claims.rules`, one per claim type, and optionally a
learned :class:`ClaimDetector` (a sentence classifier on embeddings) that is asked only about
the sentences no rule matched. The rules keep precedence: when they fire, their types and
severity stand.

A sentence can match several types ("Take 500 mg daily; it halves mortality"); the most
dangerous type is reported and the others are kept in ``claim_types``. Severity follows the rule
that a wrong dose, medication change, contraindication, interaction or approval statement can
hurt a patient directly (high); a wrong safety assurance, study finding, statistic or
side-effect list misleads (medium), except that an assurance of safety for pregnancy,
children, older people or kidney or liver disease is high; a general efficacy statement is the
least specific (low).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Protocol, runtime_checkable

from pydantic import Field

from medgate.claims.citations import Citation, find_citations
from medgate.claims.rules import (
    RULES,
    ClaimType,
    doses_something,
    mentions_medicine,
    mentions_population,
)
from medgate.claims.sentences import Sentence, split_sentences
from medgate.records import Record

__all__ = [
    "CLAIM_PRIORITY",
    "SEVERITY",
    "Claim",
    "ClaimDetector",
    "ClaimType",
    "LearnedVerdict",
    "Severity",
    "cited_statements",
    "classify",
    "detect_claims",
    "severity_of",
]


class Severity(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def rank(self) -> int:
        return {"high": 3, "medium": 2, "low": 1}[self.value]


#: Most dangerous first: this order decides which type a multi-type sentence is reported as.
CLAIM_PRIORITY: tuple[ClaimType, ...] = (
    ClaimType.MEDICATION_CHANGE,
    ClaimType.DOSE,
    ClaimType.CONTRAINDICATION,
    ClaimType.INTERACTION,
    ClaimType.APPROVAL,
    ClaimType.SAFETY,
    ClaimType.SIDE_EFFECTS,
    ClaimType.STATISTIC,
    ClaimType.STUDY,
    ClaimType.EFFICACY,
    ClaimType.OTHER,
)

SEVERITY: dict[ClaimType, Severity] = {
    ClaimType.DOSE: Severity.HIGH,
    ClaimType.MEDICATION_CHANGE: Severity.HIGH,
    ClaimType.CONTRAINDICATION: Severity.HIGH,
    ClaimType.INTERACTION: Severity.HIGH,
    ClaimType.APPROVAL: Severity.HIGH,
    ClaimType.SAFETY: Severity.MEDIUM,
    ClaimType.SIDE_EFFECTS: Severity.MEDIUM,
    ClaimType.STATISTIC: Severity.MEDIUM,
    ClaimType.STUDY: Severity.MEDIUM,
    ClaimType.EFFICACY: Severity.LOW,
    ClaimType.OTHER: Severity.LOW,
}


def severity_of(types: Sequence[ClaimType], sentence: str) -> Severity:
    """The highest severity among ``types``; safety for a special population is high."""
    if ClaimType.SAFETY in types and mentions_population(sentence):
        return Severity.HIGH
    return max((SEVERITY[t] for t in types), key=lambda s: s.rank, default=Severity.LOW)


class LearnedVerdict(Record):
    """What a learned detector says about one sentence."""

    claim_type: ClaimType | None = Field(description="None when it sees no claim.")
    probability: float = Field(ge=0.0, le=1.0, description="Its probability of a claim.")


@runtime_checkable
class ClaimDetector(Protocol):
    """A detector beside the rules; asked only about sentences no rule matched."""

    @property
    def name(self) -> str: ...

    def predict(self, sentences: Sequence[str]) -> list[LearnedVerdict]:
        """One verdict per sentence, in order."""
        ...


class Claim(Record):
    """A sentence that makes a medical claim (or, typed ``other``, one that cites a source)."""

    sentence: Sentence
    claim_type: ClaimType = Field(description="The most dangerous type the sentence matches.")
    claim_types: list[ClaimType] = Field(description="Every type it matches, most dangerous first.")
    severity: Severity
    citations: list[Citation] = Field(default_factory=list)
    detected_by: str = Field(
        default="rules", description="'rules', or the name of the learned detector that found it."
    )
    probability: float | None = Field(
        default=None, description="The learned detector's probability of a claim, when it found it."
    )

    @property
    def cited(self) -> bool:
        return bool(self.citations)


def classify(sentence: str) -> list[ClaimType]:
    """Claim types the rules find in ``sentence``, most dangerous first; empty when none."""
    return [kind for kind in CLAIM_PRIORITY if kind in RULES and RULES[kind](sentence)]


def _sentences(text: str | Sequence[Sentence]) -> list[Sentence]:
    return split_sentences(text) if isinstance(text, str) else list(text)


def cited_statements(
    text: str | Sequence[Sentence], detector: ClaimDetector | None = None
) -> list[Claim]:
    """Claims plus every other sentence that carries a citation (typed ``other``).

    Citation verification runs on these: whatever a sentence cites must exist and back it,
    whether or not the sentence was recognised as a claim.
    """
    sentences = _sentences(text)
    rule_types = [classify(s.text) for s in sentences]
    missed = [i for i, types in enumerate(rule_types) if not types]
    learned: dict[int, LearnedVerdict] = {}
    if detector is not None and missed:
        verdicts = detector.predict([sentences[i].text for i in missed])
        names_medicine = mentions_medicine(" ".join(s.text for s in sentences))
        learned = {
            i: v
            for i, v in zip(missed, verdicts, strict=True)
            if v.claim_type
            and (names_medicine or not _activity_called_dose(v.claim_type, sentences[i].text))
        }
    out: list[Claim] = []
    for i, sentence in enumerate(sentences):
        citations = find_citations(sentence.text)
        verdict = learned.get(i)
        kinds = rule_types[i] or ([verdict.claim_type] if verdict and verdict.claim_type else [])
        if not kinds and not citations:
            continue
        kinds = kinds or [ClaimType.OTHER]
        out.append(
            Claim(
                sentence=sentence,
                claim_type=kinds[0],
                claim_types=kinds,
                severity=severity_of(kinds, sentence.text),
                citations=citations,
                detected_by="rules"
                if rule_types[i] or verdict is None
                else detector_name(detector),
                probability=verdict.probability if verdict and not rule_types[i] else None,
            )
        )
    return out


def _activity_called_dose(claim_type: ClaimType, sentence: str) -> bool:
    # The embedding reads "7-9 hours of sleep per night" or "wash for 20 seconds" as close to a
    # schedule of a medicine; a dose needs something taken or given, which the rules can check.
    # A text that names a medicine anywhere keeps the verdict: "have one every morning" there
    # may well mean a tablet.
    return claim_type is ClaimType.DOSE and not doses_something(sentence)


def detector_name(detector: ClaimDetector | None) -> str:
    return detector.name if detector is not None else "rules"


def detect_claims(
    text: str | Sequence[Sentence], detector: ClaimDetector | None = None
) -> list[Claim]:
    """Every claim-making sentence of ``text`` with its type, severity and citations.

    There is no minimum sentence length: "Take 5 mg daily." is short and the most dangerous kind
    of sentence there is.
    """
    return [c for c in cited_statements(text, detector) if c.claim_type is not ClaimType.OTHER]

"""Flags: what the claims layer reports about a sentence, and what to do about it."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from pydantic import Field

from medgate.claims.citations import Citation
from medgate.claims.detection import Claim, ClaimType, Severity
from medgate.records import Record

#: Flags carry at most this much of the sentence, enough to find it again in the report.
MAX_FLAG_SENTENCE = 300


class FlagKind(StrEnum):
    UNCITED = "uncited"
    """A medical claim with no citation at all."""
    UNRESOLVABLE = "unresolvable"
    """The claim cites an id that does not exist (or a reference number the list lacks)."""
    UNSUPPORTED = "unsupported"
    """The cited source exists but does not back the sentence."""


class ClaimFlag(Record):
    """One problem with one claim, with an actionable suggestion."""

    kind: FlagKind
    sentence: str = Field(description="The sentence, cut to 300 characters.")
    sentence_index: int = Field(ge=0)
    claim_type: ClaimType
    claim_types: list[ClaimType]
    severity: Severity
    citations: list[Citation] = Field(default_factory=list)
    suggestion: str
    detail: str = Field(default="", description="Why the flag was raised (e.g. judge's reason).")


_UNCITED_ADVICE: dict[ClaimType, str] = {
    ClaimType.DOSE: "Dose statements need a source (PMID or the drug label); otherwise remove the "
    "specific dose and refer the reader to a prescriber.",
    ClaimType.MEDICATION_CHANGE: "Advice to stop, skip, double or switch a medicine must come "
    "from the prescriber: remove it, or say the person should ask their doctor or pharmacist "
    "before changing anything.",
    ClaimType.CONTRAINDICATION: "Cite the label, guideline or study (PMID) for this "
    "contraindication, or remove it.",
    ClaimType.INTERACTION: "Cite the drug label or an interaction reference for this statement, "
    "or tell the reader to ask a pharmacist about combining these.",
    ClaimType.SAFETY: "An assurance of safety needs a source (label, guideline, PMID); otherwise "
    "qualify it and point the reader to a clinician, above all for pregnancy, children, older "
    "people and kidney or liver disease.",
    ClaimType.APPROVAL: "Cite the regulator's decision (FDA/EMA label or approval letter) or "
    "remove the approval claim.",
    ClaimType.SIDE_EFFECTS: "Reference the drug label or a study (PMID/DOI) for these side "
    "effects.",
    ClaimType.STATISTIC: "Name the study (PMID, NCT or DOI) this figure comes from, or remove it.",
    ClaimType.STUDY: "This study-level claim should reference a specific source (PMID or DOI).",
    ClaimType.EFFICACY: "Consider adding a citation that supports this efficacy statement.",
    ClaimType.OTHER: "Consider adding a citation that supports this statement.",
}


def suggestion_for(kind: FlagKind, claim_type: ClaimType, severity: Severity) -> str:
    """An actionable next step for the writer of the report."""
    if kind is FlagKind.UNRESOLVABLE:
        return (
            "The cited id could not be found: check it, replace it with a real source, or "
            "remove the claim; a citation that does not exist is a sign of fabrication."
        )
    if kind is FlagKind.UNSUPPORTED:
        return (
            "The cited source does not appear to support this sentence: reword the claim to "
            "match the source or cite one that does support it."
        )
    advice = _UNCITED_ADVICE[claim_type]
    if severity is Severity.HIGH:
        return "This claim requires a citation. " + advice
    return advice


def flag_claim(claim: Claim, kind: FlagKind, detail: str = "") -> ClaimFlag:
    """Make a flag of ``kind`` for ``claim``.

    An unresolvable citation is at least medium severity whatever the claim: a made-up id is
    stronger evidence of fabrication than a missing one.
    """
    severity = claim.severity
    if kind is FlagKind.UNRESOLVABLE and severity is Severity.LOW:
        severity = Severity.MEDIUM
    return ClaimFlag(
        kind=kind,
        sentence=claim.sentence.text[:MAX_FLAG_SENTENCE],
        sentence_index=claim.sentence.index,
        claim_type=claim.claim_type,
        claim_types=list(claim.claim_types),
        severity=severity,
        citations=list(claim.citations),
        suggestion=suggestion_for(kind, claim.claim_type, severity),
        detail=detail,
    )


def uncited_flags(claims: Sequence[Claim]) -> list[ClaimFlag]:
    """A flag for every claim that carries no citation."""
    return [flag_claim(c, FlagKind.UNCITED) for c in claims if not c.cited]

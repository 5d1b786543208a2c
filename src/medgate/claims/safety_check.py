"""The final gate of the claims layer: one typed verdict, and the disclaimer on every answer.

Four checks, as the design asks: are there sources; are there high-severity uncited claims; is
there dose information without the disclaimer; is the disclaimer present. Past them, a citation
that does not resolve or does not support its sentence, and any check that failed to run, count
against the answer. The answer is unsafe when any high-severity flag is raised, any citation is
unresolvable, any check failed, or more than one warning stands: one warning on its own (say, no
sources) is shown but does not block.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum

from pydantic import Field

from medgate.claims.detection import Claim, ClaimType, Severity
from medgate.claims.flags import ClaimFlag, FlagKind
from medgate.claims.sources import ListedSource
from medgate.claims.verification import CitationStatus, VerificationReport
from medgate.quantities import medicine_amounts
from medgate.records import Record

MEDICAL_DISCLAIMER = (
    "**Disclaimer:** This information comes from an automated research tool and is for "
    "information only. It is not a substitute for professional medical advice, diagnosis or "
    "treatment. Always ask a qualified healthcare provider before making medical decisions."
)
DISCLAIMER_SEPARATOR = "\n\n---\n\n"

_DISCLAIMER_MARKERS = re.compile(
    r"not\s+(?:a\s+)?substitute\s+for\s+(?:professional\s+)?medical\s+advice|not\s+medical\s+advice"
    r"|does\s+not\s+constitute\s+medical\s+advice",
    re.IGNORECASE,
)


class SafetyVerdict(StrEnum):
    SAFE = "safe"
    UNSAFE = "unsafe"


def disclaimer_present(text: str) -> bool:
    """True when ``text`` already carries a medical disclaimer (ours or an equivalent one)."""
    return MEDICAL_DISCLAIMER in text or _DISCLAIMER_MARKERS.search(text) is not None


def apply_disclaimer(text: str) -> str:
    """``text`` with medgate's disclaimer appended; applied to everything that leaves medgate.

    It is appended even when the text has a disclaimer of its own (that one may be wrong or
    partial), but never twice: text that already ends with ours is returned unchanged.
    """
    if text.rstrip().endswith(MEDICAL_DISCLAIMER):
        return text
    return f"{text.rstrip()}{DISCLAIMER_SEPARATOR}{MEDICAL_DISCLAIMER}"


def has_dose_information(text: str, claims: Sequence[Claim] = ()) -> bool:
    """Dose claims, or an amount of a medicine anywhere (defence in depth beyond the detector)."""
    if any(ClaimType.DOSE in c.claim_types for c in claims):
        return True
    return bool(medicine_amounts(text))


class SafetyCheck(Record):
    """The claims layer's verdict on one answer, streamed as a
    :class:`~medgate.events.ClaimsEvent`."""

    verdict: SafetyVerdict
    is_safe: bool
    warnings: list[str] = Field(default_factory=list)
    flags: list[ClaimFlag] = Field(default_factory=list)
    claims_count: int = Field(ge=0, description="Sentences that make a medical claim.")
    flag_count: int = Field(ge=0)
    high_severity_count: int = Field(ge=0, description="High-severity flags of any kind.")
    uncited_count: int = Field(ge=0)
    unresolvable_count: int = Field(ge=0)
    unsupported_count: int = Field(ge=0)
    sources_count: int = Field(ge=0)
    sources: list[ListedSource] = Field(default_factory=list)
    dose_information: bool
    disclaimer_present: bool = Field(description="Whether the answer carried a disclaimer itself.")
    verification: VerificationReport | None = Field(
        default=None, description="None when citation verification was not asked for."
    )
    errors: list[str] = Field(default_factory=list, description="Checks that failed to run.")
    disclaimer: str = MEDICAL_DISCLAIMER


def check_safety(
    report: str,
    flags: Sequence[ClaimFlag],
    *,
    claims: Sequence[Claim] = (),
    sources: Sequence[ListedSource] = (),
    sources_count: int | None = None,
    verification: VerificationReport | None = None,
    errors: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> SafetyCheck:
    """Aggregate the flags and the four checks into one verdict.

    ``notes`` are further warnings from the caller (e.g. about what citations rest on); each
    counts like any other warning.
    """
    all_flags = list(flags)
    if verification is not None:
        all_flags.extend(verification.flags)
    failures = list(errors) + (list(verification.errors) if verification else [])
    count = len(sources) if sources_count is None else sources_count

    def n(kind: FlagKind) -> int:
        return sum(1 for f in all_flags if f.kind is kind)

    high_uncited = sum(
        1 for f in all_flags if f.kind is FlagKind.UNCITED and f.severity is Severity.HIGH
    )
    high = sum(1 for f in all_flags if f.severity is Severity.HIGH)
    dose = has_dose_information(report, claims)
    disclaimer = disclaimer_present(report)

    warnings: list[str] = []
    if count == 0:
        warnings.append("No sources cited: the answer may rest on the model's knowledge only")
    if high_uncited:
        warnings.append(f"{high_uncited} high-severity uncited medical claim(s) detected")
    if dose and not disclaimer:
        warnings.append("Answer contains dose information without a disclaimer")
    if n(FlagKind.UNRESOLVABLE):
        warnings.append(f"{n(FlagKind.UNRESOLVABLE)} claim(s) cite sources that do not resolve")
    if n(FlagKind.UNSUPPORTED):
        warnings.append(f"{n(FlagKind.UNSUPPORTED)} claim(s) cite sources that do not support them")
    if verification is not None and verification.count(CitationStatus.UNCHECKED):
        warnings.append(
            f"{verification.count(CitationStatus.UNCHECKED)} citation(s) could not be checked "
            "(a reference without an id, or [n] without a reference list)"
        )
    warnings.extend(notes)
    if failures:
        warnings.append(f"{len(failures)} check(s) failed to run; failing closed")

    is_safe = high == 0 and n(FlagKind.UNRESOLVABLE) == 0 and not failures and len(warnings) <= 1
    return SafetyCheck(
        verdict=SafetyVerdict.SAFE if is_safe else SafetyVerdict.UNSAFE,
        is_safe=is_safe,
        warnings=warnings,
        flags=all_flags,
        claims_count=len(claims),
        flag_count=len(all_flags),
        high_severity_count=high,
        uncited_count=n(FlagKind.UNCITED),
        unresolvable_count=n(FlagKind.UNRESOLVABLE),
        unsupported_count=n(FlagKind.UNSUPPORTED),
        sources_count=count,
        sources=list(sources),
        dose_information=dose,
        disclaimer_present=disclaimer,
        verification=verification,
        errors=failures,
    )

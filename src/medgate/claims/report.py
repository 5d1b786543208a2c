"""Run the whole claims layer on one long-form answer."""

from __future__ import annotations

from collections.abc import Sequence

from medgate.claims.citations import CitationKind, Reference, split_references
from medgate.claims.detection import Claim, ClaimDetector, ClaimType, Severity, cited_statements
from medgate.claims.flags import uncited_flags
from medgate.claims.safety_check import SafetyCheck, check_safety
from medgate.claims.sentences import split_sentences
from medgate.claims.sources import ListedSource, list_sources
from medgate.claims.verification import CitationVerifier, VerificationReport
from medgate.errors import InputError

#: Larger answers are refused rather than checked partly.
MAX_REPORT_CHARS = 200_000


def check_report(
    text: str,
    verifier: CitationVerifier | None = None,
    detector: ClaimDetector | None = None,
) -> SafetyCheck:
    """Detect claims, score sources, verify citations (when a verifier is given), then decide.

    ``detector`` is asked about the sentences no rule matched. The reference list is not
    scanned for claims; its entries are scored as sources. An unexpected failure inside
    detection or verification is recorded and makes the verdict unsafe.
    """
    if not text.strip():
        raise InputError("the answer to check is empty")
    if len(text) > MAX_REPORT_CHARS:
        raise InputError(f"the answer is longer than {MAX_REPORT_CHARS} characters")
    body, references = split_references(text)
    sentences = split_sentences(body)
    errors: list[str] = []
    try:
        statements = cited_statements(sentences, detector)
    except Exception as exc:  # fail closed: the rules still run, the failure makes it unsafe
        errors.append(f"claim detection failed: {type(exc).__name__}: {exc}")
        statements = cited_statements(sentences)
    claims = [s for s in statements if s.claim_type is not ClaimType.OTHER]
    flags = uncited_flags(claims)
    sources = list_sources(body, references)
    verification: VerificationReport | None = None
    if verifier is not None:
        try:
            verification = verifier.verify(statements, references)
        except Exception as exc:  # fail closed: a broken verifier must not release the answer
            errors.append(f"citation verification failed: {type(exc).__name__}: {exc}")
    return check_safety(
        text,
        flags,
        claims=claims,
        sources=sources,
        verification=verification,
        errors=errors,
        notes=source_notes(claims, references, sources),
    )


#: Sources below this score (preprints, unverified web pages) do not carry a high-severity claim.
WEAK_SOURCE_SCORE = 60


def source_notes(
    claims: Sequence[Claim], references: Sequence[Reference], sources: Sequence[ListedSource]
) -> list[str]:
    """Warnings about what cited claims rest on, visible without any lookup.

    A ``[n]`` with no reference list points at nothing the reader can see; a high-severity
    claim whose every citation is a ``[n]`` to a preprint or unverified web page rests on weak
    ground even though it is formally cited.
    """
    score_of = {s.reference_number: s.credibility.score for s in sources if s.reference_number}
    dangling = 0
    weak = 0
    for claim in claims:
        brackets = [c for c in claim.citations if c.kind is CitationKind.BRACKET]
        if brackets and not references:
            dangling += 1
            continue
        if claim.severity is not Severity.HIGH or len(brackets) != len(claim.citations):
            continue
        numbers = [int(n) for c in brackets for n in c.value.split(",") if n]
        scores = [score_of[n] for n in numbers if n in score_of]
        if scores and max(scores) < WEAK_SOURCE_SCORE:
            weak += 1
    notes = []
    if dangling:
        notes.append(
            f"{dangling} claim(s) cite [n] references but the answer has no reference list"
        )
    if weak:
        notes.append(
            f"{weak} high-severity claim(s) rest only on preprints or unverified web sources"
        )
    return notes

"""Run the whole claims layer on one long-form answer."""

from __future__ import annotations

from medgate.claims.citations import split_references
from medgate.claims.detection import ClaimType, cited_statements
from medgate.claims.flags import uncited_flags
from medgate.claims.safety_check import SafetyCheck, check_safety
from medgate.claims.sentences import split_sentences
from medgate.claims.sources import list_sources
from medgate.claims.verification import CitationVerifier, VerificationReport
from medgate.errors import InputError

#: Larger answers are refused rather than checked partly.
MAX_REPORT_CHARS = 200_000


def check_report(text: str, verifier: CitationVerifier | None = None) -> SafetyCheck:
    """Detect claims, score sources, verify citations (when a verifier is given), then decide.

    The reference list is not scanned for claims; its entries are scored as sources. An
    unexpected failure inside verification is recorded and makes the verdict unsafe.
    """
    if not text.strip():
        raise InputError("the answer to check is empty")
    if len(text) > MAX_REPORT_CHARS:
        raise InputError(f"the answer is longer than {MAX_REPORT_CHARS} characters")
    body, references = split_references(text)
    sentences = split_sentences(body)
    statements = cited_statements(sentences)
    claims = [s for s in statements if s.claim_type is not ClaimType.OTHER]
    flags = uncited_flags(claims)
    sources = list_sources(body, references)
    verification: VerificationReport | None = None
    errors: list[str] = []
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
    )

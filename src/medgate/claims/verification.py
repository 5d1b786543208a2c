"""Citation verification: a cited id must exist, and the source must back the sentence.

For every claim that carries citations, each PMID, NCT id, DOI and author-year citation (directly,
or through the numbered reference list for ``[n]`` citations) is looked up in a
:class:`RecordStore` and the sentence is judged against the record's text by a
:class:`SupportJudge`. A citation counts as support only when it resolves *and* the judge finds
support. A claim gets

- an ``unresolvable`` flag when any citation resolves to nothing (an id that does not exist, an
  author with no work that year, a ``[n]`` past the list, or a citation the store cannot find:
  offline, a store holds only the records it was given);
- an ``unsupported`` flag when its sources resolved but none of them supports it.

A ``[n]`` whose reference entry carries no id (a bare URL) is ``unchecked``, its own state that
never counts as verified. A lookup or judge that fails is an ``error``: the safety check treats it
as a failed check, not as a pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from pydantic import Field

from medgate.claims.citations import Citation, CitationKind, Reference, without_citations
from medgate.claims.clients.errors import ServiceError
from medgate.claims.credibility import Credibility, score_source
from medgate.claims.detection import Claim
from medgate.claims.evidence import EvidenceGrade, grade_evidence
from medgate.claims.flags import ClaimFlag, FlagKind, flag_claim
from medgate.claims.records_store import RecordStore, SourceRecord
from medgate.claims.support import SupportJudge
from medgate.errors import MedgateError
from medgate.records import Record


class CitationStatus(StrEnum):
    SUPPORTED = "supported"
    UNSUPPORTED = "unsupported"
    UNRESOLVABLE = "unresolvable"
    UNCHECKED = "unchecked"
    """A [n] whose reference has no id to look up, or with no reference list at all."""
    ERROR = "error"
    """The lookup or the judge failed: the check did not run."""


class CitationCheck(Record):
    """The outcome for one cited id of one sentence."""

    sentence_index: int = Field(ge=0)
    citation: Citation
    resolved_key: str | None = Field(default=None, description="The id that was looked up.")
    status: CitationStatus
    score: float | None = Field(default=None, description="The judge's support score.")
    method: str = ""
    detail: str = ""
    evidence: EvidenceGrade | None = None
    credibility: Credibility | None = None


class VerificationReport(Record):
    """Everything citation verification found in one report."""

    judge: str
    checks: list[CitationCheck] = Field(default_factory=list)
    flags: list[ClaimFlag] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)

    def count(self, status: CitationStatus) -> int:
        return sum(1 for c in self.checks if c.status is status)


#: Citation forms a record store can look up.
_RESOLVABLE = (CitationKind.PMID, CitationKind.NCT, CitationKind.DOI, CitationKind.AUTHOR_YEAR)


def _targets(
    citation: Citation, references: dict[int, Reference], has_reference_list: bool
) -> tuple[list[Citation], str | None]:
    """The resolvable ids a citation stands for, or the reason it cannot be resolved.

    Returns ``([], None)`` for forms that cannot be checked here.
    """
    if citation.kind in _RESOLVABLE:
        return [citation], None
    if citation.kind is CitationKind.BRACKET:
        if not has_reference_list:
            return [], None
        numbers = [int(n) for n in citation.value.split(",") if n]
        missing = [n for n in numbers if n not in references]
        if missing:
            return [], f"reference {', '.join(map(str, missing))} is not in the reference list"
        ids = [c for n in numbers for c in references[n].citations if c.kind in _RESOLVABLE]
        return ids, None
    return [], None


class CitationVerifier:
    """Checks the citations of claims against a record store with a support judge."""

    def __init__(self, store: RecordStore, judge: SupportJudge) -> None:
        self.store = store
        self.judge = judge

    def _check_id(self, claim: Claim, shown: Citation, target: Citation) -> CitationCheck:
        base = {
            "sentence_index": claim.sentence.index,
            "citation": shown,
            "resolved_key": target.key,
        }
        try:
            record: SourceRecord | None = self.store.lookup(target, claim.sentence.text)
        except ServiceError as exc:
            return CitationCheck(**base, status=CitationStatus.ERROR, detail=str(exc))
        if record is None:
            return CitationCheck(
                **base,
                status=CitationStatus.UNRESOLVABLE,
                detail=f"{target.key} does not resolve to a record in {self.store.description}",
            )
        grade = grade_evidence(record.publication_types, record.title, record.text)
        credibility = score_source(
            record.url or record.key, record.source_type, journal=record.journal
        )
        try:
            judgement = self.judge.judge(
                without_citations(claim.sentence.text), record.evidence_text
            )
        except (MedgateError, ValueError) as exc:
            return CitationCheck(
                **base,
                status=CitationStatus.ERROR,
                detail=f"support judge failed: {exc}",
                evidence=grade,
                credibility=credibility,
            )
        return CitationCheck(
            **base,
            status=CitationStatus.SUPPORTED if judgement.supported else CitationStatus.UNSUPPORTED,
            score=judgement.score,
            method=judgement.method,
            detail=judgement.reason,
            evidence=grade,
            credibility=credibility,
        )

    def verify(
        self, claims: Sequence[Claim], references: Sequence[Reference] = ()
    ) -> VerificationReport:
        by_number = {r.number: r for r in references}
        report = VerificationReport(judge=self.judge.name)
        for claim in claims:
            checks: list[CitationCheck] = []
            for citation in claim.citations:
                targets, problem = _targets(citation, by_number, bool(references))
                if problem is not None:
                    checks.append(
                        CitationCheck(
                            sentence_index=claim.sentence.index,
                            citation=citation,
                            status=CitationStatus.UNRESOLVABLE,
                            detail=problem,
                        )
                    )
                elif not targets:
                    checks.append(
                        CitationCheck(
                            sentence_index=claim.sentence.index,
                            citation=citation,
                            status=CitationStatus.UNCHECKED,
                            detail=(
                                "the reference names no PMID, NCT id or DOI to look up"
                                if references
                                else "there is no reference list to resolve it against"
                            ),
                        )
                    )
                else:
                    checks.extend(self._check_id(claim, citation, t) for t in targets)
            report.checks.extend(checks)
            report.errors.extend(
                f"sentence {claim.sentence.index}: {c.detail}"
                for c in checks
                if c.status is CitationStatus.ERROR
            )
            unresolvable = [c for c in checks if c.status is CitationStatus.UNRESOLVABLE]
            if unresolvable:
                report.flags.append(
                    flag_claim(
                        claim, FlagKind.UNRESOLVABLE, "; ".join(c.detail for c in unresolvable)
                    )
                )
            judged = [
                c
                for c in checks
                if c.status in (CitationStatus.SUPPORTED, CitationStatus.UNSUPPORTED)
            ]
            if judged and all(c.status is CitationStatus.UNSUPPORTED for c in judged):
                report.flags.append(
                    flag_claim(
                        claim,
                        FlagKind.UNSUPPORTED,
                        "; ".join(f"{c.resolved_key}: {c.detail}" for c in judged),
                    )
                )
        return report

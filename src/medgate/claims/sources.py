"""The sources a report lists or cites inline, each with its credibility."""

from __future__ import annotations

import re

from pydantic import Field

from medgate.claims.citations import CitationKind, Reference, find_citations, find_urls
from medgate.claims.credibility import TIER1_JOURNALS, Credibility, SourceType, score_source
from medgate.records import Record


class ListedSource(Record):
    """One distinct source of a report."""

    label: str = Field(description="PMID:..., NCT..., DOI:..., or the URL.")
    reference_number: int | None = Field(default=None, description="Its number in the list.")
    text: str = Field(default="", description="The reference entry as written, if listed.")
    credibility: Credibility


_JOURNAL_PATTERNS = sorted(TIER1_JOURNALS, key=len, reverse=True)


def journal_in(text: str) -> str:
    """A tier-1 journal named in a reference entry (whole words), or ''."""
    flat = " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())
    for name in _JOURNAL_PATTERNS:
        if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", flat):
            return name
    return ""


def _score_reference(ref: Reference) -> tuple[str, Credibility]:
    kinds = {c.kind: c for c in ref.citations}
    journal = journal_in(ref.text)
    if CitationKind.PMID in kinds:
        key = kinds[CitationKind.PMID].key
        return key, score_source(key, SourceType.PUBMED, journal=journal)
    if CitationKind.NCT in kinds:
        key = kinds[CitationKind.NCT].key
        return key, score_source(key, SourceType.CLINICALTRIALS)
    if ref.url:
        return ref.url, score_source(ref.url)
    if CitationKind.DOI in kinds:
        key = kinds[CitationKind.DOI].key
        # A DOI alone says nothing about peer review unless a known journal is named with it.
        if journal:
            return key, score_source(key, SourceType.PUBMED, journal=journal)
        return key, score_source(key)
    return ref.text[:80], score_source(ref.text[:80])


def list_sources(body: str, references: list[Reference]) -> list[ListedSource]:
    """Reference-list entries first, then ids and URLs cited inline but not listed."""
    sources: list[ListedSource] = []
    seen: set[str] = set()
    for ref in references:
        label, credibility = _score_reference(ref)
        seen.add(label.upper())
        seen.update(c.key.upper() for c in ref.citations)
        sources.append(
            ListedSource(
                label=label, reference_number=ref.number, text=ref.text, credibility=credibility
            )
        )
    for citation in find_citations(body):
        key = citation.key
        if citation.kind not in (CitationKind.PMID, CitationKind.NCT) or key.upper() in seen:
            continue
        seen.add(key.upper())
        kind = (
            SourceType.PUBMED if citation.kind is CitationKind.PMID else SourceType.CLINICALTRIALS
        )
        sources.append(ListedSource(label=key, credibility=score_source(key, kind)))
    for url in find_urls(body):
        if url.upper() in seen:
            continue
        seen.add(url.upper())
        sources.append(ListedSource(label=url, credibility=score_source(url)))
    return sources

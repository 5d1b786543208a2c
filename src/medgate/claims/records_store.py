"""Where citations are looked up: a local store, or the online services.

Both answer the same question, "what does this citation point to?", with a :class:`SourceRecord`
or None when it points to nothing. PMIDs, NCT ids and DOIs name one record; an author-year
citation ("Smith et al., 2019") names the works of that first author in that year, and the store
returns the one closest to the sentence that cites it, or None when that author published
nothing that year. A store that cannot answer (offline, service down, breaker open)
raises :class:`~medgate.claims.clients.errors.ServiceError`; the verifier turns that into a
failed check, never into a pass.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import Field, ValidationError

from medgate.claims.citations import Citation, CitationKind
from medgate.claims.clients.clinicaltrials import ClinicalTrialsClient, TrialRecord
from medgate.claims.clients.crossref import CrossrefClient, CrossrefWork
from medgate.claims.clients.pubmed import PubMedArticle, PubMedClient
from medgate.claims.credibility import SourceType
from medgate.claims.support import content_terms
from medgate.errors import InputError
from medgate.records import Record


class SourceRecord(Record):
    """What a cited id points to: enough text to judge support and to grade the evidence."""

    key: str = Field(description="'PMID:12345678', 'NCT01234567' or 'DOI:10.1056/...'.")
    source_type: SourceType
    title: str = ""
    text: str = Field(default="", description="Abstract or trial summary the claim is judged on.")
    journal: str = ""
    publication_types: list[str] = Field(default_factory=list)
    url: str = ""
    doi: str = Field(default="", description="The record's DOI, lower case, when known.")
    authors: list[str] = Field(default_factory=list, description="Family names, in order.")
    year: int | None = None

    @property
    def evidence_text(self) -> str:
        title = self.title.strip()
        if title and not title.endswith((".", "?", "!")):
            title += "."
        return f"{title} {self.text.strip()}".strip()


def record_from_article(article: PubMedArticle) -> SourceRecord:
    return SourceRecord(
        key=f"PMID:{article.pmid}",
        source_type=SourceType.PUBMED,
        title=article.title,
        text=article.abstract,
        journal=article.journal,
        publication_types=list(article.publication_types),
        url=f"https://pubmed.ncbi.nlm.nih.gov/{article.pmid}/",
        doi=(article.doi or "").lower(),
        year=article.year,
    )


def record_from_work(work: CrossrefWork) -> SourceRecord:
    return SourceRecord(
        key=f"DOI:{work.doi}",
        source_type=SourceType.CROSSREF,
        title=work.title,
        text=work.abstract,
        journal=work.journal,
        url=f"https://doi.org/{work.doi}",
        doi=work.doi,
        authors=list(work.authors),
        year=work.year,
    )


def _norm_name(name: str) -> str:
    return " ".join(name.lower().replace("’", "'").split())


def closest(records: Sequence[SourceRecord], claim: str) -> SourceRecord | None:
    """The record sharing most content words with ``claim`` (the first on a tie)."""
    if not records:
        return None
    words = content_terms(claim)[0]

    def overlap(record: SourceRecord) -> int:
        return len(words & content_terms(record.evidence_text)[0])

    return max(records, key=overlap)


def matches_author_year(record: SourceRecord, author: str, year: int) -> bool:
    """The record's first author is ``author`` and it appeared in ``year``."""
    return (
        record.year == year
        and bool(record.authors)
        and _norm_name(record.authors[0]) == _norm_name(author)
    )


def record_from_trial(trial: TrialRecord) -> SourceRecord:
    types = []
    if trial.allocation.upper() == "RANDOMIZED":
        types.append("Randomized Controlled Trial")
    elif trial.study_type.upper() == "INTERVENTIONAL":
        types.append("Clinical Trial")
    elif trial.study_type.upper() == "OBSERVATIONAL":
        types.append("Observational Study")
    return SourceRecord(
        key=trial.nct_id,
        source_type=SourceType.CLINICALTRIALS,
        title=trial.official_title or trial.title,
        text=" ".join(p for p in (trial.summary, trial.description) if p),
        publication_types=types,
        url=f"https://clinicaltrials.gov/study/{trial.nct_id}",
    )


@runtime_checkable
class RecordStore(Protocol):
    """Resolves a citation to the record it names."""

    @property
    def description(self) -> str:
        """Where records come from, for messages ("offline record store of 12 records")."""
        ...

    def lookup(self, citation: Citation, claim: str = "") -> SourceRecord | None:
        """The record, or None when the citation points to nothing; raises ServiceError when
        unsure. ``claim`` (the citing sentence) picks among an author's works of one year."""
        ...


class LocalRecordStore:
    """Records held in memory, e.g. loaded from a JSONL file of :class:`SourceRecord` rows.

    For offline use: an id missing from the store is reported as unresolvable, so the store
    must hold every source the reports are allowed to cite.
    """

    def __init__(self, records: Iterable[SourceRecord] = ()) -> None:
        self._records: dict[str, SourceRecord] = {}
        for record in records:
            self._records[record.key.upper()] = record
            if record.doi:
                self._records.setdefault(f"DOI:{record.doi}".upper(), record)

    def __len__(self) -> int:
        return len({id(r) for r in self._records.values()})

    @property
    def description(self) -> str:
        return f"the offline record store ({len(self)} records)"

    def lookup(self, citation: Citation, claim: str = "") -> SourceRecord | None:
        author_year = citation.author_year
        if author_year is not None:
            works = {
                id(r): r for r in self._records.values() if matches_author_year(r, *author_year)
            }
            return closest(list(works.values()), claim)
        return self._records.get(citation.key.upper())

    @classmethod
    def from_jsonl(cls, path: Path) -> LocalRecordStore:
        if not path.is_file():
            raise InputError(f"record store {path} is not a file")
        records = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(SourceRecord.model_validate(json.loads(line)))
            except (json.JSONDecodeError, ValidationError) as exc:
                raise InputError(f"{path}:{number}: not a source record ({exc})") from exc
        return cls(records)

    @classmethod
    def from_mapping(cls, records: Mapping[str, SourceRecord]) -> LocalRecordStore:
        return cls(records.values())


class OnlineRecordStore:
    """PMIDs through PubMed, NCT ids through ClinicalTrials.gov, DOIs and author-year citations
    through Crossref; a local store, when given, is asked first."""

    def __init__(
        self,
        pubmed: PubMedClient,
        trials: ClinicalTrialsClient,
        crossref: CrossrefClient | None = None,
        local: LocalRecordStore | None = None,
    ) -> None:
        self.pubmed = pubmed
        self.trials = trials
        self.crossref = crossref
        self.local = local

    @property
    def description(self) -> str:
        services = "PubMed, ClinicalTrials.gov" + (" and Crossref" if self.crossref else "")
        return services + (f" after {self.local.description}" if self.local else "")

    def lookup(self, citation: Citation, claim: str = "") -> SourceRecord | None:
        if self.local is not None:
            found = self.local.lookup(citation, claim)
            if found is not None:
                return found
        if citation.kind is CitationKind.PMID:
            article = self.pubmed.fetch(citation.value)
            return record_from_article(article) if article else None
        if citation.kind is CitationKind.NCT:
            trial = self.trials.study(citation.value)
            return record_from_trial(trial) if trial else None
        if self.crossref is None:
            return None
        if citation.kind is CitationKind.DOI:
            work = self.crossref.work(citation.value)
            return record_from_work(work) if work else None
        author_year = citation.author_year
        if author_year is not None:
            author, year = author_year
            candidates = [
                record_from_work(w)
                for w in self.crossref.search(author, year, about=claim)
                if w.year == year and w.authors and _norm_name(w.authors[0]) == _norm_name(author)
            ]
            return closest(candidates, claim)
        return None

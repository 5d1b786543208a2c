"""Where cited PMIDs and NCT ids are looked up: a local store, or the online services.

Both answer the same question, "what does this id point to?", with a :class:`SourceRecord` or
None when the id does not exist. A store that cannot answer (offline, service down, breaker open)
raises :class:`~medgate.claims.clients.errors.ServiceError`; the verifier turns that into a
failed check, never into a pass.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import Field, ValidationError

from medgate.claims.citations import Citation, CitationKind
from medgate.claims.clients.clinicaltrials import ClinicalTrialsClient, TrialRecord
from medgate.claims.clients.pubmed import PubMedArticle, PubMedClient
from medgate.claims.credibility import SourceType
from medgate.errors import InputError
from medgate.records import Record


class SourceRecord(Record):
    """What a cited id points to: enough text to judge support and to grade the evidence."""

    key: str = Field(description="'PMID:12345678' or 'NCT01234567'.")
    source_type: SourceType
    title: str = ""
    text: str = Field(default="", description="Abstract or trial summary the claim is judged on.")
    journal: str = ""
    publication_types: list[str] = Field(default_factory=list)
    url: str = ""

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

    def lookup(self, citation: Citation) -> SourceRecord | None:
        """The record, or None when the id does not exist; raises ServiceError when unsure."""
        ...


class LocalRecordStore:
    """Records held in memory, e.g. loaded from a JSONL file of :class:`SourceRecord` rows.

    For offline use: an id missing from the store is reported as unresolvable, so the store
    must hold every source the reports are allowed to cite.
    """

    def __init__(self, records: Iterable[SourceRecord] = ()) -> None:
        self._records: dict[str, SourceRecord] = {r.key.upper(): r for r in records}

    def __len__(self) -> int:
        return len(self._records)

    def lookup(self, citation: Citation) -> SourceRecord | None:
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
    """Resolves PMIDs through PubMed and NCT ids through ClinicalTrials.gov."""

    def __init__(self, pubmed: PubMedClient, trials: ClinicalTrialsClient) -> None:
        self.pubmed = pubmed
        self.trials = trials

    def lookup(self, citation: Citation) -> SourceRecord | None:
        if citation.kind is CitationKind.PMID:
            article = self.pubmed.fetch(citation.value)
            return record_from_article(article) if article else None
        if citation.kind is CitationKind.NCT:
            trial = self.trials.study(citation.value)
            return record_from_trial(trial) if trial else None
        return None

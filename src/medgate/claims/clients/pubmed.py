"""PubMed through NCBI E-utilities: ``esearch`` (JSON) for ids and ``efetch`` (XML) for records."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

import httpx
from pydantic import Field

from medgate.claims.clients.base import ServiceClient
from medgate.claims.clients.errors import MalformedResponseError
from medgate.config import ServiceSettings
from medgate.records import Record


class PubMedArticle(Record):
    """The parts of a PubMed record the claims layer uses."""

    pmid: str
    title: str = ""
    abstract: str = ""
    journal: str = ""
    journal_abbreviation: str = ""
    year: int | None = None
    publication_types: list[str] = Field(default_factory=list)
    doi: str | None = None


def _text(node: ET.Element | None) -> str:
    """All text inside ``node`` (titles carry <i>, <sup> ...), whitespace-normalised."""
    return " ".join("".join(node.itertext()).split()) if node is not None else ""


def parse_esearch(body: str) -> list[str]:
    data: Any = json.loads(body)
    result = data["esearchresult"]
    if "ERROR" in result:
        raise ValueError(f"esearch error: {result['ERROR']}")
    ids = result["idlist"]
    if not isinstance(ids, list) or not all(isinstance(i, str) and i.isdigit() for i in ids):
        raise ValueError("idlist is not a list of numeric ids")
    return ids


def parse_efetch(body: str) -> list[PubMedArticle]:
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        raise ValueError(f"invalid XML: {exc}") from exc
    if root.tag != "PubmedArticleSet":
        raise ValueError(f"expected <PubmedArticleSet>, got <{root.tag}>")
    articles: list[PubMedArticle] = []
    for node in root.iter("PubmedArticle"):
        citation = node.find("MedlineCitation")
        if citation is None:
            raise ValueError("PubmedArticle without MedlineCitation")
        pmid = _text(citation.find("PMID"))
        if not pmid.isdigit():
            raise ValueError(f"PubmedArticle with invalid PMID {pmid!r}")
        article = citation.find("Article")
        if article is None:
            raise ValueError(f"PMID {pmid}: no Article element")
        parts = []
        for piece in article.findall("Abstract/AbstractText"):
            label = piece.get("Label")
            content = _text(piece)
            parts.append(f"{label}: {content}" if label else content)
        year_text = _text(article.find("Journal/JournalIssue/PubDate/Year"))
        doi = None
        for loc in article.findall("ELocationID"):
            if loc.get("EIdType") == "doi":
                doi = _text(loc)
        articles.append(
            PubMedArticle(
                pmid=pmid,
                title=_text(article.find("ArticleTitle")),
                abstract=" ".join(parts),
                journal=_text(article.find("Journal/Title")),
                journal_abbreviation=_text(article.find("Journal/ISOAbbreviation")),
                year=int(year_text) if year_text.isdigit() else None,
                publication_types=[
                    _text(t) for t in article.findall("PublicationTypeList/PublicationType")
                ],
                doi=doi,
            )
        )
    return articles


class PubMedClient:
    """esearch and efetch against ``settings.base_url`` (NCBI's eutils by default)."""

    def __init__(
        self,
        settings: ServiceSettings,
        *,
        offline: bool = False,
        email: str | None = None,
        api_key: str | None = None,
        transport: httpx.BaseTransport | None = None,
        **client_options: Any,
    ) -> None:
        self.http = ServiceClient(
            "pubmed", settings, offline=offline, transport=transport, **client_options
        )
        self._identity: dict[str, str] = {"tool": "medgate"}
        if email:
            self._identity["email"] = email
        key = api_key if api_key is not None else os.environ.get("NCBI_API_KEY")
        if key:
            self._identity["api_key"] = key

    def esearch(self, term: str, retmax: int = 20) -> list[str]:
        """PMIDs matching ``term``, most relevant first."""
        params: dict[str, str | int] = {
            "db": "pubmed",
            "term": term,
            "retmode": "json",
            "retmax": retmax,
        }
        response = self.http.get("esearch.fcgi", {**params, **self._identity})
        if response is None:
            raise MalformedResponseError("pubmed", "esearch answered 404")
        return self.http.parse(response, lambda r: parse_esearch(r.text))

    def efetch(self, pmids: Sequence[str]) -> list[PubMedArticle]:
        """Full records for ``pmids``; ids PubMed does not know are simply absent."""
        if not pmids:
            return []
        bad = [p for p in pmids if not p.isdigit()]
        if bad:
            raise ValueError(f"not PMIDs: {bad}")
        params: dict[str, str | int] = {"db": "pubmed", "id": ",".join(pmids), "retmode": "xml"}
        response = self.http.get("efetch.fcgi", {**params, **self._identity})
        if response is None:
            return []
        return self.http.parse(response, lambda r: parse_efetch(r.text))

    def fetch(self, pmid: str) -> PubMedArticle | None:
        """One record, or None when the PMID does not exist."""
        for article in self.efetch([pmid]):
            if article.pmid == pmid:
                return article
        return None

    def close(self) -> None:
        self.http.close()

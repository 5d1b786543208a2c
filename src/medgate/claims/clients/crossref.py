"""Crossref's REST API: one work by DOI, and a bibliographic search for author-year citations.

``GET works/{doi}`` answers ``{"status": "ok", "message": {...work...}}`` or 404 for a DOI
Crossref does not know. ``GET works?query.bibliographic=...&query.author=...&filter=
from-pub-date:Y,until-pub-date:Y`` answers ``{"message": {"items": [...]}}``. Abstracts, when a
publisher deposited one, come as JATS XML and are reduced to text here.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
from pydantic import Field

from medgate.claims.clients.base import ServiceClient
from medgate.config import ServiceSettings
from medgate.records import Record

DOI = re.compile(r"^10\.\d{4,9}/\S+$")
_TAG = re.compile(r"<[^>]+>")


class CrossrefWork(Record):
    """The parts of a Crossref work the claims layer uses."""

    doi: str
    title: str = ""
    authors: list[str] = Field(default_factory=list, description="Family names, in order.")
    year: int | None = None
    journal: str = ""
    abstract: str = ""
    work_type: str = ""


def _year(work: dict[str, Any]) -> int | None:
    for field in ("issued", "published-print", "published-online", "published"):
        parts = (work.get(field) or {}).get("date-parts") or []
        if parts and parts[0] and isinstance(parts[0][0], int):
            return int(parts[0][0])
    return None


def parse_work(data: Any) -> CrossrefWork:
    if not isinstance(data, dict):
        raise ValueError("work is not a JSON object")
    doi = data["DOI"]
    if not isinstance(doi, str) or not DOI.match(doi):
        raise ValueError(f"invalid DOI {doi!r}")
    titles = data.get("title") or []
    journals = data.get("container-title") or []
    authors = [
        str(a["family"]) for a in data.get("author") or [] if isinstance(a, dict) and "family" in a
    ]
    abstract = " ".join(_TAG.sub(" ", str(data.get("abstract") or "")).split())
    return CrossrefWork(
        doi=doi.lower(),
        title=" ".join(str(titles[0]).split()) if titles else "",
        authors=authors,
        year=_year(data),
        journal=str(journals[0]) if journals else "",
        abstract=abstract,
        work_type=str(data.get("type", "")),
    )


def parse_message(data: Any) -> Any:
    if not isinstance(data, dict) or data.get("status") != "ok" or "message" not in data:
        raise ValueError("Crossref answer is not {'status': 'ok', 'message': ...}")
    return data["message"]


def parse_search(data: Any) -> list[CrossrefWork]:
    message = parse_message(data)
    items = message.get("items") if isinstance(message, dict) else None
    if not isinstance(items, list):
        raise ValueError("search answer has no 'items' list")
    return [parse_work(item) for item in items]


class CrossrefClient:
    """Crossref works by DOI and by bibliographic query (``settings.base_url``)."""

    def __init__(
        self,
        settings: ServiceSettings,
        *,
        offline: bool = False,
        mailto: str | None = None,
        transport: httpx.BaseTransport | None = None,
        **client_options: Any,
    ) -> None:
        self.http = ServiceClient(
            "crossref", settings, offline=offline, transport=transport, **client_options
        )
        # Crossref routes requests that say who is asking to its more reliable pool.
        self._identity: dict[str, str] = {"mailto": mailto} if mailto else {}

    def work(self, doi: str) -> CrossrefWork | None:
        """The work, or None when Crossref has no such DOI."""
        doi = doi.strip().lower()
        if not DOI.match(doi):
            raise ValueError(f"not a DOI: {doi!r}")
        response = self.http.get(f"works/{doi}", self._identity)
        if response is None:
            return None
        return self.http.parse(response, lambda r: parse_work(parse_message(r.json())))

    def search(self, author: str, year: int, about: str = "", rows: int = 5) -> list[CrossrefWork]:
        """Works of ``year`` by ``author`` (family name), most relevant to ``about`` first."""
        params: dict[str, str | int] = {
            "query.author": author,
            "filter": f"from-pub-date:{year},until-pub-date:{year}",
            "rows": rows,
            "select": "DOI,title,author,issued,container-title,abstract,type",
        }
        if about:
            params["query.bibliographic"] = about[:300]
        response = self.http.get("works", {**params, **self._identity})
        if response is None:
            return []
        return self.http.parse(response, lambda r: parse_search(r.json()))

    def close(self) -> None:
        self.http.close()

"""openFDA: drug labels and adverse-event report counts."""

from __future__ import annotations

import os
from typing import Any

import httpx
from pydantic import Field

from medgate.claims.clients.base import ServiceClient
from medgate.config import ServiceSettings
from medgate.records import Record


class DrugLabel(Record):
    """Sections of a structured product label (each section is a list of paragraphs in openFDA)."""

    set_id: str = ""
    brand_names: list[str] = Field(default_factory=list)
    generic_names: list[str] = Field(default_factory=list)
    indications: str = ""
    dosage: str = ""
    contraindications: str = ""
    warnings: str = ""
    boxed_warning: str = ""
    adverse_reactions: str = ""

    @property
    def text(self) -> str:
        return " ".join(
            part
            for part in (
                self.indications,
                self.dosage,
                self.contraindications,
                self.boxed_warning,
                self.warnings,
                self.adverse_reactions,
            )
            if part
        )


class ReactionCount(Record):
    term: str
    count: int = Field(ge=0)


def _joined(section: Any) -> str:
    if section is None:
        return ""
    if not isinstance(section, list):
        raise ValueError("label section is not a list")
    return " ".join(str(p) for p in section)


def _results(data: Any) -> list[Any]:
    if not isinstance(data, dict):
        raise ValueError("answer is not a JSON object")
    results = data["results"]
    if not isinstance(results, list):
        raise ValueError("'results' is not a list")
    return results


def parse_labels(data: Any) -> list[DrugLabel]:
    labels = []
    for item in _results(data):
        names = item.get("openfda", {})
        labels.append(
            DrugLabel(
                set_id=str(item.get("set_id", "")),
                brand_names=[str(n) for n in names.get("brand_name", [])],
                generic_names=[str(n) for n in names.get("generic_name", [])],
                indications=_joined(item.get("indications_and_usage")),
                dosage=_joined(item.get("dosage_and_administration")),
                contraindications=_joined(item.get("contraindications")),
                warnings=_joined(item.get("warnings_and_cautions") or item.get("warnings")),
                boxed_warning=_joined(item.get("boxed_warning")),
                adverse_reactions=_joined(item.get("adverse_reactions")),
            )
        )
    return labels


def parse_counts(data: Any) -> list[ReactionCount]:
    return [ReactionCount(term=str(r["term"]), count=int(r["count"])) for r in _results(data)]


def _quote(name: str) -> str:
    cleaned = name.replace('"', "").strip()
    if not cleaned:
        raise ValueError("empty drug name")
    return f'"{cleaned}"'


class OpenFDAClient:
    def __init__(
        self,
        settings: ServiceSettings,
        *,
        offline: bool = False,
        api_key: str | None = None,
        transport: httpx.BaseTransport | None = None,
        **client_options: Any,
    ) -> None:
        self.http = ServiceClient(
            "openfda", settings, offline=offline, transport=transport, **client_options
        )
        key = api_key if api_key is not None else os.environ.get("OPENFDA_API_KEY")
        self._key = {"api_key": key} if key else {}

    def drug_labels(self, generic_name: str, limit: int = 1) -> list[DrugLabel]:
        """Labels for a generic name; an empty list when openFDA has none (it answers 404)."""
        params: dict[str, str | int] = {
            "search": f"openfda.generic_name:{_quote(generic_name)}",
            "limit": limit,
        }
        response = self.http.get("drug/label.json", {**params, **self._key})
        if response is None:
            return []
        return self.http.parse(response, lambda r: parse_labels(r.json()))

    def adverse_event_counts(self, generic_name: str, limit: int = 10) -> list[ReactionCount]:
        """Most reported reactions (MedDRA preferred terms) for a drug in FAERS."""
        params: dict[str, str | int] = {
            "search": f"patient.drug.openfda.generic_name:{_quote(generic_name)}",
            "count": "patient.reaction.reactionmeddrapt.exact",
            "limit": limit,
        }
        response = self.http.get("drug/event.json", {**params, **self._key})
        if response is None:
            return []
        return self.http.parse(response, lambda r: parse_counts(r.json()))

    def close(self) -> None:
        self.http.close()

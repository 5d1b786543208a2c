"""ClinicalTrials.gov API v2: one study by NCT id, and a simple search."""

from __future__ import annotations

import re
from typing import Any

import httpx
from pydantic import Field

from medgate.claims.clients.base import ServiceClient
from medgate.config import ServiceSettings
from medgate.records import Record

NCT_ID = re.compile(r"^NCT\d{8}$")


class TrialRecord(Record):
    """The parts of a registered study the claims layer uses."""

    nct_id: str
    title: str = ""
    official_title: str = ""
    status: str = ""
    summary: str = ""
    description: str = ""
    study_type: str = ""
    phases: list[str] = Field(default_factory=list)
    allocation: str = ""
    conditions: list[str] = Field(default_factory=list)
    has_results: bool = False


def parse_study(data: Any) -> TrialRecord:
    if not isinstance(data, dict):
        raise ValueError("study is not a JSON object")
    protocol = data["protocolSection"]
    ident = protocol["identificationModule"]
    nct_id = ident["nctId"]
    if not isinstance(nct_id, str) or not NCT_ID.match(nct_id):
        raise ValueError(f"invalid nctId {nct_id!r}")
    status = protocol.get("statusModule", {})
    description = protocol.get("descriptionModule", {})
    design = protocol.get("designModule", {})
    conditions = protocol.get("conditionsModule", {})
    return TrialRecord(
        nct_id=nct_id,
        title=str(ident.get("briefTitle", "")),
        official_title=str(ident.get("officialTitle", "")),
        status=str(status.get("overallStatus", "")),
        summary=str(description.get("briefSummary", "")),
        description=str(description.get("detailedDescription", "")),
        study_type=str(design.get("studyType", "")),
        phases=[str(p) for p in design.get("phases", [])],
        allocation=str(design.get("designInfo", {}).get("allocation", "")),
        conditions=[str(c) for c in conditions.get("conditions", [])],
        has_results=bool(data.get("hasResults", False)),
    )


def parse_search(data: Any) -> list[TrialRecord]:
    if not isinstance(data, dict) or not isinstance(data.get("studies"), list):
        raise ValueError("search answer has no 'studies' list")
    return [parse_study(study) for study in data["studies"]]


class ClinicalTrialsClient:
    def __init__(
        self,
        settings: ServiceSettings,
        *,
        offline: bool = False,
        transport: httpx.BaseTransport | None = None,
        **client_options: Any,
    ) -> None:
        self.http = ServiceClient(
            "clinicaltrials", settings, offline=offline, transport=transport, **client_options
        )

    def study(self, nct_id: str) -> TrialRecord | None:
        """The registered study, or None when ClinicalTrials.gov has no such id."""
        nct_id = nct_id.upper()
        if not NCT_ID.match(nct_id):
            raise ValueError(f"not an NCT id: {nct_id!r}")
        response = self.http.get(f"studies/{nct_id}", {"format": "json"})
        if response is None:
            return None
        return self.http.parse(response, lambda r: parse_study(r.json()))

    def search(self, term: str, page_size: int = 10) -> list[TrialRecord]:
        response = self.http.get(
            "studies", {"query.term": term, "pageSize": page_size, "format": "json"}
        )
        if response is None:
            return []
        return self.http.parse(response, lambda r: parse_search(r.json()))

    def close(self) -> None:
        self.http.close()

"""How far to trust a source: a 0-100 score with its tier, the reason and a recommendation.

Domains are matched on the parsed host name, label by label: ``nih.gov`` matches ``nih.gov`` and
``www.ncbi.nlm.nih.gov``, never ``nih.gov.evil.example`` or ``notnih.gov``. Journal names are
matched whole after normalisation, so "Journal of Food Science" is not taken for *Science*.
"""

from __future__ import annotations

import re
from enum import StrEnum
from urllib.parse import urlsplit

from pydantic import Field

from medgate.records import Record


class SourceType(StrEnum):
    PUBMED = "pubmed"
    CLINICALTRIALS = "clinicaltrials"
    OPENFDA = "openfda"
    CROSSREF = "crossref"
    """A work found by its DOI or by author and year in Crossref."""
    PREPRINT = "preprint"
    WEB = "web"


class CredibilityTier(StrEnum):
    TIER1_JOURNAL = "tier1_journal"
    GOVERNMENT = "government"
    TRIAL_REGISTRY = "trial_registry"
    PEER_REVIEWED = "peer_reviewed"
    ACADEMIC = "academic"
    MEDICAL_SITE = "medical_site"
    PREPRINT = "preprint"
    UNVERIFIED = "unverified"


class Credibility(Record):
    """The verdict on one source."""

    source: str = Field(description="The URL or identifier that was scored.")
    score: int = Field(ge=0, le=100)
    tier: CredibilityTier
    reason: str
    recommendation: str
    domain: str | None = Field(default=None, description="The host the score was based on.")


TIER1_JOURNALS = frozenset(
    {
        "the lancet",
        "lancet",
        "new england journal of medicine",
        "the new england journal of medicine",
        "n engl j med",
        "nejm",
        "jama",
        "journal of the american medical association",
        "bmj",
        "british medical journal",
        "nature medicine",
        "nat med",
        "nature",
        "science",
        "cell",
        "annals of internal medicine",
        "ann intern med",
        "circulation",
        "journal of clinical oncology",
        "j clin oncol",
        "the lancet oncology",
        "lancet oncol",
        "lancet infectious diseases",
        "the lancet infectious diseases",
        "lancet infect dis",
        "plos medicine",
        "plos med",
        "cochrane database of systematic reviews",
        "cochrane database syst rev",
    }
)

GOVERNMENT_DOMAINS = frozenset(
    {
        "nih.gov",
        "cdc.gov",
        "who.int",
        "fda.gov",
        "clinicaltrials.gov",
        "cochranelibrary.com",
        "ema.europa.eu",
        "nice.org.uk",
        "nhs.uk",
    }
)
MEDICAL_SITE_DOMAINS = frozenset(
    {
        "mayoclinic.org",
        "uptodate.com",
        "medscape.com",
        "webmd.com",
        "clevelandclinic.org",
        "hopkinsmedicine.org",
        "healthline.com",
    }
)
PREPRINT_DOMAINS = frozenset({"medrxiv.org", "biorxiv.org", "arxiv.org", "preprints.org"})
#: Second-level labels under a country code that mark universities ("ox.ac.uk", "unimelb.edu.au").
_ACADEMIC_SECOND_LEVEL = frozenset({"ac", "edu"})


def normalise_journal(name: str) -> str:
    """Lower-case, drop punctuation and extra spaces: "N. Engl. J. Med." -> "n engl j med"."""
    return " ".join(re.sub(r"[^\w\s]", " ", name.lower()).split())


def is_tier1_journal(name: str) -> bool:
    return normalise_journal(name) in TIER1_JOURNALS


def host_of(url_or_domain: str) -> str | None:
    """The lower-case host of a URL or bare domain, or None if there is none.

    User info (``https://nih.gov@evil.example``) and ports are stripped by the URL parser;
    a trailing dot is dropped; a host with non-ASCII letters is kept as it is, so a homoglyph of
    a trusted domain never equals the trusted domain.
    """
    raw = url_or_domain.strip()
    if not raw:
        return None
    if "://" not in raw:
        raw = "//" + raw
    try:
        host = urlsplit(raw).hostname
    except ValueError:
        return None
    if not host:
        return None
    return host.rstrip(".").lower() or None


def domain_matches(host: str, domain: str) -> bool:
    """True when ``host`` is ``domain`` or one of its subdomains."""
    return host == domain or host.endswith("." + domain)


def _in(host: str, domains: frozenset[str]) -> bool:
    return any(domain_matches(host, d) for d in domains)


def _is_academic(host: str) -> bool:
    labels = host.split(".")
    if labels[-1] == "edu":
        return True
    return len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _ACADEMIC_SECOND_LEVEL


def score_source(
    source: str = "",
    source_type: SourceType | str = SourceType.WEB,
    journal: str = "",
    domain: str = "",
) -> Credibility:
    """Score one source.

    ``source`` is a URL or id used for the report; ``domain`` defaults to the host of ``source``.
    A declared ``source_type`` (from medgate's own clients) is trusted before the domain.
    """
    kind = SourceType(source_type)
    host = host_of(domain) if domain else host_of(source) if "." in source else None

    def result(score: int, tier: CredibilityTier, reason: str, advice: str) -> Credibility:
        return Credibility(
            source=source or domain,
            score=score,
            tier=tier,
            reason=reason,
            recommendation=advice,
            domain=host,
        )

    if kind in (SourceType.PUBMED, SourceType.CROSSREF):
        if journal and is_tier1_journal(journal):
            return result(
                98,
                CredibilityTier.TIER1_JOURNAL,
                "High-impact peer-reviewed journal",
                "Safe to cite",
            )
        if kind is SourceType.PUBMED:
            return result(
                90,
                CredibilityTier.PEER_REVIEWED,
                "Peer-reviewed article indexed in PubMed",
                "Safe to cite",
            )
        return result(
            75,
            CredibilityTier.ACADEMIC,
            "Scholarly work registered with Crossref; peer review not confirmed",
            "Check the venue before relying on it",
        )
    if kind is SourceType.CLINICALTRIALS:
        return result(
            92,
            CredibilityTier.TRIAL_REGISTRY,
            "Registered clinical trial on ClinicalTrials.gov",
            "Safe to cite",
        )
    if kind is SourceType.OPENFDA:
        return result(95, CredibilityTier.GOVERNMENT, "Official FDA data (openFDA)", "Safe to cite")
    if kind is SourceType.PREPRINT or (host is not None and _in(host, PREPRINT_DOMAINS)):
        return result(
            55,
            CredibilityTier.PREPRINT,
            "Preprint: not yet peer-reviewed",
            "Cite with caution: not peer-reviewed",
        )
    if host is not None and _in(host, GOVERNMENT_DOMAINS):
        return result(
            93, CredibilityTier.GOVERNMENT, "Government or institutional source", "Safe to cite"
        )
    if host is not None and _in(host, MEDICAL_SITE_DOMAINS):
        return result(
            70,
            CredibilityTier.MEDICAL_SITE,
            "Reputable medical information site",
            "Requires context",
        )
    if host is not None and _is_academic(host):
        return result(80, CredibilityTier.ACADEMIC, "Academic institution", "Safe to cite")
    return result(
        40, CredibilityTier.UNVERIFIED, "Unverified web source", "Use caution: verify independently"
    )

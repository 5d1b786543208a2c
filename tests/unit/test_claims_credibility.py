from __future__ import annotations

import pytest

from medgate.claims import CredibilityTier, SourceType, score_source
from medgate.claims.credibility import host_of


@pytest.mark.parametrize(
    ("kwargs", "score", "tier"),
    [
        ({"source_type": "pubmed", "journal": "The Lancet"}, 98, CredibilityTier.TIER1_JOURNAL),
        (
            {"source_type": "pubmed", "journal": "N. Engl. J. Med."},
            98,
            CredibilityTier.TIER1_JOURNAL,
        ),
        ({"source_type": "openfda"}, 95, CredibilityTier.GOVERNMENT),
        ({"source": "https://www.cdc.gov/diabetes/"}, 93, CredibilityTier.GOVERNMENT),
        ({"source": "https://www.who.int/news"}, 93, CredibilityTier.GOVERNMENT),
        ({"source_type": "clinicaltrials"}, 92, CredibilityTier.TRIAL_REGISTRY),
        ({"source_type": "pubmed", "journal": "BMC Nephrology"}, 90, CredibilityTier.PEER_REVIEWED),
        ({"source": "https://med.stanford.edu/news"}, 80, CredibilityTier.ACADEMIC),
        ({"source": "https://www.ox.ac.uk/research"}, 80, CredibilityTier.ACADEMIC),
        ({"source": "https://www.mayoclinic.org/x"}, 70, CredibilityTier.MEDICAL_SITE),
        ({"source": "https://www.medrxiv.org/content/1"}, 55, CredibilityTier.PREPRINT),
        ({"source_type": "preprint"}, 55, CredibilityTier.PREPRINT),
        ({"source": "https://healthy-living-blog.example/"}, 40, CredibilityTier.UNVERIFIED),
    ],
)
def test_tiers(kwargs: dict[str, str], score: int, tier: CredibilityTier) -> None:
    result = score_source(**kwargs)  # type: ignore[arg-type]
    assert (result.score, result.tier) == (score, tier)
    assert result.reason and result.recommendation


@pytest.mark.parametrize(
    "url",
    [
        "https://nih.gov.evil.example/guidance",
        "https://notcdc.gov/vaccines",
        "https://cdc.gov-health.example/",
        "https://nih.gov@evil.example/",  # user info, not the host
        "https://www.nіh.gov/",  # Cyrillic і
        "https://fda.gov.co/",
        "https://mayoclinic.org.example/",
        "https://evil-edu.com/",
        "https://medrxiv.org.example/",
    ],
)
def test_look_alike_domains_are_unverified(url: str) -> None:
    result = score_source(url)
    assert result.tier is CredibilityTier.UNVERIFIED
    assert result.score == 40


def test_subdomains_and_bare_domains_of_trusted_hosts_match() -> None:
    assert score_source("https://pubmed.ncbi.nlm.nih.gov/1/").score == 93
    assert score_source(domain="CDC.GOV.").score == 93
    assert score_source("https://www.cdc.gov:443/x").score == 93


def test_journal_names_match_whole_not_by_substring() -> None:
    assert score_source(source_type=SourceType.PUBMED, journal="Science").score == 98
    assert (
        score_source(source_type=SourceType.PUBMED, journal="Journal of Food Science").score == 90
    )
    assert (
        score_source(source_type=SourceType.PUBMED, journal="Nature Reviews Cardiology").score == 90
    )


def test_host_of_handles_junk() -> None:
    assert host_of("") is None
    assert host_of("https://") is None
    assert host_of("http://[::1") is None

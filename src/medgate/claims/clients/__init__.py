"""Clients for PubMed E-utilities, ClinicalTrials.gov v2, Crossref and openFDA, for users who
are online."""

from medgate.claims.clients.base import ServiceClient
from medgate.claims.clients.breaker import CircuitBreaker, CircuitState
from medgate.claims.clients.clinicaltrials import ClinicalTrialsClient, TrialRecord
from medgate.claims.clients.crossref import CrossrefClient, CrossrefWork
from medgate.claims.clients.errors import (
    CircuitOpenError,
    MalformedResponseError,
    OfflineError,
    RequestRejectedError,
    ServiceError,
    ServiceUnavailableError,
)
from medgate.claims.clients.openfda import DrugLabel, OpenFDAClient, ReactionCount
from medgate.claims.clients.pubmed import PubMedArticle, PubMedClient
from medgate.claims.clients.ratelimit import RateLimiter

__all__ = [
    "CircuitBreaker",
    "CircuitOpenError",
    "CircuitState",
    "ClinicalTrialsClient",
    "CrossrefClient",
    "CrossrefWork",
    "DrugLabel",
    "MalformedResponseError",
    "OfflineError",
    "OpenFDAClient",
    "PubMedArticle",
    "PubMedClient",
    "RateLimiter",
    "ReactionCount",
    "RequestRejectedError",
    "ServiceClient",
    "ServiceError",
    "ServiceUnavailableError",
    "TrialRecord",
]

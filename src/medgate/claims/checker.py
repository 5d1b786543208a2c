"""The claims layer as configured: which detector, which record store, which support judge.

``medgate check-claims`` and CareGuard both check answers through :func:`build_claims_checker`,
so a citation is verified the same way wherever an answer is checked: against the configured
record store offline (where, without one, no citation resolves and each is flagged), or against
PubMed, ClinicalTrials.gov and Crossref when ``claims.offline`` is false or ``online`` is asked.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from medgate.claims.clients.clinicaltrials import ClinicalTrialsClient
from medgate.claims.clients.crossref import CrossrefClient
from medgate.claims.clients.pubmed import PubMedClient
from medgate.claims.detection import ClaimDetector
from medgate.claims.records_store import LocalRecordStore, OnlineRecordStore, RecordStore
from medgate.claims.report import check_report
from medgate.claims.safety_check import SafetyCheck
from medgate.claims.support import LexicalSupportJudge, SupportJudge
from medgate.claims.verification import CitationVerifier
from medgate.config import MedgateConfig
from medgate.errors import PrerequisiteError


class ClaimsChecker:
    """Checks answers with one detector and one verifier; close it to release the clients."""

    def __init__(
        self,
        verifier: CitationVerifier,
        detector: ClaimDetector | None,
        resources: ExitStack | None = None,
    ) -> None:
        self.verifier = verifier
        self.detector = detector
        self._resources = resources or ExitStack()

    def check(self, text: str) -> SafetyCheck:
        return check_report(text, self.verifier, self.detector)

    def close(self) -> None:
        self._resources.close()

    def __enter__(self) -> ClaimsChecker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def build_detector(config: MedgateConfig) -> ClaimDetector | None:
    """The learned detector when configured (loads the shared sentence encoder once)."""
    if config.claims.detector == "rules":
        return None
    from medgate.claims.learned import ARTIFACT_FILE, LearnedClaimDetector
    from medgate.embeddings import INSTALL, default_embedder

    try:
        embedder = default_embedder(config.backend.n_threads or 1)
    except PrerequisiteError as exc:
        raise PrerequisiteError(
            f"the learned claim detector needs sentence embeddings: {INSTALL} "
            "(or detect with the rules alone: MEDGATE_CLAIMS__DETECTOR=rules)"
        ) from exc
    return LearnedClaimDetector.load(embedder, config.claims.detector_path or ARTIFACT_FILE)


def build_record_store(
    config: MedgateConfig, stack: ExitStack, *, records: Path | None = None, online: bool = False
) -> RecordStore:
    """``records`` (or ``claims.records``) offline; the online services first asking it when
    ``online`` or ``claims.offline`` is false."""
    settings = config.claims
    path = records or settings.records
    local = LocalRecordStore.from_jsonl(path) if path is not None else LocalRecordStore()
    if not (online or not settings.offline):
        return local
    pubmed = PubMedClient(settings.pubmed, email=settings.ncbi_email)
    trials = ClinicalTrialsClient(settings.clinicaltrials)
    crossref = CrossrefClient(settings.crossref, mailto=settings.crossref_mailto)
    for client in (pubmed, trials, crossref):
        stack.callback(client.close)
    return OnlineRecordStore(pubmed, trials, crossref, local=local if len(local) else None)


def build_claims_checker(
    config: MedgateConfig,
    *,
    records: Path | None = None,
    online: bool = False,
    judge: SupportJudge | None = None,
    detector: bool = True,
) -> ClaimsChecker:
    """The checker ``config.claims`` describes; ``detector=False`` runs the rules alone."""
    stack = ExitStack()
    try:
        store = build_record_store(config, stack, records=records, online=online)
        support = judge or LexicalSupportJudge(config.claims.support_threshold)
        learned = build_detector(config) if detector else None
    except BaseException:
        stack.close()
        raise
    return ClaimsChecker(CitationVerifier(store, support), learned, stack)

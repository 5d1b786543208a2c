"""The citation safety layer: claims without sources, source credibility, evidence levels,
citation verification and the final safety check with its disclaimer.

Usable on any long-form answer::

    from medgate.claims import check_report, apply_disclaimer
    result = check_report(answer)           # SafetyCheck; ClaimsEvent(data=result) to stream it
    shown = apply_disclaimer(answer)        # always, whatever the verdict
"""

from medgate.claims.checker import ClaimsChecker, build_claims_checker
from medgate.claims.citations import Citation, CitationKind, Reference, find_citations
from medgate.claims.credibility import Credibility, CredibilityTier, SourceType, score_source
from medgate.claims.detection import (
    Claim,
    ClaimDetector,
    ClaimType,
    LearnedVerdict,
    Severity,
    classify,
    detect_claims,
)
from medgate.claims.evidence import EvidenceGrade, EvidenceLevel, StudyDesign, grade_evidence
from medgate.claims.flags import ClaimFlag, FlagKind, uncited_flags
from medgate.claims.records_store import (
    LocalRecordStore,
    OnlineRecordStore,
    RecordStore,
    SourceRecord,
)
from medgate.claims.report import check_report
from medgate.claims.safety_check import (
    MEDICAL_DISCLAIMER,
    SafetyCheck,
    SafetyVerdict,
    apply_disclaimer,
    check_safety,
    disclaimer_present,
)
from medgate.claims.sentences import Sentence, split_sentences
from medgate.claims.sources import ListedSource, list_sources
from medgate.claims.support import (
    EmbeddingSupportJudge,
    LexicalSupportJudge,
    ModelSupportJudge,
    SupportJudge,
    SupportJudgement,
    calibrate_threshold,
)
from medgate.claims.verification import (
    CitationCheck,
    CitationStatus,
    CitationVerifier,
    VerificationReport,
)

__all__ = [
    "MEDICAL_DISCLAIMER",
    "Citation",
    "CitationCheck",
    "CitationKind",
    "CitationStatus",
    "CitationVerifier",
    "Claim",
    "ClaimDetector",
    "ClaimFlag",
    "ClaimType",
    "ClaimsChecker",
    "Credibility",
    "CredibilityTier",
    "EmbeddingSupportJudge",
    "EvidenceGrade",
    "EvidenceLevel",
    "FlagKind",
    "LearnedVerdict",
    "LexicalSupportJudge",
    "ListedSource",
    "LocalRecordStore",
    "ModelSupportJudge",
    "OnlineRecordStore",
    "RecordStore",
    "Reference",
    "SafetyCheck",
    "SafetyVerdict",
    "Sentence",
    "Severity",
    "SourceRecord",
    "SourceType",
    "StudyDesign",
    "SupportJudge",
    "SupportJudgement",
    "VerificationReport",
    "apply_disclaimer",
    "build_claims_checker",
    "calibrate_threshold",
    "check_report",
    "check_safety",
    "classify",
    "detect_claims",
    "disclaimer_present",
    "find_citations",
    "grade_evidence",
    "list_sources",
    "score_source",
    "split_sentences",
    "uncited_flags",
]

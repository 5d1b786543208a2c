"""medgate's store: verdicts, the escalation queue, API keys and the hash-chained audit log."""

from medgate.store.audit import GENESIS, canonical_json, entry_hash, parse_anchors
from medgate.store.engine import create_store_engine, database_url, normalise_url
from medgate.store.migrations import LATEST_VERSION, current_version, migrate
from medgate.store.records import (
    ApiKey,
    AuditAnchor,
    AuditEntry,
    AuditReport,
    ConflictError,
    Escalation,
    EscalationRow,
    EscalationState,
    NotFoundError,
    Resolution,
    Role,
    StoredVerdict,
    StoreError,
)
from medgate.store.store import SYSTEM_ACTOR, Store, hash_token

__all__ = [
    "GENESIS",
    "LATEST_VERSION",
    "SYSTEM_ACTOR",
    "ApiKey",
    "AuditAnchor",
    "AuditEntry",
    "AuditReport",
    "ConflictError",
    "Escalation",
    "EscalationRow",
    "EscalationState",
    "NotFoundError",
    "Resolution",
    "Role",
    "Store",
    "StoreError",
    "StoredVerdict",
    "canonical_json",
    "create_store_engine",
    "current_version",
    "database_url",
    "entry_hash",
    "hash_token",
    "migrate",
    "normalise_url",
    "parse_anchors",
]

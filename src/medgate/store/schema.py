"""The store's tables, as SQLAlchemy Core metadata (schema version 1).

Times are kept as ISO-8601 text in UTC so that SQLite and PostgreSQL give back exactly what was
written: the audit chain hashes those strings and must recompute them byte for byte.
"""

from __future__ import annotations

from sqlalchemy import (
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()

schema_versions = Table(
    "medgate_schema",
    metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("applied_at", String(40), nullable=False),
    Column("description", Text, nullable=False),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("role", String(20), nullable=False),
    # sha256 of the token; the token itself is shown once at creation and never stored.
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("created_at", String(40), nullable=False),
    Column("revoked_at", String(40), nullable=True),
)

verdicts = Table(
    "verdicts",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("created_at", String(40), nullable=False),
    Column("status", String(20), nullable=False),
    Column("key_id", String(32), nullable=True),
    Column("verdict_json", Text, nullable=False),
    # The gate's events for this case (JSON list), so a clinician sees how it was decided.
    Column("events_json", Text, nullable=False),
)

# How each verdict was decided (schema version 2): the entry point, profile, settings digest and
# the model behind each role, as JSON (medgate.case_record.RunInfo). A verdict recorded without
# it (before version 2, or by a caller that gave none) has no row here.
case_runs = Table(
    "case_runs",
    metadata,
    Column("verdict_id", String(36), ForeignKey("verdicts.id"), primary_key=True),
    Column("run_json", Text, nullable=False),
)

escalations = Table(
    "escalations",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("verdict_id", String(36), ForeignKey("verdicts.id"), nullable=False, unique=True),
    Column("created_at", String(40), nullable=False),
    # open -> claimed -> resolved; the transitions are conditional UPDATEs (see Store).
    Column("state", String(20), nullable=False),
    Column("claimed_by", String(32), nullable=True),
    Column("claimed_at", String(40), nullable=True),
    Column("resolution", String(20), nullable=True),
    Column("answer", Text, nullable=True),
    Column("note", Text, nullable=True),
    Column("resolved_by", String(32), nullable=True),
    Column("resolved_at", String(40), nullable=True),
)
Index("ix_escalations_state_created", escalations.c.state, escalations.c.created_at)

audit_log = Table(
    "audit_log",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("at", String(40), nullable=False),
    Column("actor", String(64), nullable=False),
    Column("action", String(40), nullable=False),
    Column("subject", String(64), nullable=False),
    Column("payload", Text, nullable=False),
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False),
)

# One row holding the chain's tip. Appenders lock it (SELECT ... FOR UPDATE on PostgreSQL; the
# write lock on SQLite), which serialises appends across processes, and it lets `verify` notice
# rows cut from the end of the log.
audit_head = Table(
    "audit_head",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("seq", Integer, nullable=False),
    Column("hash", String(64), nullable=False),
)

"""A small versioned migration table instead of Alembic.

medgate's store has a handful of tables; Alembic's environment files, revision scripts and
configuration would outweigh them. Each migration is a numbered function run once, in its own
transaction, and recorded in ``medgate_schema``. Later schema changes append a new function
(ALTER TABLE ...); existing ones are never edited. On PostgreSQL an advisory lock keeps two
server processes starting at once from migrating together.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, insert, select, text

from medgate.store.schema import (
    api_keys,
    audit_head,
    audit_log,
    case_runs,
    escalations,
    metadata,
    schema_versions,
    verdicts,
)

_GENESIS = "0" * 64
_ADVISORY_LOCK_ID = 0x6D6564676174  # "medgat"


def _v1_initial(conn: Connection) -> None:
    tables = [api_keys, verdicts, escalations, audit_log, audit_head]
    metadata.create_all(conn, tables=tables)
    conn.execute(insert(audit_head).values(id=1, seq=0, hash=_GENESIS))


def _v2_case_runs(conn: Connection) -> None:
    metadata.create_all(conn, tables=[case_runs])


MIGRATIONS: list[tuple[int, str, Callable[[Connection], None]]] = [
    (1, "api keys, verdicts, escalations, audit log", _v1_initial),
    (2, "how each verdict was decided (case records)", _v2_case_runs),
]

LATEST_VERSION = MIGRATIONS[-1][0]


def current_version(engine: Engine) -> int:
    """The schema version in the database, 0 when it has none."""
    with engine.connect() as conn:
        if not engine.dialect.has_table(conn, schema_versions.name):
            return 0
        found = conn.execute(select(schema_versions.c.version)).scalars().all()
        return max(found, default=0)


def migrate(engine: Engine) -> int:
    """Bring the database to :data:`LATEST_VERSION`; returns the version reached."""
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": _ADVISORY_LOCK_ID})
        metadata.create_all(conn, tables=[schema_versions])
        done = set(conn.execute(select(schema_versions.c.version)).scalars().all())
        for version, description, step in MIGRATIONS:
            if version in done:
                continue
            step(conn)
            conn.execute(
                insert(schema_versions).values(
                    version=version,
                    applied_at=datetime.now(UTC).isoformat(),
                    description=description,
                )
            )
    return LATEST_VERSION

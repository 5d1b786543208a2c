"""The local case log: every case `medgate ask` and `medgate care` decide, as a typed record.

One SQLite file (``log.path``, default ``cache_dir/cases.db``) written through the standard
library, so the log needs no extra: each row is one :class:`~medgate.case_record.CaseRecord` as
JSON, with the columns a listing shows beside it. ``medgate log list`` and ``medgate log show ID``
read it back. The service keeps its records in its own store (:mod:`medgate.store`) instead.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from pydantic import Field, ValidationError

from medgate.case_record import CaseRecord
from medgate.config import MedgateConfig
from medgate.errors import InputError, MedgateError
from medgate.records import Record, Status

#: The log's schema, kept in SQLite's ``user_version``.
SCHEMA_VERSION = 1

#: An id prefix shorter than this is refused: it would match too many records to mean one.
MIN_PREFIX = 6

_SCHEMA = """
CREATE TABLE IF NOT EXISTS cases (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    entry TEXT NOT NULL,
    profile TEXT NOT NULL,
    status TEXT NOT NULL,
    question TEXT NOT NULL,
    record_json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_cases_created ON cases (created_at);
"""


class CaseLogError(MedgateError):
    """The case log cannot be opened, written or read."""


class CaseSummary(Record):
    """One line of ``medgate log list``."""

    id: str
    created_at: str
    entry: str
    profile: str
    status: Status
    question: str = Field(description="The question as asked.")


def default_log_path(config: MedgateConfig) -> Path:
    return config.log.path or config.cache_dir / "cases.db"


class CaseLog:
    """Append-only case records in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def of(cls, config: MedgateConfig) -> CaseLog:
        return cls(default_log_path(config))

    @contextmanager
    def _connect(self, *, create: bool) -> Iterator[sqlite3.Connection]:
        if not create and not self.path.is_file():
            raise CaseLogError(
                f"no case log at {self.path} yet: `medgate ask` and `medgate care` write one "
                "(unless run with --no-log)"
            )
        try:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            with closing(sqlite3.connect(self.path, timeout=30.0)) as conn, conn:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise CaseLogError(
                        f"the case log {self.path} was written by a newer medgate "
                        f"(schema {version}); upgrade medgate to read it"
                    )
                if version < SCHEMA_VERSION:
                    conn.executescript(_SCHEMA)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                yield conn
        except (sqlite3.Error, OSError) as exc:
            raise CaseLogError(f"case log {self.path}: {exc}") from exc

    def write(self, record: CaseRecord) -> None:
        with self._connect(create=True) as conn:
            conn.execute(
                "INSERT INTO cases (id, created_at, entry, profile, status, question, record_json)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    record.id,
                    record.created_at,
                    record.run.entry,
                    record.run.profile,
                    record.status.value,
                    record.case.question,
                    record.model_dump_json(),
                ),
            )

    def list(
        self, *, limit: int = 20, offset: int = 0, status: Status | None = None
    ) -> list[CaseSummary]:
        """The newest records first."""
        where, params = ("WHERE status = ?", [status.value]) if status is not None else ("", [])
        with self._connect(create=False) as conn:
            rows = conn.execute(
                "SELECT id, created_at, entry, profile, status, question FROM cases "
                f"{where} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
        return [
            CaseSummary(
                id=row[0],
                created_at=row[1],
                entry=row[2],
                profile=row[3],
                status=Status(row[4]),
                question=row[5],
            )
            for row in rows
        ]

    def get(self, record_id: str) -> CaseRecord:
        """The record with this id, or with the one id that starts with it."""
        record_id = record_id.strip().lower()
        if len(record_id) < MIN_PREFIX:
            raise InputError(f"give at least {MIN_PREFIX} characters of the record's id")
        pattern = record_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        with self._connect(create=False) as conn:
            rows = conn.execute(
                "SELECT id, record_json FROM cases WHERE id LIKE ? ESCAPE '\\' LIMIT 2",
                (pattern,),
            ).fetchall()
        if not rows:
            raise InputError(f"no case {record_id!r} in the log {self.path}")
        if len(rows) > 1:
            raise InputError(f"{record_id!r} starts more than one record id: give more of it")
        try:
            return CaseRecord.model_validate_json(rows[0][1])
        except ValidationError as exc:
            raise CaseLogError(
                f"the record {rows[0][0]} in {self.path} is not readable: {exc}"
            ) from exc

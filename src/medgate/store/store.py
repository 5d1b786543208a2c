"""The store: verdicts, the escalation queue, API keys and the audit log in one database.

Every method that changes something runs in one transaction that also appends its audit entry,
so a verdict, its escalation and their audit entries are committed together or not at all.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, func, insert, select, text, update
from sqlalchemy.engine import Row
from sqlalchemy.exc import SQLAlchemyError

from medgate.case_record import CaseRecord, RunInfo
from medgate.config import MedgateConfig
from medgate.errors import InputError
from medgate.events import EVENTS, Event
from medgate.records import Status
from medgate.store.audit import (
    canonical_json,
    check_chain,
    check_escalations,
    digest,
    entry_hash,
)
from medgate.store.engine import (
    create_store_engine,
    database_url,
    normalise_url,
    redacted_url,
    without_password,
)
from medgate.store.migrations import migrate
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
from medgate.store.schema import api_keys, audit_head, audit_log, case_runs, escalations, verdicts
from medgate.verdict import Verdict

SYSTEM_ACTOR = "system"
_TOKEN_PREFIX = "mg_"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def hash_token(token: str) -> str:
    """Keys are kept as the sha256 of a 256-bit random token: a leaked table reveals no key."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Store:
    """medgate's persistent state over one SQLAlchemy engine."""

    def __init__(self, engine: Engine, reader: Engine | None = None) -> None:
        self.engine = engine
        """Writes (and, where no reader is given, reads)."""
        self.reader = reader or engine
        """Reads: on SQLite a second engine whose transactions do not take the write lock."""
        # SQLite has one writer at a time. Queueing this process's writers on a lock is fairer
        # than letting them poll the busy handler, whose back-off makes the latency tail long;
        # other processes still wait through the busy timeout.
        self._write_lock = threading.Lock() if engine.dialect.name == "sqlite" else None

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        """One write transaction, committed on exit (rolled back on error)."""
        with self._write_lock or nullcontext(), self.engine.begin() as conn:
            yield conn

    @classmethod
    def open(cls, config: MedgateConfig) -> Store:
        """Open (and migrate) the store the configuration names."""
        return cls.from_url(
            database_url(config),
            pool_size=config.store.pool_size,
            busy_timeout_s=config.store.busy_timeout_s,
        )

    @classmethod
    def from_url(cls, url: str, *, pool_size: int = 5, busy_timeout_s: float = 30.0) -> Store:
        url = normalise_url(url)
        engine = create_store_engine(url, pool_size=pool_size, busy_timeout_s=busy_timeout_s)
        try:
            migrate(engine)
        except SQLAlchemyError as exc:
            engine.dispose()
            cause = getattr(exc, "orig", None) or exc  # the driver's own message, if any
            reason = without_password((str(cause).splitlines() or [type(exc).__name__])[0], url)
            # `from None`: the driver's exception, kept as the cause, would print its own text
            # (which may quote the connection string) in any traceback.
            raise StoreError(f"store: cannot open {redacted_url(url)}: {reason}") from None
        reader = None
        if engine.dialect.name == "sqlite":
            reader = create_store_engine(url, busy_timeout_s=busy_timeout_s, read_only=True)
        return cls(engine, reader)

    def close(self) -> None:
        self.engine.dispose()
        if self.reader is not self.engine:
            self.reader.dispose()

    def ping(self) -> None:
        """Raise if the database cannot be reached (readiness)."""
        with self.reader.connect() as conn:
            conn.execute(text("SELECT 1"))

    # -- API keys -------------------------------------------------------------------------

    def create_key(self, name: str, role: Role, *, actor: str = SYSTEM_ACTOR) -> tuple[ApiKey, str]:
        """Create a key; returns it and the token, which is shown this once and never stored."""
        name = name.strip()
        if not name:
            raise InputError("a key needs a name (who or what holds it)")
        token = _TOKEN_PREFIX + secrets.token_urlsafe(32)
        key = ApiKey(id=secrets.token_hex(8), name=name, role=role, created_at=_now())
        with self._writing() as conn:
            conn.execute(insert(api_keys).values(**key.model_dump(), key_hash=hash_token(token)))
            _append_audit(conn, actor, "key.create", key.id, {"name": name, "role": role.value})
        return key, token

    def list_keys(self) -> list[ApiKey]:
        with self.reader.connect() as conn:
            rows = conn.execute(select(api_keys).order_by(api_keys.c.created_at)).all()
        return [_key(row) for row in rows]

    def revoke_key(self, key_id: str, *, actor: str = SYSTEM_ACTOR) -> ApiKey:
        with self._writing() as conn:
            done = conn.execute(
                update(api_keys)
                .where(api_keys.c.id == key_id, api_keys.c.revoked_at.is_(None))
                .values(revoked_at=_now())
            )
            row = conn.execute(select(api_keys).where(api_keys.c.id == key_id)).first()
            if row is None:
                raise NotFoundError(f"no API key {key_id!r}")
            if done.rowcount == 1:
                _append_audit(conn, actor, "key.revoke", key_id, {})
        return _key(row)

    def authenticate(self, token: str) -> ApiKey | None:
        """The active key with this token, or None."""
        if not token.startswith(_TOKEN_PREFIX):
            return None
        with self.reader.connect() as conn:
            row = conn.execute(
                select(api_keys).where(
                    api_keys.c.key_hash == hash_token(token), api_keys.c.revoked_at.is_(None)
                )
            ).first()
        return None if row is None else _key(row)

    # -- verdicts and escalations ---------------------------------------------------------

    def record_verdict(
        self,
        verdict: Verdict,
        *,
        key_id: str | None,
        events: Sequence[Event] = (),
        run: RunInfo | None = None,
    ) -> StoredVerdict:
        """Commit a verdict, how it was decided (``run``), its escalation (if escalated) and
        their audit entries together."""
        verdict_id = str(uuid.uuid4())
        created = _now()
        verdict_json = verdict.model_dump_json()
        events_json = _events_json(events)
        run_json = None if run is None else run.model_dump_json()
        escalation: Escalation | None = None
        with self._writing() as conn:
            conn.execute(
                insert(verdicts).values(
                    id=verdict_id,
                    created_at=created,
                    status=verdict.status.value,
                    key_id=key_id,
                    verdict_json=verdict_json,
                    events_json=events_json,
                )
            )
            if run_json is not None:
                conn.execute(insert(case_runs).values(verdict_id=verdict_id, run_json=run_json))
            _append_audit(
                conn,
                key_id or SYSTEM_ACTOR,
                "verdict",
                verdict_id,
                {
                    "status": verdict.status.value,
                    "reason": verdict.reason,
                    "verdict_sha256": record_digest(verdict_json, events_json, run_json),
                },
                created,
            )
            if verdict.status is Status.ESCALATED:
                escalation = Escalation(
                    id=str(uuid.uuid4()),
                    verdict_id=verdict_id,
                    created_at=created,
                    state=EscalationState.OPEN,
                    verdict=verdict,
                    events=list(events),
                )
                conn.execute(
                    insert(escalations).values(
                        id=escalation.id,
                        verdict_id=verdict_id,
                        created_at=created,
                        state=EscalationState.OPEN.value,
                    )
                )
                _append_audit(
                    conn,
                    SYSTEM_ACTOR,
                    "escalation.open",
                    escalation.id,
                    {"verdict": verdict_id},
                    created,
                )
        return StoredVerdict(
            id=verdict_id,
            created_at=created,
            status=verdict.status,
            key_id=key_id,
            verdict=verdict,
            events=list(events),
            run=run,
            escalation=escalation,
        )

    def get_verdict(self, verdict_id: str) -> StoredVerdict:
        with self.reader.connect() as conn:
            row = conn.execute(
                select(verdicts, case_runs.c.run_json)
                .outerjoin(case_runs, case_runs.c.verdict_id == verdicts.c.id)
                .where(verdicts.c.id == verdict_id)
            ).first()
            if row is None:
                raise NotFoundError(f"no verdict {verdict_id!r}")
            esc = conn.execute(
                _escalation_query().where(escalations.c.verdict_id == verdict_id)
            ).first()
        return StoredVerdict(
            id=row.id,
            created_at=row.created_at,
            status=Status(row.status),
            key_id=row.key_id,
            verdict=Verdict.model_validate_json(row.verdict_json),
            events=_events(row.events_json),
            run=None if row.run_json is None else RunInfo.model_validate_json(row.run_json),
            escalation=None if esc is None else _escalation(esc),
        )

    def get_record(self, verdict_id: str) -> CaseRecord:
        """The case record of a verdict recorded with its run (see :meth:`record_verdict`)."""
        stored = self.get_verdict(verdict_id)
        if stored.run is None:
            raise NotFoundError(f"verdict {verdict_id!r} was recorded without how it was decided")
        return CaseRecord.of(
            stored.verdict,
            stored.events,
            stored.run,
            record_id=stored.id,
            created_at=stored.created_at,
        )

    def list_escalations(
        self, state: EscalationState | None = None, *, limit: int = 50, offset: int = 0
    ) -> list[Escalation]:
        """Oldest first: the queue is worked in arrival order."""
        query = _escalation_query().order_by(escalations.c.created_at, escalations.c.id)
        if state is not None:
            query = query.where(escalations.c.state == state.value)
        with self.reader.connect() as conn:
            rows = conn.execute(query.limit(limit).offset(offset)).all()
        return [_escalation(row) for row in rows]

    def count_escalations(self, state: EscalationState) -> int:
        with self.reader.connect() as conn:
            found = conn.execute(
                select(func.count()).select_from(escalations).where(escalations.c.state == state)
            ).scalar_one()
        return int(found)

    def get_escalation(self, escalation_id: str) -> Escalation:
        with self.reader.connect() as conn:
            row = conn.execute(_escalation_query().where(escalations.c.id == escalation_id)).first()
        if row is None:
            raise NotFoundError(f"no escalation {escalation_id!r}")
        return _escalation(row)

    def claim(self, escalation_id: str, *, clinician: str) -> Escalation:
        """Claim an open case. One conditional UPDATE: of two clinicians, exactly one wins."""
        at = _now()
        with self._writing() as conn:
            done = conn.execute(
                update(escalations)
                .where(
                    escalations.c.id == escalation_id,
                    escalations.c.state == EscalationState.OPEN.value,
                )
                .values(state=EscalationState.CLAIMED.value, claimed_by=clinician, claimed_at=at)
            )
            if done.rowcount != 1:
                self._raise_state(conn, escalation_id, "claimed")
            _append_audit(conn, clinician, "escalation.claim", escalation_id, {}, at)
        return self.get_escalation(escalation_id)

    def release(self, escalation_id: str, *, by: str, override: bool = False) -> Escalation:
        """Put a claimed case back in the queue. Only its holder may, unless ``override`` (an
        admin freeing the case of a clinician who is away)."""
        with self._writing() as conn:
            done = conn.execute(
                update(escalations)
                .where(*self._held_by(escalation_id, by, override))
                .values(state=EscalationState.OPEN.value, claimed_by=None, claimed_at=None)
            )
            if done.rowcount != 1:
                self._raise_state(conn, escalation_id, "released")
            _append_audit(conn, by, "escalation.release", escalation_id, {})
        return self.get_escalation(escalation_id)

    def reassign(
        self, escalation_id: str, *, to: str, by: str, override: bool = False
    ) -> Escalation:
        """Hand a claimed case to another clinician (``to``: an active clinician key's id).
        Only its holder may, unless ``override``."""
        at = _now()
        with self._writing() as conn:
            target = conn.execute(
                select(api_keys.c.role).where(api_keys.c.id == to, api_keys.c.revoked_at.is_(None))
            ).first()
            if target is None or target.role != Role.CLINICIAN.value:
                raise InputError(f"{to!r} is not an active clinician key")
            done = conn.execute(
                update(escalations)
                .where(*self._held_by(escalation_id, by, override), escalations.c.claimed_by != to)
                .values(claimed_by=to, claimed_at=at)
            )
            if done.rowcount != 1:
                self._raise_state(conn, escalation_id, "reassigned", to=to)
            _append_audit(conn, by, "escalation.reassign", escalation_id, {"to": to}, at)
        return self.get_escalation(escalation_id)

    @staticmethod
    def _held_by(escalation_id: str, by: str, override: bool) -> list[Any]:
        """WHERE clauses: this case, claimed, and (without ``override``) claimed by ``by``."""
        clauses: list[Any] = [
            escalations.c.id == escalation_id,
            escalations.c.state == EscalationState.CLAIMED.value,
        ]
        if not override:
            clauses.append(escalations.c.claimed_by == by)
        return clauses

    def resolve(
        self,
        escalation_id: str,
        *,
        clinician: str,
        resolution: Resolution,
        note: str,
        answer: str | None = None,
    ) -> Escalation:
        """Close a case the clinician has claimed: answer it, approve it or reject it."""
        if resolution is Resolution.ANSWER and not (answer and answer.strip()):
            raise InputError("resolution 'answer' needs the answer text")
        if resolution is not Resolution.ANSWER and answer:
            raise InputError(f"resolution {resolution.value!r} takes no answer text")
        if not note.strip():
            raise InputError("a resolution needs a note saying why")
        at = _now()
        with self._writing() as conn:
            if resolution is Resolution.APPROVE:
                # Approving releases exactly the answer the gate held back, recorded as the
                # answer of the resolution so that the audit entry pins it down.
                answer = self._held_back_answer(conn, escalation_id)
            done = conn.execute(
                update(escalations)
                .where(*self._held_by(escalation_id, clinician, override=False))
                .values(
                    state=EscalationState.RESOLVED.value,
                    resolution=resolution.value,
                    answer=answer,
                    note=note,
                    resolved_by=clinician,
                    resolved_at=at,
                )
            )
            if done.rowcount != 1:
                self._raise_state(conn, escalation_id, "resolved")
            if resolution is Resolution.APPROVE and answer is None:
                # Raised inside the transaction, so the update above is rolled back.
                raise ConflictError(
                    f"escalation {escalation_id} has no model answer to approve (the gate kept "
                    "none); answer it or reject it"
                )
            _append_audit(
                conn,
                clinician,
                "escalation.resolve",
                escalation_id,
                {
                    "resolution": resolution.value,
                    "note_sha256": digest(note),
                    "answer_sha256": None if answer is None else digest(answer),
                },
                at,
            )
        return self.get_escalation(escalation_id)

    @staticmethod
    def _held_back_answer(conn: Connection, escalation_id: str) -> str | None:
        row = conn.execute(
            select(verdicts.c.verdict_json)
            .join(escalations, escalations.c.verdict_id == verdicts.c.id)
            .where(escalations.c.id == escalation_id)
        ).first()
        if row is None:
            return None
        held = Verdict.model_validate_json(row.verdict_json).held_back
        return None if held is None else held.answer

    @staticmethod
    def _raise_state(
        conn: Connection, escalation_id: str, verb: str, *, to: str | None = None
    ) -> None:
        row = conn.execute(
            select(escalations.c.state, escalations.c.claimed_by).where(
                escalations.c.id == escalation_id
            )
        ).first()
        if row is None:
            raise NotFoundError(f"no escalation {escalation_id!r}")
        if verb != "claimed" and row.state == EscalationState.CLAIMED.value:
            if to is not None and row.claimed_by == to:
                raise ConflictError(f"escalation {escalation_id} is already held by {to}")
            raise ConflictError(f"escalation {escalation_id} is claimed by another clinician")
        raise ConflictError(f"escalation {escalation_id} is {row.state} and cannot be {verb}")

    # -- audit ---------------------------------------------------------------------------

    def audit_entries(self, *, after: int = 0, limit: int | None = None) -> list[AuditEntry]:
        query = select(audit_log).where(audit_log.c.seq > after).order_by(audit_log.c.seq)
        if limit is not None:
            query = query.limit(limit)
        with self.reader.connect() as conn:
            rows = conn.execute(query).all()
        return [AuditEntry.model_validate(row._asdict()) for row in rows]

    def verify_audit(self, anchors: Sequence[AuditAnchor] = ()) -> AuditReport:
        """Walk the whole chain, checking it against ``anchors`` kept outside the database;
        see :mod:`medgate.store.audit` for what is detected."""
        with self.reader.connect() as conn:
            if conn.dialect.name == "postgresql":
                # One snapshot for head, verdicts and entries, even while others append.
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
            head = conn.execute(select(audit_head).where(audit_head.c.id == 1)).one()
            stored = {
                row.id: record_digest(row.verdict_json, row.events_json, row.run_json)
                for row in conn.execute(
                    select(
                        verdicts.c.id,
                        verdicts.c.verdict_json,
                        verdicts.c.events_json,
                        case_runs.c.run_json,
                    ).outerjoin(case_runs, case_runs.c.verdict_id == verdicts.c.id)
                )
            }
            columns = [escalations.c[name] for name in EscalationRow.model_fields]
            queue = {
                row.id: EscalationRow.model_validate(row._asdict())
                for row in conn.execute(select(*columns))
            }
            rows = conn.execute(select(audit_log).order_by(audit_log.c.seq)).all()
        entries = [AuditEntry.model_validate(row._asdict()) for row in rows]
        problems = check_chain(
            entries,
            head_seq=head.seq,
            head_hash=head.hash,
            verdict_digests=stored,
            anchors=anchors,
        )
        problems.extend(check_escalations(entries, queue))
        return AuditReport(
            ok=not problems,
            entries=len(entries),
            problems=problems,
            head=AuditAnchor(seq=head.seq, hash=head.hash, taken_at=_now()),
            anchors_checked=len(anchors),
        )


def _append_audit(
    conn: Connection,
    actor: str,
    action: str,
    subject: str,
    payload: dict[str, Any],
    at: str | None = None,
) -> None:
    """Append one entry. ``at`` is the time the row it records was written with, so that
    `verify` can compare the two."""
    # Locking the head row serialises appends across processes; on SQLite the transaction
    # already holds the database's write lock (BEGIN IMMEDIATE), and FOR UPDATE is omitted.
    head = conn.execute(select(audit_head).where(audit_head.c.id == 1).with_for_update()).one()
    seq = int(head.seq) + 1
    at = at or _now()
    payload_text = canonical_json(payload)
    new_hash = entry_hash(
        seq=seq,
        at=at,
        actor=actor,
        action=action,
        subject=subject,
        payload=payload_text,
        prev_hash=head.hash,
    )
    conn.execute(
        insert(audit_log).values(
            seq=seq,
            at=at,
            actor=actor,
            action=action,
            subject=subject,
            payload=payload_text,
            prev_hash=head.hash,
            hash=new_hash,
        )
    )
    conn.execute(update(audit_head).where(audit_head.c.id == 1).values(seq=seq, hash=new_hash))


def record_digest(verdict_json: str, events_json: str, run_json: str | None = None) -> str:
    """What a verdict's audit entry pins down: the stored verdict, the gate's events and how it
    was decided (a verdict recorded without its run is digested as before there were runs)."""
    text = verdict_json + "\n" + events_json
    return digest(text if run_json is None else text + "\n" + run_json)


def _events_json(events: Sequence[Event]) -> str:
    return "[" + ",".join(event.model_dump_json() for event in events) + "]"


def _events(text: str) -> list[Event]:
    return EVENTS.validate_json(text)


def _escalation_query() -> Any:
    return select(escalations, verdicts.c.verdict_json, verdicts.c.events_json).join(
        verdicts, verdicts.c.id == escalations.c.verdict_id
    )


def _escalation(row: Row[Any]) -> Escalation:
    values = row._asdict()
    verdict = Verdict.model_validate_json(values.pop("verdict_json"))
    events = _events(values.pop("events_json"))
    return Escalation.model_validate({**values, "verdict": verdict, "events": events})


def _key(row: Row[Any]) -> ApiKey:
    values = row._asdict()
    values.pop("key_hash", None)
    return ApiKey.model_validate(values)


__all__ = ["Store", "hash_token"]

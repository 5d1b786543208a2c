"""Typed records the store hands out, and the store's own errors."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from medgate.case_record import RunInfo
from medgate.errors import MedgateError
from medgate.events import Event
from medgate.records import Record, Status
from medgate.verdict import Verdict


class Role(StrEnum):
    """What an API key may do."""

    CLIENT = "client"
    """Submits cases and reads their verdicts."""
    CLINICIAN = "clinician"
    """Works the escalation queue."""
    ADMIN = "admin"
    """Manages keys, reads metrics and verifies the audit log."""


class ApiKey(Record):
    """An API key as stored: never the token itself, only its hash."""

    id: str = Field(description="Public identifier, shown in lists and the audit log.")
    name: str = Field(description="Who or what holds the key.")
    role: Role
    created_at: str
    revoked_at: str | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class EscalationState(StrEnum):
    OPEN = "open"
    CLAIMED = "claimed"
    RESOLVED = "resolved"


class Resolution(StrEnum):
    """How a clinician closes an escalated case."""

    ANSWER = "answer"
    """The clinician writes the answer the user receives."""
    APPROVE = "approve"
    """The held-back model answer may be shown as it is."""
    REJECT = "reject"
    """Nothing from the model is shown; the note says why."""


class EscalationRow(Record):
    """A case held for a clinician, as its row in the queue holds it: the review state."""

    id: str
    verdict_id: str
    created_at: str
    state: EscalationState
    claimed_by: str | None = None
    claimed_at: str | None = None
    resolution: Resolution | None = None
    answer: str | None = Field(
        default=None,
        description="The answer the review released: the clinician's own (resolution 'answer') "
        "or the model's held-back answer they approved (resolution 'approve').",
    )
    note: str | None = None
    resolved_by: str | None = None
    resolved_at: str | None = None


class Escalation(EscalationRow):
    """A case held for a clinician, with its review state, its verdict and the gate's events."""

    verdict: Verdict = Field(description="The gate's verdict that put the case here.")
    events: list[Event] = Field(
        default_factory=list, description="What the gate emitted while deciding (drafts, signals)."
    )


class StoredVerdict(Record):
    """A verdict as committed, with its escalation if it has one."""

    id: str
    created_at: str
    status: Status
    key_id: str | None = Field(default=None, description="The client key that submitted it.")
    verdict: Verdict
    events: list[Event] = Field(default_factory=list)
    run: RunInfo | None = Field(
        default=None, description="How it was decided; None when recorded without it."
    )
    escalation: Escalation | None = None


class AuditEntry(Record):
    """One link of the audit chain."""

    seq: int
    at: str
    actor: str = Field(description="API key id, or 'system' for the service itself.")
    action: str
    subject: str
    payload: str = Field(description="Canonical JSON, hashed exactly as stored.")
    prev_hash: str
    hash: str


class AuditAnchor(Record):
    """The chain's head at one moment, kept outside the database.

    Whoever can write to the database can rebuild the whole chain with fresh hashes; an anchor
    written elsewhere (another machine, a ticket, paper) is what such a rewrite cannot match.
    """

    seq: int = Field(ge=0, description="Entries in the chain when the anchor was taken.")
    hash: str = Field(pattern=r"^[0-9a-f]{64}$", description="The hash of entry `seq`.")
    taken_at: str = Field(description="When the anchor was taken (UTC, ISO 8601).")


class AuditReport(Record):
    """What `medgate audit verify` found."""

    ok: bool
    entries: int
    problems: list[str] = Field(default_factory=list)
    head: AuditAnchor | None = Field(
        default=None, description="The head this verification saw, to keep as a new anchor."
    )
    anchors_checked: int = 0


class StoreError(MedgateError):
    """A store operation could not be done."""


class NotFoundError(StoreError):
    """No such escalation, verdict or key."""


class ConflictError(StoreError):
    """The object is not in a state that allows this (already claimed, resolved, ...)."""

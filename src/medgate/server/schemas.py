"""Request and response bodies of the HTTP API.

The request for a check is :class:`medgate.records.Case` itself: unknown fields are refused, so a
client cannot send a ``status`` or anything else that the gate alone decides.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from medgate.records import Record, Status
from medgate.redaction import ClientVerdict
from medgate.store import ApiKey, Escalation, EscalationState, Resolution, Role
from medgate.verdict import Verdict

MAX_NOTE_CHARS = 4_000
MAX_ANSWER_CHARS = 20_000


class CheckResponse(Record):
    """A verdict that has been committed to the store."""

    verdict_id: str
    status: Status
    escalation_id: str | None = Field(
        default=None, description="Set when the case is held for a clinician (it is in the queue)."
    )
    verdict: Verdict | ClientVerdict = Field(
        description="As the key's role may see it: a client key gets the asker's view (status, "
        "released answer, reason, signals), clinician and admin keys the whole verdict."
    )


class ResolveRequest(Record):
    """How a clinician closes a case they have claimed."""

    action: Resolution
    note: str = Field(min_length=1, max_length=MAX_NOTE_CHARS, description="Why, for the record.")
    answer: str | None = Field(
        default=None,
        max_length=MAX_ANSWER_CHARS,
        description="The clinician's answer; required for action 'answer', refused otherwise.",
    )

    @model_validator(mode="after")
    def _answer_matches_action(self) -> ResolveRequest:
        if not self.note.strip():
            raise ValueError("the note is blank")
        if self.action is Resolution.ANSWER and not (self.answer and self.answer.strip()):
            raise ValueError("action 'answer' needs the answer text")
        if self.action is not Resolution.ANSWER and self.answer is not None:
            raise ValueError(f"action {self.action.value!r} takes no answer text")
        return self


class ReassignRequest(Record):
    """Who takes over a claimed case."""

    to: str = Field(min_length=1, max_length=64, description="An active clinician key's id.")


class Colleague(Record):
    """A clinician a case can be handed to."""

    id: str
    name: str


class EscalationList(Record):
    items: list[Escalation]
    state: EscalationState | None


class VerdictStatusResponse(Record):
    """A recorded verdict and, if escalated, where its review stands."""

    verdict_id: str
    created_at: str
    status: Status
    verdict: Verdict | ClientVerdict = Field(description="As the key's role may see it.")
    released_answer: str | None = Field(
        default=None,
        description="What the person who asked may read now: the answer or guidance the gate "
        "showed, else the answer a clinician's review released (their own, or the model's answer "
        "they approved); None while the case waits and after a rejection.",
    )
    escalation_state: EscalationState | None = None
    resolution: Resolution | None = None
    clinician_answer: str | None = Field(
        default=None, description="The answer the clinician wrote (resolution 'answer')."
    )
    clinician_note: str | None = None


class KeyCreateRequest(Record):
    name: str = Field(min_length=1, max_length=200)
    role: Role


class KeyCreated(Record):
    key: ApiKey
    token: str = Field(description="Shown once; only its hash is stored.")


class Health(Record):
    status: str

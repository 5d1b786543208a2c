"""What each API key sees of a verdict, an event or a case in the queue.

Every response and stream that carries a verdict or a gate's events goes through here, and the
scoping itself is :mod:`medgate.redaction`: a client key gets the asker's view, clinician and
admin keys get everything.
"""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException

from medgate.events import DecisionEvent, EventBase, EventKind
from medgate.records import Status
from medgate.redaction import (
    Audience,
    ClientVerdict,
    EventView,
    client_verdict,
    released_safety,
    route_of,
    scope_event,
    scope_verdict,
)
from medgate.store import Escalation, Resolution, Role, StoredVerdict
from medgate.verdict import Verdict


def audience(role: Role) -> Audience:
    """Clients act for the person who asked; clinicians and admins review."""
    return Audience.ASKER if role is Role.CLIENT else Audience.REVIEWER


def verdict_for(role: Role, verdict: Verdict) -> Verdict | ClientVerdict:
    return scope_verdict(verdict, audience(role))


def event_for(role: Role, event: EventBase) -> EventView | None:
    return scope_event(event, audience(role))


def escalation_for(role: Role, escalation: Escalation) -> Escalation:
    """A queued case, held-back answer and drafts included: for reviewers only."""
    if audience(role) is not Audience.REVIEWER:
        raise HTTPException(403, "the queue is for clinician keys")
    return escalation


def released_answer(stored: StoredVerdict) -> str | None:
    """What the person who asked may read now: the answer or fixed guidance the gate showed,
    else the answer released by a clinician's review (their own, or the model's they approved);
    None while the case waits, and after a rejection."""
    if stored.status is not Status.ESCALATED:
        return client_verdict(stored.verdict).answer
    esc = stored.escalation
    if esc is None or esc.resolution not in (Resolution.ANSWER, Resolution.APPROVE):
        return None
    return esc.answer


def decision_event(
    stored: StoredVerdict, gate_event: DecisionEvent | None, role: Role
) -> EventView:
    """The stream's last event, built once the verdict is recorded."""
    verdict = stored.verdict
    common: dict[str, Any] = {
        "verdict_id": stored.id,
        "escalation_id": None if stored.escalation is None else stored.escalation.id,
        "status": verdict.status.value,
        "route": route_of(verdict),
    }
    stage = gate_event.stage if gate_event is not None else "service"
    iteration = gate_event.iteration if gate_event is not None else None
    if audience(role) is Audience.ASKER:
        shown = client_verdict(verdict)
        data = {
            **common,
            "answer": shown.answer,
            "reason": shown.reason,
            "safety": released_safety(verdict, stored.events),
        }
    else:
        data = gate_event.data.model_dump(mode="json") if gate_event is not None else {}
        data.update(
            common,
            answer=verdict.answer,
            reason=verdict.reason,
            errors=list(verdict.trace.errors),
            held_back=None if verdict.held_back is None else verdict.held_back.model_dump(),
        )
    return EventView(kind=EventKind.DECISION, stage=stage, iteration=iteration, data=data)


def unrecorded_decision(detail: str) -> EventView:
    """The stream's last event when the verdict could not be recorded: nothing is released."""
    return EventView(
        kind=EventKind.DECISION,
        stage="service",
        data={
            "verdict_id": None,
            "escalation_id": None,
            "status": Status.BLOCKED.value,
            "route": None,
            "answer": None,
            "reason": detail,
            "errors": [detail],
        },
    )

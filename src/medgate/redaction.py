"""What each reader may see of a verdict and of the events a gate emits.

A verdict keeps everything behind its decision: drafts, the held-back answer and its reasoning,
injected knowledge, the judges' justifications (which quote the draft), claim flags (which quote
its sentences). The person who asked may see only what the gate chose to show them: the status,
the released answer (or the gate's own fixed guidance), the reason and the signals. Clinicians
and admins see everything, because a clinician needs the held-back answer to review the case.

Both views for the person who asked are allow-lists: a field reaches them only if it is named
here, so a new field a gate adds to its trace or events stays hidden until someone decides that
it may be shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any, TypeAlias

from pydantic import Field

from medgate.events import ClaimsEvent, EventBase, EventKind
from medgate.records import Case, Record, SignalValue, Status
from medgate.routing import RouteChoice
from medgate.verdict import Verdict

ESCALATED_REASON = "The answer is held back for a clinician to review."
"""What the person who asked is told about an escalated case: the gate's own reason can quote
what it held back (a label that changed, an orchestrator's rationale, an error message)."""

FAILED_STEP = "a step of the check failed; nothing from it is released"
"""What the person who asked sees of an error event, whose detail can quote model text."""


class Audience(StrEnum):
    """Who reads a verdict."""

    ASKER = "asker"
    """The person who asked, or the application acting for them (a client key)."""
    REVIEWER = "reviewer"
    """Clinicians and admins: everything, held-back text included."""


class ClientVerdict(Record):
    """What the person who asked may see of a verdict."""

    status: Status
    answer: str | None = Field(
        description="The released answer, or the gate's own fixed guidance (screening "
        "questions, a refusal); None while a clinician reviews the case."
    )
    reason: str
    case: Case = Field(description="The case as the asker sent it.")
    signals: dict[str, SignalValue] = Field(default_factory=dict)
    route: str | None = Field(
        default=None, description="Which gate a routing gate sent the case to, if it was routed."
    )


def route_of(verdict: Verdict) -> str | None:
    """The gate a routing gate chose for this verdict, if it was routed."""
    choice = verdict.trace.report(RouteChoice)
    return None if choice is None else choice.route.value


def client_verdict(verdict: Verdict) -> ClientVerdict:
    """The asker's view of ``verdict``."""
    escalated = verdict.status is Status.ESCALATED
    return ClientVerdict(
        status=verdict.status,
        # An escalated verdict shows nothing the model wrote, whatever a gate put in `answer`.
        answer=None if escalated else verdict.answer,
        reason=ESCALATED_REASON if escalated else verdict.reason,
        case=verdict.case,
        signals=dict(verdict.signals),
        route=route_of(verdict),
    )


def scope_verdict(verdict: Verdict, audience: Audience) -> Verdict | ClientVerdict:
    """``verdict`` as ``audience`` may see it."""
    return verdict if audience is Audience.REVIEWER else client_verdict(verdict)


# -- events ---------------------------------------------------------------------------------


class EventView(Record):
    """An event as one reader may see it: the typed event's fields, with ``data`` as JSON."""

    kind: EventKind
    stage: str
    iteration: int | None = None
    data: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def whole(cls, event: EventBase) -> EventView:
        """The event with nothing left out (what a reviewer sees)."""
        return cls.model_validate(event.model_dump(mode="json"))


#: An allow-list spec: for a mapping, which keys are kept and how each value is projected.
#: ``True`` keeps a JSON scalar or a list of scalars (never a mapping); a dict recurses. The key
#: ``"*"`` projects every key of a mapping keyed by data (each judge's name) with one rule.
Spec: TypeAlias = Mapping[str, "bool | Spec"]
EVERY = "*"

_SIGNAL: Spec = {"name": True, "value": True, "layer": True, "status": True, "note": True}
_SCORE: Spec = {"evaluator": True, "score": True, "ran": True}
_FLAG: Spec = {"kind": True, "severity": True, "sentence": True, "suggestion": True}

#: What the asker may see of each kind of event. Kinds not listed here are not sent at all.
#: ANSWER events keep only their place in the sequence (a draft exists and is being checked).
_EVENTS: dict[EventKind, Spec] = {
    EventKind.TRIAGE: {"category": True, "categories": True},
    EventKind.ROUTE: {"route": True, "why": True},
    EventKind.ANSWER: {},
    EventKind.CLAIMS: {
        # The claims layer's check of a draft: counts only; its flags quote the draft.
        "verdict": True,
        "is_safe": True,
        "claims_count": True,
        "flag_count": True,
        "high_severity_count": True,
        "uncited_count": True,
        "unresolvable_count": True,
        "unsupported_count": True,
        "sources_count": True,
        "dose_information": True,
        "disclaimer_present": True,
    },
    EventKind.SAFETY: {
        # CareGuard's judges: scores only; their justifications quote the draft.
        "assessments": {EVERY: _SCORE},
        "passed": True,
    },
}


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _project(data: Mapping[str, Any], spec: Spec) -> dict[str, Any]:
    if EVERY in spec:
        spec = {str(key): spec[EVERY] for key in data}
    out: dict[str, Any] = {}
    for key, rule in spec.items():
        if key not in data:
            continue
        value = data[key]
        if isinstance(rule, Mapping):
            if isinstance(value, Mapping):
                out[key] = _project(value, rule)
        elif _is_scalar(value) or (
            isinstance(value, list) and all(_is_scalar(item) for item in value)
        ):
            out[key] = value
    return out


def _signals(data: Mapping[str, Any]) -> dict[str, Any]:
    return {
        str(name): _project(value, _SIGNAL)
        for name, value in data.items()
        if isinstance(value, Mapping)
    }


def client_event(event: EventBase) -> EventView | None:
    """The asker's view of one event before the decision, or None when they get none of it.

    Decisions are not passed through here: the service builds the asker's decision from
    :func:`client_verdict` once the verdict is recorded.
    """
    return client_view(EventView.whole(event))


def client_view(whole: EventView) -> EventView | None:
    """What the asker may see of an event's JSON: the allow-list applied to ``whole``."""
    if whole.kind is EventKind.SIGNALS:
        data = _signals(whole.data)
    elif whole.kind is EventKind.ERROR:
        data = {"error": FAILED_STEP}
    elif whole.kind in _EVENTS:
        data = _project(whole.data, _EVENTS[whole.kind])
    else:
        return None
    return whole.model_copy(update={"data": data})


def scope_event(event: EventBase, audience: Audience) -> EventView | None:
    """``event`` as ``audience`` may see it (None: not at all)."""
    return EventView.whole(event) if audience is Audience.REVIEWER else client_event(event)


def released_safety(verdict: Verdict, events: Iterable[EventBase]) -> dict[str, Any] | None:
    """The claims layer's check of the released answer, for the asker's safety panel.

    Only for a released answer, and only flags whose sentence is in that answer: a check of an
    earlier draft never reaches the asker, even if a gate emits it last.
    """
    if not verdict.status.answers_user or not verdict.answer:
        return None
    answer = verdict.answer
    checks = [e.data for e in events if isinstance(e, ClaimsEvent)]
    if not checks:
        return None
    check = checks[-1]
    flags = [
        _project(flag.model_dump(mode="json"), _FLAG)
        for flag in check.flags
        if flag.sentence in answer
    ]
    return {"flags": flags, "warnings": list(check.warnings), "disclaimer": check.disclaimer}

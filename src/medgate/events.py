"""Events a gate emits while it works, so that a service can stream them as they happen.

Each kind of event is its own record whose ``data`` is a typed payload, and :data:`Event` is
their union, discriminated by ``kind``: events read back from JSON (the store, the case log) are
the records the gate emitted. On the wire an event is ``{kind, stage, iteration, data}``.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any, Literal, Protocol

from pydantic import BeforeValidator, Field, TypeAdapter, model_validator

from medgate.careguard.records import Assessment, Triage, judges_by_name
from medgate.claims.safety_check import SafetyCheck
from medgate.hrs.knowledge import Fact
from medgate.records import Case, Record, SignalValue, Status
from medgate.routing import RouteChoice
from medgate.verdict import Verdict


class EventKind(StrEnum):
    ROUTE = "route"
    TRIAGE = "triage"
    ANSWER = "answer"
    SIGNALS = "signals"
    CLAIMS = "claims"
    SAFETY = "safety"
    DECISION = "decision"
    ERROR = "error"


class EventBase(Record):
    """What every event has: its kind, the stage that emitted it and the round, if any."""

    kind: EventKind
    stage: str = Field(description="Which stage emitted it (e.g. 'hrs', 'claims', 'careguard').")
    iteration: int | None = Field(default=None, description="Refinement round, where relevant.")


class RouteEvent(EventBase):
    """Which gate a routing gate sent the case to."""

    kind: Literal[EventKind.ROUTE] = EventKind.ROUTE
    data: RouteChoice


class TriageEvent(EventBase):
    """What CareGuard's controller found."""

    kind: Literal[EventKind.TRIAGE] = EventKind.TRIAGE
    data: Triage


class DraftAnswer(Record):
    """An answer a model wrote, before the gate has decided on it."""

    answer: str
    distribution: dict[str, float] | None = Field(
        default=None, description="The label distribution, for a closed answer."
    )
    injected: list[Fact] | None = Field(
        default=None, description="Facts first injected at this round (HRS rounds after 0)."
    )


class AnswerEvent(EventBase):
    kind: Literal[EventKind.ANSWER] = EventKind.ANSWER
    data: DraftAnswer


class SignalsEvent(EventBase):
    """The risk signals of the last answer, by name."""

    kind: Literal[EventKind.SIGNALS] = EventKind.SIGNALS
    data: dict[str, SignalValue]


class ClaimsEvent(EventBase):
    """The claims layer's check of an answer: flags, sources, citation verification."""

    kind: Literal[EventKind.CLAIMS] = EventKind.CLAIMS
    data: SafetyCheck


class JudgeScores(Record):
    """CareGuard's judges on one draft, and whether the draft passed."""

    assessments: dict[str, Assessment] = Field(description="Each judge's assessment, by judge.")
    blocking_claims: list[str] = Field(
        default_factory=list, description="High-severity uncited claims that stop a release."
    )
    passed: bool

    @model_validator(mode="before")
    @classmethod
    def _legacy_judges(cls, data: Any) -> Any:
        return judges_by_name(data)


class SafetyEvent(EventBase):
    kind: Literal[EventKind.SAFETY] = EventKind.SAFETY
    data: JudgeScores


class GateDecision(Record):
    """What the gate decided; always the last event of a case."""

    status: Status
    answer: str | None = None
    reason: str
    outcome: str | None = Field(default=None, description="The stage's own name for the path.")


class DecisionEvent(EventBase):
    kind: Literal[EventKind.DECISION] = EventKind.DECISION
    data: GateDecision


class Failure(Record):
    error: str = Field(description="What failed; the gate fails closed.")


class ErrorEvent(EventBase):
    kind: Literal[EventKind.ERROR] = EventKind.ERROR
    data: Failure


def _upgrade(value: Any) -> Any:
    # Events stored before the claims check had its own kind were `safety` events of the
    # `claims` stage.
    if isinstance(value, dict) and value.get("kind") == "safety" and value.get("stage") == "claims":
        return {**value, "kind": EventKind.CLAIMS.value}
    return value


Event = Annotated[
    RouteEvent
    | TriageEvent
    | AnswerEvent
    | SignalsEvent
    | ClaimsEvent
    | SafetyEvent
    | DecisionEvent
    | ErrorEvent,
    Field(discriminator="kind"),
    BeforeValidator(_upgrade),
]
"""Any event, read by its ``kind``."""

EVENTS: TypeAdapter[list[Event]] = TypeAdapter(list[Event])
"""Reads a list of events from JSON text (``EVENTS.validate_json``) or Python data."""

EventSink = Callable[[Event], None]


def discard(_: Event) -> None:
    """An event sink that ignores everything."""


class Gate(Protocol):
    """Anything that turns a case into a verdict: the HRS gate, CareGuard, the full pipeline."""

    def check(self, case: Case, events: EventSink = discard) -> Verdict:
        """Decide on ``case``; never raises for a model or check failure (fails closed instead).

        Emits events to ``events`` as it goes, ending with one :class:`DecisionEvent`.
        """
        ...

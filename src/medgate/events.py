"""Events a gate emits while it works, so that a service can stream them as they happen."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any, Protocol

from pydantic import Field

from medgate.records import Case, Record, Verdict


class EventKind(StrEnum):
    ROUTE = "route"
    TRIAGE = "triage"
    ANSWER = "answer"
    SIGNALS = "signals"
    SAFETY = "safety"
    DECISION = "decision"
    ERROR = "error"


class Event(Record):
    """One step of a gate's work. ``decision`` is always the last event of a case."""

    kind: EventKind
    stage: str = Field(description="Which stage emitted it (e.g. 'hrs', 'claims', 'careguard').")
    iteration: int | None = Field(default=None, description="Refinement round, where relevant.")
    data: dict[str, Any] = Field(default_factory=dict)


EventSink = Callable[[Event], None]


def discard(_: Event) -> None:
    """An event sink that ignores everything."""


class Gate(Protocol):
    """Anything that turns a case into a verdict: the HRS gate, CareGuard, the full pipeline."""

    def check(self, case: Case, events: EventSink = discard) -> Verdict:
        """Decide on ``case``; never raises for a model or check failure (fails closed instead).

        Emits events to ``events`` as it goes, ending with one :attr:`EventKind.DECISION`.
        """
        ...

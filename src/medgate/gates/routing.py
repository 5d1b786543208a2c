"""The routing gate: each case to the gate of its route (:func:`medgate.routing.choose_route`)."""

from __future__ import annotations

from medgate.events import ErrorEvent, EventSink, Failure, Gate, RouteEvent, discard
from medgate.records import Case
from medgate.routing import STAGE as ROUTE_STAGE
from medgate.routing import Route, choose_route
from medgate.verdict import Verdict, held_for_a_clinician


class RoutingGate:
    """Implements :class:`medgate.events.Gate` by handing each case to the gate of its route
    (:func:`medgate.routing.choose_route`)."""

    def __init__(self, research: Gate, patient: Gate) -> None:
        self.gates: dict[Route, Gate] = {Route.RESEARCH: research, Route.PATIENT: patient}

    def check(self, case: Case, events: EventSink = discard) -> Verdict:
        choice = choose_route(case)
        events(RouteEvent(stage=ROUTE_STAGE, data=choice))
        try:
            verdict = self.gates[choice.route].check(case, events)
        except Exception as exc:  # gates fail closed themselves; this one does not rely on it
            failure = f"{choice.route.value} gate raised {type(exc).__name__}: {exc}"
            events(ErrorEvent(stage=ROUTE_STAGE, data=Failure(error=failure)))
            verdict = held_for_a_clinician(case, failure)
        return verdict.model_copy(update={"trace": verdict.trace.with_report(choice)})

"""A scripted gate for service tests: emits the events it is given, returns the verdict it is
given, and can raise or hang to prove the service fails closed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from medgate.events import Event, EventKind, EventSink, discard
from medgate.records import Case, Status, Verdict


@dataclass
class Script:
    """What the gate does for questions containing ``match``."""

    match: str
    status: Status
    answer: str | None = None
    reason: str = "scripted"
    events: list[Event] = field(default_factory=list)
    raises: BaseException | None = None
    hang: bool = False


def safety_event(
    flags: list[dict[str, str]] | None = None,
    warnings: list[str] | None = None,
    disclaimer: str = "This is not medical advice; ask a clinician.",
) -> Event:
    return Event(
        kind=EventKind.SAFETY,
        stage="claims",
        data={
            "flags": flags
            if flags is not None
            else [
                {"severity": "high", "message": "dose stated without a source"},
                {"severity": "low", "message": "hedged claim"},
            ],
            "warnings": warnings if warnings is not None else ["check renal function"],
            "disclaimer": disclaimer,
        },
    )


def standard_events(answer: str | None) -> list[Event]:
    return [
        Event(kind=EventKind.TRIAGE, stage="careguard", data={"category": "medication"}),
        Event(kind=EventKind.ANSWER, stage="hrs", iteration=0, data={"text": answer or ""}),
        Event(kind=EventKind.SIGNALS, stage="hrs", iteration=0, data={"entropy": 0.2}),
        Event(kind=EventKind.SIGNALS, stage="hrs", iteration=1, data={"entropy": 0.1}),
        safety_event(),
    ]


class ScriptedGate:
    """Implements :class:`medgate.events.Gate` from a list of scripts (first match wins)."""

    def __init__(self, scripts: list[Script]) -> None:
        self.scripts = scripts
        self.seen: list[Case] = []
        self.release = threading.Event()  # set to let hanging checks return
        self.on_check: Callable[[Case], None] | None = None

    def check(self, case: Case, events: EventSink = discard) -> Verdict:
        self.seen.append(case)
        if self.on_check is not None:
            self.on_check(case)
        for script in self.scripts:
            if script.match in case.question:
                break
        else:
            raise AssertionError(f"unscripted question {case.question!r}")
        for event in script.events:
            events(event)
        if script.raises is not None:
            raise script.raises
        if script.hang:
            self.release.wait(30)
        events(Event(kind=EventKind.DECISION, stage="gate", data={"status": script.status.value}))
        return Verdict(status=script.status, answer=script.answer, reason=script.reason, case=case)


def default_gate() -> ScriptedGate:
    """Released, escalated, blocked, needs-context, raising and hanging cases."""
    return ScriptedGate(
        [
            Script(
                "hang",
                Status.RELEASED,
                answer="never",
                events=[Event(kind=EventKind.TRIAGE, stage="careguard")],
                hang=True,
            ),
            Script(
                "explode",
                Status.RELEASED,
                answer="never shown",
                events=[Event(kind=EventKind.TRIAGE, stage="careguard")],
                raises=RuntimeError("model crashed"),
            ),
            Script(
                "escalate",
                Status.ESCALATED,
                answer=None,
                reason="uncertain: entropy above threshold",
                events=standard_events("Maybe."),
            ),
            Script(
                "block",
                Status.BLOCKED,
                answer="I cannot help with that; please ask a clinician.",
                reason="unsafe request",
                events=standard_events(None),
            ),
            Script(
                "pregnan",
                Status.NEEDS_CONTEXT,
                answer="Are you pregnant? (yes / no / not sure)",
                reason="missing patient context",
                events=[Event(kind=EventKind.TRIAGE, stage="careguard")],
            ),
            Script(
                "",
                Status.RELEASED,
                answer="Yes. Aspirin is an antiplatelet drug.",
                reason="low risk",
                events=standard_events("Yes."),
            ),
        ]
    )


def gate_factory(config: object) -> ScriptedGate:
    """For `medgate serve --gate service_gate:gate_factory` in tests."""
    return default_gate()

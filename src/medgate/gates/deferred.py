"""A gate assembled when the first case reaches it.

A process that decides one case (``medgate ask``, ``medgate care``) reaches one route of the
routing gate; assembling the other loads models that case never uses (for a research question,
CareGuard's 1.5B generator and the request screen's encoder). :class:`DeferredGate` assembles
its gate on first use instead. A service that decides many cases assembles every route at
start-up, so that a configuration error is reported before the first case, not held in it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from medgate.events import EventSink, Gate, discard
from medgate.records import Case
from medgate.verdict import Verdict


class DeferredGate:
    """Implements :class:`medgate.events.Gate`: ``build`` runs on the first case (once, also
    when cases arrive on several threads) and every case goes to the gate it returned. A build
    that raises is tried again on the next case; the exception reaches the caller, which fails
    closed as it does for any gate that raises (:class:`~medgate.gates.routing.RoutingGate`)."""

    def __init__(self, build: Callable[[], Gate]) -> None:
        self._build = build
        self._gate: Gate | None = None
        self._lock = threading.Lock()

    @property
    def built(self) -> Gate | None:
        """The assembled gate, or None while no case has reached it."""
        return self._gate

    def gate(self) -> Gate:
        """The assembled gate, assembling it now if no case has yet."""
        with self._lock:
            if self._gate is None:
                self._gate = self._build()
            return self._gate

    def check(self, case: Case, events: EventSink = discard) -> Verdict:
        return self.gate().check(case, events)

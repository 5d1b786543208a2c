"""The full pipeline: every stage of the design, for every kind of question.

::

    case ── route ──┬─ closed research question ── HRS: answer over the labels, five signals,
                    │                              decision layer, knowledge loop, escalate
                    └─ patient question ────────── CareGuard: screen and triage (needs context,
                                                   crisis, emergency), draft with the HRS-style
                                                   signals of a white-box generator, claims with
                                                   citation verification, SRA ∥ HRA, refine
                                                   ── HRS check of a yes/no question
                                                   ── verdict

A research question goes to HRS alone, as with the ``route`` profile. A patient question goes
to CareGuard; when CareGuard wrote an answer to a question that asks yes or no ("Can I take
ibuprofen while pregnant?"), the HRS gate then reads the answering model's own yes/no answer to
it, with its five signals, decision layer and knowledge loop. If HRS would not release that
answer (the model stays unsure, or its orchestrator abstains), an answer CareGuard would show is
held back for a clinician instead: an answer is shown only when the judges pass it *and* the
model is confident of the question's answer. CareGuard's other decisions (screening questions,
guidance, a refusal) stand, since they show nothing the model wrote; HRS is still run on every
answered yes/no question, so the case's record holds its signals either way.

Whether a question asks yes or no is decided by a fixed rule on its first word (:data:`POLAR`),
never by a model. The gates inside emit their own events; their decisions are held back and the
pipeline emits the one decision, last.
"""

from __future__ import annotations

import re
import time

from medgate.careguard.records import CareGuardReport
from medgate.events import (
    DecisionEvent,
    ErrorEvent,
    Event,
    EventSink,
    Failure,
    Gate,
    GateDecision,
    RouteEvent,
    discard,
)
from medgate.gates.records import Confidence, HRSCheck
from medgate.hrs.decision import HRSReport
from medgate.records import Case, HeldBackAnswer, Status, Timing
from medgate.routing import STAGE as ROUTE_STAGE
from medgate.routing import Route, choose_route
from medgate.verdict import Trace, Verdict, held_for_a_clinician

STAGE = "full"

#: A question that asks yes or no opens with an auxiliary or modal verb ("Can I ...", "Is it
#: safe ...", "Should my son ..."); "What", "How", "Which" questions do not.
POLAR = re.compile(
    r"^\W*(?:can|could|should|shall|is|are|am|was|were|do|does|did|will|would|may|might|must"
    r"|has|have|had|isn't|aren't|don't|doesn't|can't|shouldn't|won't)\b",
    re.IGNORECASE,
)


def asks_yes_or_no(question: str) -> bool:
    return POLAR.match(question) is not None


class FullPipeline:
    """Implements :class:`medgate.events.Gate` with every stage (see the module docstring)."""

    def __init__(self, hrs: Gate, careguard: Gate) -> None:
        self.hrs = hrs
        self.careguard = careguard

    def check(self, case: Case, events: EventSink = discard) -> Verdict:
        t0 = time.perf_counter()
        choice = choose_route(case)
        events(RouteEvent(stage=ROUTE_STAGE, data=choice))

        def inner(event: Event) -> None:
            # The stages' own decisions are not the case's: the pipeline decides last.
            if not isinstance(event, DecisionEvent):
                events(event)

        try:
            if choice.route is Route.RESEARCH:
                verdict = self.hrs.check(case, inner)
            else:
                verdict = self._patient(case, inner)
        except Exception as exc:  # the gates fail closed themselves; this one does not rely on it
            failure = f"the full pipeline raised {type(exc).__name__}: {exc}"
            events(ErrorEvent(stage=STAGE, data=Failure(error=failure)))
            verdict = held_for_a_clinician(case, failure)
        trace = verdict.trace.with_report(choice)
        total = Timing(stage=f"{STAGE}.total", seconds=time.perf_counter() - t0)
        trace = trace.model_copy(update={"timings": [*trace.timings, total]})
        verdict = verdict.model_copy(update={"trace": trace})
        decision = GateDecision(
            status=verdict.status,
            answer=verdict.answer,
            reason=verdict.reason,
            outcome=_path(verdict),
        )
        events(DecisionEvent(stage=STAGE, data=decision))
        return verdict

    def _patient(self, case: Case, events: EventSink) -> Verdict:
        verdict = self.careguard.check(case, events)
        report = verdict.trace.report(CareGuardReport)
        if report is None or not report.rounds:
            why = (
                "CareGuard wrote no answer (screening, guidance or a refusal), so HRS was not asked"
            )
            return _with(verdict, HRSCheck(confidence=Confidence.NOT_ASKED, why=why))
        if not asks_yes_or_no(case.question):
            why = "not a yes/no question, so HRS has no closed answer to read"
            return _with(verdict, HRSCheck(confidence=Confidence.NOT_ASKED, why=why))
        opinion = self.hrs.check(case, events)
        return with_hrs_check(verdict, opinion, report)


def with_hrs_check(verdict: Verdict, opinion: Verdict, report: CareGuardReport) -> Verdict:
    """CareGuard's ``verdict`` with HRS's ``opinion`` of the same question: an answer is held
    for a clinician when HRS would not release its own yes/no answer."""
    trace = Trace(
        stages={**verdict.trace.stages, **opinion.trace.stages},
        timings=[*verdict.trace.timings, *opinion.trace.timings],
        usage=[*verdict.trace.usage, *opinion.trace.usage],
        errors=[*verdict.trace.errors, *opinion.trace.errors],
    )
    hrs = opinion.trace.report(HRSReport)
    outcome = hrs.decision.outcome.value if hrs is not None else "error"
    if opinion.status.answers_user:
        noted = HRSCheck(
            confidence=Confidence.CONFIDENT,
            why=f"HRS would release its yes/no answer ({outcome}): CareGuard's decision stands",
        )
        return verdict.model_copy(update={"trace": _add(trace, noted)})
    noted = HRSCheck(
        confidence=Confidence.UNSURE,
        why=f"HRS would not release its yes/no answer ({outcome}): {opinion.reason}",
    )
    if not verdict.status.answers_user:
        return verdict.model_copy(update={"trace": _add(trace, noted)})
    last = report.rounds[-1]
    return verdict.model_copy(
        update={
            "status": Status.ESCALATED,
            "answer": None,
            "reason": "the judges would release the answer, but the model is unsure of the "
            f"question's yes/no answer ({outcome}); a clinician must decide",
            "held_back": HeldBackAnswer(
                answer=verdict.answer or "", source=f"careguard round {last.iteration}"
            ),
            "trace": _add(trace, noted),
        }
    )


def _add(trace: Trace, report: HRSCheck) -> Trace:
    return trace.model_copy(update={"stages": {**trace.stages, report.stage: report}})


def _with(verdict: Verdict, report: HRSCheck) -> Verdict:
    return verdict.model_copy(update={"trace": _add(verdict.trace, report)})


def _path(verdict: Verdict) -> str:
    """The stage decisions behind the verdict, e.g. 'careguard:released, hrs:gate'."""
    parts = []
    careguard = verdict.trace.report(CareGuardReport)
    if careguard is not None:
        parts.append(f"careguard:{careguard.outcome.value}")
    hrs = verdict.trace.report(HRSReport)
    if hrs is not None:
        parts.append(f"hrs:{hrs.decision.outcome.value}")
    return ", ".join(parts) or "error"

"""The routing gate: closed research questions to the HRS gate, everything else to CareGuard.

The HRS gate answers over a closed label set (yes/no/maybe): right for a research question with
its evidence, wrong for a person asking about their own care. "Can I give my 3 year old adult
ibuprofen tablets for a fever?" must never come back as a bare "yes". So a case goes to HRS only
when it is a closed research question:

* its caller gave the labels (``Case.labels``): the caller says, explicitly, that the question
  has a closed answer; or
* it comes with a context to answer from, and neither the question nor the context is written
  in the first or second person ("can I", "my son", "your system") nor names a self-harm or
  emergency risk. People put their own notes in a context field too; research questions and
  abstracts are written impersonally. On 2026-12-01 the personal-voice pattern below matched 1 of
  1000 PubMedQA-L questions, 1 of their 1000 contexts, 1 of 720 BioASQ yes/no questions and 43
  of the 70 patient questions of CareGuard's set (``pytest tests/unit/test_routing.py -k
  voice -s`` prints and bounds these counts).

Everything else is a patient question and goes to CareGuard, which triages first. The route is
decided from explicit fields and fixed rules, never by a model, so text inside a question cannot
talk its way into the yes/no gate. :class:`medgate.pipeline.RoutingGate` hands each case on.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Literal

from medgate.careguard.categories import RiskCategory, match_rules
from medgate.records import Case, Record

STAGE = "route"

#: First- or second-person voice: a person asking about themselves or being addressed. A bare
#: "I" counts only as a subject ("can I", "I take", "I'm"), since research text uses it as a
#: numeral ("phase I trials", "troponin I levels").
PERSONAL_VOICE = re.compile(
    r"(?i:\b(?:my|me|myself|mine|you|your|yours|yourself)\b)"
    r"|\bI(?:'m|’m|'ve|’ve|'d|’d|'ll|’ll)\b"
    r"|(?:^|[.?!]\s+|(?i:\b(?:can|could|should|shall|may|might|must|do|did|does|am|will|would"
    r"|if|when|and|but|so|because|that)\s+))I\s+[a-z]"
)

#: Risks that never go to a yes/no gate on a context alone.
URGENT = frozenset({RiskCategory.SELF_HARM, RiskCategory.EMERGENCY})


class Route(StrEnum):
    RESEARCH = "hrs"
    """A closed research question: the HRS gate."""
    PATIENT = "careguard"
    """Anything else: CareGuard, which triages first."""


class RouteChoice(Record):
    """Which gate a case went to, and why: the route stage's report in a verdict's trace."""

    stage: Literal["route"] = "route"
    route: Route
    why: str


def choose_route(case: Case) -> RouteChoice:
    """The route for ``case``, from its explicit fields and fixed rules only."""
    if case.labels is not None:
        return RouteChoice(
            route=Route.RESEARCH, why=f"closed question: labels given ({case.labels.value})"
        )
    if not case.context.strip():
        return RouteChoice(
            route=Route.PATIENT, why="open question without labels or context: triaged first"
        )
    for text, where in ((case.question, "question"), (case.context, "context")):
        if PERSONAL_VOICE.search(text):
            return RouteChoice(
                route=Route.PATIENT,
                why=f"the {where} is written in the first or second person: triaged first",
            )
        urgent = sorted(e.category.value for e in match_rules(text) if e.category in URGENT)
        if urgent:
            return RouteChoice(
                route=Route.PATIENT,
                why=f"the {where} names an urgent risk ({', '.join(urgent)}): triaged first",
            )
    return RouteChoice(route=Route.RESEARCH, why="research question with a context to answer from")

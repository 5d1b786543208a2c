"""The verdict that goes out: a status, what the user sees, why, and the trace behind it.

Every stage reports in its own typed record, tagged by its ``stage`` field: the route
(:class:`~medgate.routing.RouteChoice`), HRS (:class:`~medgate.hrs.decision.HRSReport`),
CareGuard (:class:`~medgate.careguard.records.CareGuardReport`, whose rounds carry the claims
layer's checks) and the full pipeline's HRS check
(:class:`~medgate.gates.records.HRSCheck`). :data:`StageReport` is their discriminated
union, so a verdict read back from JSON (the case log, the store, an evaluation run) gives back
the same typed reports its gate wrote. A stage from outside medgate reports as an
:class:`ExtensionReport`.

This module sits above the stages' records and below the gates: the gates import it, it imports
only their records.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import Discriminator, Field, JsonValue, Tag, model_validator

from medgate.careguard.records import CareGuardReport
from medgate.gates.records import HRSCheck
from medgate.hrs.decision import HRSReport
from medgate.records import Case, HeldBackAnswer, Record, SignalValue, Status, Timing, Usage
from medgate.routing import RouteChoice


class ExtensionReport(Record):
    """The report of a stage medgate does not know (a plugin's), kept as JSON."""

    stage: str = Field(description="The stage's name; never one of medgate's own.")
    data: dict[str, JsonValue] = Field(default_factory=dict)


#: medgate's own stages, by the ``stage`` tag of their reports.
BUILT_IN_STAGES: dict[str, type[Record]] = {
    "route": RouteChoice,
    "hrs": HRSReport,
    "careguard": CareGuardReport,
    "hrs_check": HRSCheck,
}
_EXTENSION = "extension"


def _stage_tag(value: Any) -> str:
    stage = value.get("stage") if isinstance(value, dict) else getattr(value, "stage", None)
    return stage if isinstance(stage, str) and stage in BUILT_IN_STAGES else _EXTENSION


StageReport = Annotated[
    Annotated[RouteChoice, Tag("route")]
    | Annotated[HRSReport, Tag("hrs")]
    | Annotated[CareGuardReport, Tag("careguard")]
    | Annotated[HRSCheck, Tag("hrs_check")]
    | Annotated[ExtensionReport, Tag(_EXTENSION)],
    Discriminator(_stage_tag),
]
"""One stage's report, read by its ``stage`` tag."""

R = TypeVar("R", bound=Record)


class Trace(Record):
    """Everything behind a verdict, stage by stage."""

    stages: dict[str, StageReport] = Field(
        default_factory=dict,
        description="Each stage's typed report, keyed by its stage name, in the order they ran.",
    )
    timings: list[Timing] = Field(default_factory=list)
    usage: list[Usage] = Field(default_factory=list)
    errors: list[str] = Field(
        default_factory=list, description="Failures that made the gate fail closed."
    )

    @model_validator(mode="before")
    @classmethod
    def _tag_untagged(cls, data: Any) -> Any:
        # Verdicts stored before reports carried their tag name the stage only by its key.
        if isinstance(data, dict) and isinstance(data.get("stages"), dict):
            stages = {
                key: {"stage": key, **value}
                if isinstance(value, dict) and "stage" not in value
                else value
                for key, value in data["stages"].items()
            }
            data = {**data, "stages": stages}
        return data

    @model_validator(mode="after")
    def _keys_name_stages(self) -> Trace:
        for key, report in self.stages.items():
            if key != report.stage:
                raise ValueError(f"the report under {key!r} is the {report.stage!r} stage's")
        return self

    def report(self, kind: type[R]) -> R | None:
        """The report of type ``kind``, if that stage ran: ``trace.report(HRSReport)``."""
        for report in self.stages.values():
            if isinstance(report, kind):
                return report
        return None

    def with_report(self, report: StageReport) -> Trace:
        """A copy with ``report`` first, as the stage that ran before the others."""
        return self.model_copy(update={"stages": {report.stage: report, **self.stages}})


class Verdict(Record):
    """medgate's decision for one case."""

    status: Status
    answer: str | None = Field(
        default=None, description="What the user sees: the answer, a refusal or guidance."
    )
    reason: str = Field(description="Why this status, in one sentence a clinician can read.")
    case: Case
    signals: dict[str, SignalValue] = Field(
        default_factory=dict,
        description="Risk signals of the answer shown (or of the last one tried when held back).",
    )
    held_back: HeldBackAnswer | None = Field(
        default=None,
        description="The model's answer when the gate did not release it; for clinicians only.",
    )
    trace: Trace = Field(default_factory=Trace)


def held_for_a_clinician(case: Case, failure: str) -> Verdict:
    """The verdict of a case whose check broke: escalated, nothing released, the failure kept.
    For gates that combine others and do not rely on them failing closed themselves."""
    return Verdict(
        status=Status.ESCALATED,
        reason="the safety check did not complete, so the case is held for a clinician",
        case=case,
        trace=Trace(errors=[failure]),
    )

"""Typed records shared by every stage: the case that comes in, and the parts of a verdict that
every stage speaks in (status, usage, timings, signals).

These are the bottom layer: stage-specific records (HRS trajectories, claim checks, CareGuard
rounds) build on them in their own rooms, and :mod:`medgate.verdict` puts the stages' reports
together into the verdict that goes out.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator, model_validator

#: Inputs larger than this are refused at the edge rather than truncated silently.
MAX_QUESTION_CHARS = 4_000
MAX_CONTEXT_CHARS = 40_000


class Record(BaseModel):
    """Base for medgate records: unknown fields are an error, not silently dropped."""

    model_config = ConfigDict(extra="forbid")


class LabelSet(StrEnum):
    """The closed answer sets the HRS gate supports."""

    YES_NO_MAYBE = "yes,no,maybe"
    YES_NO = "yes,no"

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(self.value.split(","))

    @classmethod
    def parse(cls, text: str) -> LabelSet:
        """Parse ``"yes,no"`` style text, order and case insensitive."""
        wanted = {part.strip().lower() for part in text.split(",") if part.strip()}
        for member in cls:
            if set(member.labels) == wanted:
                return member
        known = " or ".join(repr(m.value) for m in cls)
        raise ValueError(f"unknown label set {text!r}: use {known}")


class Case(Record):
    """One question put to medgate."""

    question: str = Field(description="The question as the user asked it; never rewritten.")
    context: str = Field(default="", description="Optional supporting text (e.g. an abstract).")
    labels: LabelSet | None = Field(
        default=None,
        description="The closed answers allowed, when the caller gives them: the case is then a "
        "closed research question. None for an open question (e.g. a patient's).",
    )
    patient: dict[str, str] = Field(
        default_factory=dict, description="Known patient context (age, pregnancy, ...)."
    )
    case_id: str | None = Field(default=None, description="Caller's identifier, echoed back.")

    @field_validator("question")
    @classmethod
    def _question_present(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("the question is empty")
        if len(value) > MAX_QUESTION_CHARS:
            raise ValueError(f"the question is longer than {MAX_QUESTION_CHARS} characters")
        return value

    @field_validator("context")
    @classmethod
    def _context_bounded(cls, value: str) -> str:
        if len(value) > MAX_CONTEXT_CHARS:
            raise ValueError(f"the context is longer than {MAX_CONTEXT_CHARS} characters")
        return value

    @property
    def answer_labels(self) -> LabelSet:
        """The labels a closed-answer gate answers over: those given, else yes/no/maybe."""
        return self.labels or LabelSet.YES_NO_MAYBE


class Status(StrEnum):
    """What medgate decided to do with an answer."""

    RELEASED = "released"
    """The first answer passed the gate and is shown as it is."""
    REFINED = "refined"
    """An answer produced after refinement passed the gate and is shown."""
    NEEDS_CONTEXT = "needs_context"
    """Patient context is missing; screening questions are returned instead of an answer."""
    ESCALATED = "escalated"
    """Held back for a clinician."""
    BLOCKED = "blocked"
    """Refused with a safe message."""

    @property
    def answers_user(self) -> bool:
        """True when the model's answer is shown to the user."""
        return self in (Status.RELEASED, Status.REFINED)


class Usage(Record):
    """Token counts and cost of one model call."""

    role: str = Field(description="Which role made the call (answerer, orchestrator, ...).")
    model: str = Field(description="Model identifier as configured.")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = Field(default=0.0, description="From the backend's price table; 0 if local.")
    seconds: float = Field(default=0.0, description="Wall time of the call.")


class Timing(Record):
    """Wall time of one pipeline stage."""

    stage: str
    seconds: float


class SignalValue(Record):
    """One hallucination risk signal's value for one answer."""

    name: str
    value: float | None = Field(
        allow_inf_nan=False,
        description="In [0, 1]; None when the signal was not computed (never NaN).",
    )
    layer: Literal["decision", "guidance"]
    note: str = Field(default="", description="Why it was not computed, when it was not.")

    @model_validator(mode="before")
    @classmethod
    def _drop_derived(cls, data: Any) -> Any:
        # ``status`` is derived from ``value``; accept it back when a dump is re-read.
        if isinstance(data, dict) and "status" in data:
            data = {k: v for k, v in data.items() if k != "status"}
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def status(self) -> Literal["computed", "not computed"]:
        return "computed" if self.value is not None else "not computed"


class HeldBackAnswer(Record):
    """The model's answer a gate did not release, kept for the clinician who reviews the case.

    It is never shown to the person who asked (see :mod:`medgate.redaction`); a clinician may
    approve it, and then ``answer`` is exactly the text released.
    """

    answer: str = Field(description="The text approving it would release.")
    reasoning: str = Field(
        default="", description="What the model wrote before its answer, for the reviewer."
    )
    source: str = Field(description="Which stage and round produced it, e.g. 'hrs round 0'.")

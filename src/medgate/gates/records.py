"""What the combining gates add to a verdict's trace."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field

from medgate.records import Record


class Confidence(StrEnum):
    """What came of the HRS check of a patient's yes/no question."""

    CONFIDENT = "confident"
    """HRS would release its own yes/no answer: CareGuard's decision stands."""
    UNSURE = "unsure"
    """HRS would not release it: an answer CareGuard would show is held for a clinician."""
    NOT_ASKED = "not_asked"
    """Not a yes/no question, or CareGuard wrote no answer: HRS did not run."""


class HRSCheck(Record):
    """The full pipeline's HRS check of a patient question (the ``hrs_check`` stage of a
    verdict's trace); the HRS run itself is the trace's ``hrs`` report."""

    stage: Literal["hrs_check"] = "hrs_check"
    confidence: Confidence
    why: str = Field(description="Why HRS was or was not asked, and what it changed.")

"""The answering model's own yes/no stance on a patient's question, read with the HRS probe.

For a question asking whether to do something ("Can I ...", "Is it safe to ..."), the white-box
model is asked the question as it stands through the HRS answerer (:func:`medgate.hrs.probe.probe`:
brief reasoning, then the label distribution over yes/no/maybe at the answer slot, the same
reading the ``full`` profile's HRS check makes). The distribution and its normalised entropy
(:func:`medgate.hrs.measures.normalised_entropy`) say what the model believes and how firmly.

The stance is one vote, never enough alone to release a "yes" (see
:mod:`medgate.careguard.yes_release`): a 0.5B model says "yes" with probability 0.9 to some
plainly dangerous practices. A firm "no" is used to answer a dangerous practice with fixed
guidance (a wrong "no" costs an over-cautious answer that points to a pharmacist; a wrong
"yes" could hurt someone).
"""

from __future__ import annotations

import time
from enum import StrEnum

from pydantic import Field

from medgate.backends.base import WhiteBoxModel
from medgate.config import HRSConfig
from medgate.hrs.measures import normalised_entropy
from medgate.hrs.probe import probe
from medgate.hrs.signals import Need
from medgate.records import Case, LabelSet, Record

#: The labels the stance is read over: "maybe" takes the mass of a model that will not commit.
STANCE_LABELS = LabelSet.YES_NO_MAYBE


class Lean(StrEnum):
    CONFIDENT_YES = "confident_yes"
    CONFIDENT_NO = "confident_no"
    UNSURE = "unsure"
    NOT_READ = "not_read"
    """No white-box model, or the read failed: counts as unsure everywhere."""


class Stance(Record):
    """What the model answers to the question, and how firmly."""

    lean: Lean
    distribution: dict[str, float] = Field(default_factory=dict)
    entropy: float | None = Field(default=None, description="Normalised entropy, 0-1.")
    label_mass: float | None = None
    reasoning: str = ""
    thresholds: dict[str, float] = Field(
        default_factory=dict, description="The thresholds the lean was read with."
    )
    model: str | None = None
    error: str | None = None
    seconds: float = 0.0

    @property
    def p_yes(self) -> float:
        return self.distribution.get("yes", 0.0)

    @property
    def p_no(self) -> float:
        return self.distribution.get("no", 0.0)


def lean_of(
    distribution: dict[str, float],
    entropy: float,
    label_mass: float | None,
    *,
    min_yes: float,
    min_no: float,
    max_entropy: float,
    min_label_mass: float,
) -> Lean:
    """Confident only when one label has at least its minimum, the entropy is at most
    ``max_entropy`` and the labels held at least ``min_label_mass`` before renormalising."""
    if entropy > max_entropy or (label_mass is not None and label_mass < min_label_mass):
        return Lean.UNSURE
    if distribution.get("yes", 0.0) >= min_yes:
        return Lean.CONFIDENT_YES
    if distribution.get("no", 0.0) >= min_no:
        return Lean.CONFIDENT_NO
    return Lean.UNSURE


class StanceReader:
    """Reads the stance of ``model`` (None: no white-box model, every stance is not read)."""

    def __init__(
        self,
        model: WhiteBoxModel | None,
        hrs: HRSConfig,
        *,
        min_yes: float,
        min_no: float,
        max_entropy: float,
    ) -> None:
        self.model = model
        self.hrs = hrs
        self.min_yes = min_yes
        self.min_no = min_no
        self.max_entropy = max_entropy
        # The same question resumed with screening answers is read once.
        self._read: dict[str, Stance] = {}

    @property
    def thresholds(self) -> dict[str, float]:
        return {
            "min_yes": self.min_yes,
            "min_no": self.min_no,
            "max_entropy": self.max_entropy,
            "min_label_mass": self.hrs.min_label_mass,
        }

    def read(self, question: str) -> Stance:
        if self.model is None:
            return Stance(lean=Lean.NOT_READ, error="no white-box model to read a stance from")
        if question not in self._read:
            self._read[question] = self._probe(self.model, question)
        return self._read[question]

    def _probe(self, model: WhiteBoxModel, question: str) -> Stance:
        t0 = time.perf_counter()
        try:
            run, _ = probe(
                model,
                Case(question=question, labels=STANCE_LABELS),
                [],
                self.hrs,
                frozenset({Need.ANSWER_DISTRIBUTION, Need.REASONING}),
            )
            entropy = normalised_entropy(run.distribution)
        except Exception as exc:  # fail closed: a stance not read is never confident
            return Stance(
                lean=Lean.NOT_READ,
                model=model.name,
                error=f"{type(exc).__name__}: {exc}",
                thresholds=self.thresholds,
                seconds=time.perf_counter() - t0,
            )
        lean = lean_of(
            run.distribution,
            entropy,
            run.label_mass,
            min_yes=self.min_yes,
            min_no=self.min_no,
            max_entropy=self.max_entropy,
            min_label_mass=self.hrs.min_label_mass,
        )
        return Stance(
            lean=lean,
            distribution=run.distribution,
            entropy=entropy,
            label_mass=run.label_mass,
            reasoning=run.reasoning,
            thresholds=self.thresholds,
            model=model.name,
            seconds=time.perf_counter() - t0,
        )

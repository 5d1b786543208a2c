"""The decision layer as a pure function of a recorded trajectory.

Thresholds only decide where an item's trajectory stops. Keeping the decision a pure function of
the recorded iterations lets the live gate stop early and lets an evaluation replay every
threshold setting from one recording, without new model calls.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field

from medgate.config import HRSConfig, RevertRule, SuccessRule
from medgate.hrs.knowledge import Fact
from medgate.hrs.orchestrator import OrchestratorStep
from medgate.hrs.signals import ModelRun, SignalValue
from medgate.records import Record, Status, Timing


class Iteration(Record):
    """One answer of the answerer: the baseline (index 0) or a round after knowledge injection."""

    index: int
    knowledge: list[Fact] = Field(
        default_factory=list, description="All facts in the prompt at this round (cumulative)."
    )
    run: ModelRun
    signals: dict[str, SignalValue]
    step: OrchestratorStep | None = Field(
        default=None, description="The orchestrator decision that led to this round."
    )
    timings: list[Timing] = Field(default_factory=list)

    @property
    def answer(self) -> str:
        return self.run.answer

    def value(self, name: str) -> float | None:
        s = self.signals.get(name)
        return None if s is None else s.value


class StopReason(StrEnum):
    ABSTAIN = "abstain"
    """The orchestrator gave up."""
    STALLED = "stalled"
    """The orchestrator had no knowledge to add that was not already in the prompt."""
    ERROR = "error"
    """A model call or check failed; the trajectory is incomplete."""


class Trajectory(Record):
    """Every round run for a case, and why recording stopped (if before K)."""

    iterations: list[Iteration] = Field(default_factory=list)
    stopped: StopReason | None = None
    stop_detail: str = ""
    final_step: OrchestratorStep | None = Field(
        default=None, description="The ABSTAIN step, when the orchestrator gave up."
    )


class Outcome(StrEnum):
    GATE = "gate"
    SUCCESS = "success"
    LABEL_FLIP = "label_flip"
    ABSTAIN = "abstain"
    STALLED = "stalled"
    EXHAUSTED = "exhausted"
    ERROR = "error"


class Decision(Record):
    status: Status
    outcome: Outcome
    iteration: int | None = Field(description="The round whose answer is shown, if any.")
    answer: str | None
    reason: str


def _risk(it: Iteration, name: str) -> float:
    # A decision-layer signal that could not be computed counts as maximal risk.
    v = it.value(name)
    return 1.0 if v is None else v


def passes_gate(it: Iteration, cfg: HRSConfig) -> bool:
    """The baseline gate (Eq. 7): both decision signals under the gate thresholds."""
    return _risk(it, "entropy") < cfg.gate_e and _risk(it, "perplexity") < cfg.gate_p


def succeeds(it: Iteration, cfg: HRSConfig) -> bool:
    """The success rule applied after each refinement round."""
    e, p = _risk(it, "entropy"), _risk(it, "perplexity")
    if cfg.rule is SuccessRule.ALGORITHM1:
        return e < cfg.tau_e and p < cfg.tau_p
    return not (e >= cfg.tau_e and p >= cfg.tau_p)


def _escalate(outcome: Outcome, reason: str, iteration: int | None = None) -> Decision:
    return Decision(
        status=Status.ESCALATED, outcome=outcome, iteration=iteration, answer=None, reason=reason
    )


def decide(traj: Trajectory, cfg: HRSConfig) -> Decision | None:
    """The decision for ``traj`` under ``cfg``, or ``None`` if another round is needed."""
    if not traj.iterations:
        if traj.stopped is StopReason.ERROR:
            return _escalate(
                Outcome.ERROR,
                f"the gate failed before any answer and escalates: {traj.stop_detail}",
            )
        return None
    base = traj.iterations[0]
    if passes_gate(base, cfg):
        return Decision(
            status=Status.RELEASED,
            outcome=Outcome.GATE,
            iteration=0,
            answer=base.answer,
            reason="the first answer is confident (entropy and perplexity under the gate)",
        )
    for it in traj.iterations[1 : cfg.max_iterations + 1]:
        if not succeeds(it, cfg):
            continue
        if it.answer != base.answer and cfg.revert is RevertRule.ESCALATE:
            return _escalate(
                Outcome.LABEL_FLIP,
                f"refinement changed the answer from {base.answer!r} to {it.answer!r} "
                f"at round {it.index}; a clinician must decide",
                it.index,
            )
        return Decision(
            status=Status.REFINED,
            outcome=Outcome.SUCCESS,
            iteration=it.index,
            answer=it.answer,
            reason=f"confident after {it.index} round(s) of knowledge injection",
        )
    if len(traj.iterations) - 1 >= cfg.max_iterations:
        return _escalate(
            Outcome.EXHAUSTED,
            f"still uncertain after {cfg.max_iterations} round(s); a clinician must decide",
        )
    rationale = traj.final_step.rationale if traj.final_step else ""
    endings = {
        StopReason.ABSTAIN: (
            Outcome.ABSTAIN,
            "the orchestrator judged the question not safely answerable"
            + (f": {rationale}" if rationale else ""),
        ),
        StopReason.STALLED: (
            Outcome.STALLED,
            "still uncertain and the orchestrator had no new knowledge to add",
        ),
        StopReason.ERROR: (Outcome.ERROR, f"the gate failed and escalates: {traj.stop_detail}"),
    }
    if traj.stopped is not None:
        return _escalate(*endings[traj.stopped])
    return None


class HRSReport(Record):
    """The HRS stage's evidence in a verdict's trace: the decision and every round behind it."""

    stage: Literal["hrs"] = "hrs"
    decision: Decision
    trajectory: Trajectory
    orchestrator: str = Field(description="Which orchestrator injected knowledge.")
    answerer: str = Field(description="The answering model, as configured.")
    settings: HRSConfig | None = Field(
        default=None,
        description="The settings the gate decided with, thresholds after any calibration "
        "(None in records written before they were kept).",
    )

"""The decision layer as a pure function of a recorded trajectory.

Thresholds only decide where an item's trajectory stops. Keeping the decision a pure function of
the recorded iterations lets the live gate stop early and lets an evaluation replay every
threshold setting from one recording, without new model calls.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, Protocol

from pydantic import Field

from medgate.config import HRSConfig, RevertRule, SettingOrigin, SuccessRule
from medgate.hrs.evidence import EvidenceCues
from medgate.hrs.fitting import ContextFit
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
    context_fit: ContextFit | None = Field(
        default=None,
        description="How the context was cut to fit the window; None when it was used whole.",
    )

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
    INJECTION = "injection"
    """The input holds text addressed to the model; nothing was run."""


class Trajectory(Record):
    """Every round run for a case, and why recording stopped (if before K)."""

    iterations: list[Iteration] = Field(default_factory=list)
    stopped: StopReason | None = None
    stop_detail: str = ""
    final_step: OrchestratorStep | None = Field(
        default=None, description="The ABSTAIN step, when the orchestrator gave up."
    )
    evidence: EvidenceCues | None = Field(
        default=None,
        description="Negation cues in the case's evidence (medgate.hrs.evidence); None when the "
        "case has none or the trajectory was recorded before they were read.",
    )


class Outcome(StrEnum):
    GATE = "gate"
    SUCCESS = "success"
    UNRELIABLE = "unreliable"
    """The first answer cannot be released whatever its signals say (see :func:`unreleasable`)."""
    LABEL_FLIP = "label_flip"
    INJECTION = "injection"
    """The question or context holds text addressed to the model (:mod:`medgate.injection`)."""
    ABSTAIN = "abstain"
    STALLED = "stalled"
    EXHAUSTED = "exhausted"
    ERROR = "error"
    RISK = "risk"
    """The risk rule decided: the risk of a wrong first answer against ``risk_threshold``."""


#: The settings of :class:`HRSConfig` a decision compares against.
THRESHOLDS = ("gate_e", "gate_p", "tau_e", "tau_p", "min_label_mass", "risk_threshold")


class RiskScorer(Protocol):
    """A fitted risk model as the risk rule reads it (:class:`medgate.hrs.risk.LoadedRiskModel`)."""

    @property
    def id(self) -> str:
        """The artifact's id, for the verdict."""
        ...

    @property
    def sha256(self) -> str | None:
        """The artifact file's sha256, for the verdict."""
        ...

    @property
    def rounds(self) -> int:
        """Knowledge rounds its features read (0: the first answer only)."""
        ...

    def score(self, traj: Trajectory) -> tuple[float | None, list[str]]:
        """P(the first answer is wrong), or None and the features it could not compute."""
        ...


#: The paper's decision signals, always read; any other signal on the decision layer is read too.
DECISION_SIGNALS = ("entropy", "perplexity")

#: The settings that hold the paper's decision signals' thresholds: (gate, success).
PAPER_THRESHOLDS = {"entropy": ("gate_e", "tau_e"), "perplexity": ("gate_p", "tau_p")}

GATE = 0
SUCCESS = 1


def decision_signals(it: Iteration) -> list[str]:
    """The signals the decision reads for ``it``: the paper's two, then every other signal the
    round computed on the decision layer, by name."""
    names = [*DECISION_SIGNALS, *(n for n, s in it.signals.items() if s.layer == "decision")]
    return list(dict.fromkeys(names))


def threshold(cfg: HRSConfig, name: str, which: int) -> tuple[float, str] | None:
    """The ``GATE`` or ``SUCCESS`` threshold of the decision signal ``name`` and the setting
    that holds it; None when none is configured."""
    if name in PAPER_THRESHOLDS:
        setting = PAPER_THRESHOLDS[name][which]
        value: float = getattr(cfg, setting)
        return value, setting
    declared = cfg.thresholds.get(name)
    if declared is None:
        return None
    kind = "gate" if which == GATE else "success"
    return getattr(declared, kind), f"thresholds.{name}.{kind}"


def _settings(it: Iteration, cfg: HRSConfig, *which: int) -> list[str]:
    """The threshold settings a decision on ``it`` compared against, in reading order."""
    found = [threshold(cfg, n, w) for w in which for n in decision_signals(it)]
    return ["min_label_mass", *(t[1] for t in found if t is not None)]


class Decision(Record):
    status: Status
    outcome: Outcome
    iteration: int | None = Field(description="The round whose answer is shown, if any.")
    answer: str | None
    reason: str
    decided_by: list[str] = Field(
        default_factory=list,
        description="The thresholds (HRSConfig settings) this decision compared against.",
    )
    rule: str | None = Field(default=None, description="The hrs.rule in force.")
    risk: float | None = Field(
        default=None, description="rule 'risk': P(the first answer is wrong), when computed."
    )
    risk_model: str | None = Field(
        default=None, description="rule 'risk': the risk model artifact that scored it."
    )
    risk_model_sha256: str | None = Field(
        default=None, description="rule 'risk': sha256 of that artifact's file."
    )


def _risk(it: Iteration, name: str) -> float:
    # Only reached for computed signals (see unreleasable); missing counts as maximal risk.
    v = it.value(name)
    return 1.0 if v is None else v


def unreleasable(it: Iteration, cfg: HRSConfig) -> tuple[str, list[str]] | None:
    """Why ``it``'s answer may not be released whatever the thresholds say, and the thresholds
    behind that; None when nothing stands in the way.

    A decision signal that was not computed is no evidence of low risk, and under Eq. 6 a
    missing value would otherwise let the other signal alone release the answer. An answer slot
    where the allowed labels got almost no probability means the model was writing something
    else; renormalising would dress that up as a confident label.
    """
    names = decision_signals(it)
    missing = [n for n in names if it.value(n) is None]
    if missing:
        notes = "; ".join(
            f"{n}: {it.signals[n].note}" if n in it.signals and it.signals[n].note else n
            for n in missing
        )
        return f"a decision signal was not computed ({notes})", []
    unbounded = [n for n in names if threshold(cfg, n, GATE) is None]
    if unbounded:
        listed = ", ".join(unbounded)
        return f"no thresholds are set for the decision signal(s) {listed} (hrs.thresholds)", []
    mass = it.run.label_mass
    if mass is not None and mass < cfg.min_label_mass:
        why = (
            f"the model put only {mass:.3g} of its probability on the allowed labels "
            f"(min_label_mass {cfg.min_label_mass:g}), so its answer is none of them"
        )
        return why, ["min_label_mass"]
    return None


def _named(it: Iteration) -> str:
    names = decision_signals(it)
    return " and ".join(names) if len(names) <= 2 else ", ".join(names[:-1]) + " and " + names[-1]


def _below(it: Iteration, cfg: HRSConfig, which: int) -> list[bool]:
    """For each decision signal, whether it is under its threshold (a signal without one is
    never under it)."""
    out = []
    for name in decision_signals(it):
        found = threshold(cfg, name, which)
        out.append(found is not None and _risk(it, name) < found[0])
    return out


def passes_gate(it: Iteration, cfg: HRSConfig) -> bool:
    """The baseline gate (Eq. 7): every decision signal under its gate threshold."""
    return all(_below(it, cfg, GATE))


def succeeds(it: Iteration, cfg: HRSConfig) -> bool:
    """The success rule applied after each refinement round: every decision signal under its
    success threshold (Algorithm 1), or, under Eq. 6, not every one at or above it."""
    below = _below(it, cfg, SUCCESS)
    if cfg.rule is SuccessRule.EQ6:
        return any(below)
    return all(below)


def _escalate(
    outcome: Outcome,
    reason: str,
    iteration: int | None = None,
    decided_by: list[str] | None = None,
) -> Decision:
    return Decision(
        status=Status.ESCALATED,
        outcome=outcome,
        iteration=iteration,
        answer=None,
        reason=reason,
        decided_by=decided_by or [],
    )


def decide(traj: Trajectory, cfg: HRSConfig, risk: RiskScorer | None = None) -> Decision | None:
    """The decision for ``traj`` under ``cfg``, or ``None`` if another round is needed.

    ``risk`` is the risk model the rule ``risk`` reads; the paper's rules ignore it.
    """
    decision = _decide(traj, cfg, risk)
    if decision is None:
        return None
    return decision.model_copy(update={"rule": cfg.rule.value})


def _decide(traj: Trajectory, cfg: HRSConfig, risk: RiskScorer | None) -> Decision | None:
    if not traj.iterations:
        if traj.stopped is StopReason.ERROR:
            return _escalate(
                Outcome.ERROR,
                f"the gate failed before any answer and escalates: {traj.stop_detail}",
            )
        if traj.stopped is StopReason.INJECTION:
            return _escalate(
                Outcome.INJECTION,
                f"the input holds text addressed to the model, so no model read it: "
                f"{traj.stop_detail}; a clinician must decide",
            )
        return None
    base = traj.iterations[0]
    blocked = unreleasable(base, cfg)
    if blocked is not None:
        why, thresholds = blocked
        return _escalate(Outcome.UNRELIABLE, f"the answer cannot be released: {why}", 0, thresholds)
    if cfg.rule is SuccessRule.RISK:
        return decide_by_risk(traj, cfg, risk)
    if passes_gate(base, cfg):
        return Decision(
            status=Status.RELEASED,
            outcome=Outcome.GATE,
            iteration=0,
            answer=base.answer,
            reason=f"the first answer is confident ({_named(base)} under the gate)",
            decided_by=_settings(base, cfg, GATE),
        )
    for it in traj.iterations[1 : cfg.max_iterations + 1]:
        if not succeeds(it, cfg) or unreleasable(it, cfg) is not None:
            continue
        if it.answer != base.answer and cfg.revert is RevertRule.ESCALATE:
            return _escalate(
                Outcome.LABEL_FLIP,
                f"refinement changed the answer from {base.answer!r} to {it.answer!r} "
                f"at round {it.index}; a clinician must decide",
                it.index,
                _settings(base, cfg, GATE, SUCCESS),
            )
        return Decision(
            status=Status.REFINED,
            outcome=Outcome.SUCCESS,
            iteration=it.index,
            answer=it.answer,
            reason=f"confident after {it.index} round(s) of knowledge injection",
            decided_by=_settings(base, cfg, GATE, SUCCESS),
        )
    last = unreleasable(traj.iterations[-1], cfg) if len(traj.iterations) > 1 else None
    tail = f"; the last round's answer could not be released either: {last[0]}" if last else ""
    if len(traj.iterations) - 1 >= cfg.max_iterations:
        return _escalate(
            Outcome.EXHAUSTED,
            f"still uncertain after {cfg.max_iterations} round(s); a clinician must decide" + tail,
            decided_by=_settings(base, cfg, GATE, SUCCESS),
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
        StopReason.INJECTION: (Outcome.INJECTION, f"injected text: {traj.stop_detail}"),
    }
    if traj.stopped is not None:
        outcome, reason = endings[traj.stopped]
        used = [] if traj.stopped is StopReason.ERROR else _settings(base, cfg, GATE, SUCCESS)
        return _escalate(outcome, reason + tail, decided_by=used)
    return None


def decide_by_risk(traj: Trajectory, cfg: HRSConfig, risk: RiskScorer | None) -> Decision | None:
    """The risk rule: release the first answer iff its risk is at most ``risk_threshold``.

    A model that reads knowledge rounds waits for them (``None``) until it has as many as it was
    fitted on or the knowledge source ran dry; a failed round, no risk model, or a feature the
    model cannot read escalates.
    """
    base = traj.iterations[0]
    if risk is None:
        return _escalate(
            Outcome.UNRELIABLE,
            "hrs.rule is 'risk' but no risk model is loaded for this answerer "
            "(fit one with `medgate eval risk`, or set hrs.risk_model)",
            0,
        )
    wanted = min(risk.rounds, cfg.max_iterations)
    if len(traj.iterations) - 1 < wanted:
        if traj.stopped is StopReason.ERROR:
            return _escalate(
                Outcome.ERROR,
                f"the gate failed before the risk model had its rounds: {traj.stop_detail}",
            )
        if traj.stopped is None:
            return None
    value, missing = risk.score(traj)
    used = ["min_label_mass", "risk_threshold"]
    if value is None:
        why = f"the risk model {risk.id} could not read {', '.join(missing)}"
        if traj.evidence is None and any("evidence" in name for name in missing):
            why += (
                " (it reads the case's evidence, and this case came with none: give the "
                "abstract or passages the question is about, e.g. with --context-file)"
            )
        decision = _escalate(Outcome.UNRELIABLE, f"{why}, so the answer's risk is unknown", 0, used)
        return decision.model_copy(update={"risk_model": risk.id, "risk_model_sha256": risk.sha256})
    shown = f"risk of a wrong answer {value:.3f}"
    if value <= cfg.risk_threshold:
        return Decision(
            status=Status.RELEASED,
            outcome=Outcome.RISK,
            iteration=0,
            answer=base.answer,
            reason=f"{shown} is at most the threshold {cfg.risk_threshold:.3f} ({risk.id})",
            decided_by=used,
            risk=value,
            risk_model=risk.id,
            risk_model_sha256=risk.sha256,
        )
    decision = _escalate(
        Outcome.RISK,
        f"{shown} is above the threshold {cfg.risk_threshold:.3f} ({risk.id}); "
        "a clinician must decide",
        0,
        used,
    )
    return decision.model_copy(
        update={"risk": value, "risk_model": risk.id, "risk_model_sha256": risk.sha256}
    )


class Threshold(Record):
    """One threshold setting as the gate used it."""

    value: float
    origin: SettingOrigin


class HRSReport(Record):
    """The HRS stage's evidence in a verdict's trace: the decision and every round behind it."""

    stage: Literal["hrs"] = "hrs"
    decision: Decision
    trajectory: Trajectory
    orchestrator: str = Field(description="Which orchestrator injected knowledge.")
    answerer: str = Field(description="The answering model, as configured.")
    thresholds: dict[str, Threshold] = Field(
        default_factory=dict,
        description="Every threshold setting, its value and where it came from; "
        "decision.decided_by names those the decision compared against.",
    )

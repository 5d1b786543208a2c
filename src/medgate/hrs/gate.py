"""The HRS gate: answer, score, and release, refine or escalate."""

from __future__ import annotations

import time
from collections.abc import Mapping

from medgate.backends.base import WhiteBoxModel
from medgate.config import HRSConfig, SettingOrigin, setting_origins
from medgate.errors import ConfigError
from medgate.events import (
    AnswerEvent,
    DecisionEvent,
    DraftAnswer,
    ErrorEvent,
    EventSink,
    Failure,
    GateDecision,
    SignalsEvent,
    discard,
)
from medgate.hrs.decision import (
    PAPER_THRESHOLDS,
    THRESHOLDS,
    Decision,
    HRSReport,
    Iteration,
    Outcome,
    RiskScorer,
    StopReason,
    Threshold,
    Trajectory,
    decide,
)
from medgate.hrs.evidence import read_evidence
from medgate.hrs.fitting import probe_within_window
from medgate.hrs.knowledge import Fact
from medgate.hrs.orchestrator import (
    Action,
    IterationView,
    Orchestrator,
    OrchestratorStep,
    normal_text,
)
from medgate.hrs.probe import needs_of
from medgate.hrs.rarity import RarityCentroid
from medgate.hrs.signals import Need, SignalContext, build_signals
from medgate.injection import describe, find_injections
from medgate.records import Case, HeldBackAnswer, SignalValue, Status, Timing, Usage
from medgate.verdict import Trace, Verdict

STAGE = "hrs"


class HRSGate:
    """Implements :class:`medgate.events.Gate` with the Hallucination Risk Scoring design."""

    def __init__(
        self,
        answerer: WhiteBoxModel,
        orchestrator: Orchestrator,
        config: HRSConfig,
        centroid: RarityCentroid | None = None,
        origins: Mapping[str, SettingOrigin] | None = None,
        risk: RiskScorer | None = None,
        peer: WhiteBoxModel | None = None,
    ) -> None:
        self.answerer = answerer
        self.peer = peer
        self.orchestrator = orchestrator
        self.config = config
        self.risk = risk
        origins = origins if origins is not None else setting_origins(config)
        self.thresholds = {
            name: Threshold(value=getattr(config, name), origin=origins[name])
            for name in THRESHOLDS
        }
        for name, declared in config.thresholds.items():
            for kind in ("gate", "success"):
                self.thresholds[f"thresholds.{name}.{kind}"] = Threshold(
                    value=getattr(declared, kind), origin=origins["thresholds"]
                )
        self.signals = build_signals(config.signals)
        unbounded = [
            s.name
            for s in self.signals
            if s.layer == "decision"
            and s.name not in PAPER_THRESHOLDS.keys() | config.thresholds.keys()
        ]
        if unbounded:
            raise ConfigError(
                f"the decision signal(s) {', '.join(unbounded)} need thresholds: set "
                f"hrs.thresholds.{unbounded[0]} = {{gate = ..., success = ...}}"
            )
        self.ctx = SignalContext(
            l_max=config.l_max, centroid=centroid.centroid if centroid else None
        )
        if peer is None and config.peer_model:
            raise ConfigError("hrs.peer_model is set but the gate was given no second model")

    def _round(
        self,
        case: Case,
        index: int,
        knowledge: list[Fact],
        step: OrchestratorStep | None,
        reuse: Iteration | None,
    ) -> Iteration:
        needs = needs_of(self.signals)
        if self.peer is not None:
            # A configured second model is asked whether or not cross_model is a signal: the
            # risk model fitted with it reads its answer as a feature.
            needs = needs | {Need.PEER}
        if reuse is not None or self.ctx.centroid is None:
            # The question is never rewritten, so its embedding (rarity) is that of round 0;
            # and without a centroid rarity is not computed, so nothing would read it.
            needs = needs - {Need.EMBEDDING}
        run, timings, fit = probe_within_window(
            self.answerer, case, knowledge, self.config, needs, seed_offset=index, peer=self.peer
        )
        if reuse is not None:
            run.question_embedding = reuse.run.question_embedding
        signals = {s.name: s.compute(run, self.ctx) for s in self.signals}
        return Iteration(
            index=index,
            knowledge=knowledge,
            run=run,
            signals=signals,
            step=step,
            timings=timings,
            context_fit=fit,
        )

    def record(self, case: Case, *, full: bool = False, events: EventSink = discard) -> Trajectory:
        """Run rounds until the decision is made, or (``full``) until K rounds or ABSTAIN.

        Never raises: a failure ends the trajectory with :attr:`StopReason.ERROR`.
        """
        traj = Trajectory(evidence=read_evidence(case.context))
        findings = find_injections({"question": case.question, "context": case.context})
        if findings:
            traj.stopped, traj.stop_detail = StopReason.INJECTION, describe(findings)
            return traj
        try:
            base = self._round(case, 0, [], None, None)
            traj.iterations.append(base)
            self._emit_round(base, events)
            while len(traj.iterations) - 1 < self.config.max_iterations:
                if not full and decide(traj, self.config, self.risk) is not None:
                    break
                history = [
                    IterationView(
                        index=i.index,
                        answer=i.answer,
                        signals=i.signals,
                        facts=i.step.facts if i.step else [],
                    )
                    for i in traj.iterations
                ]
                step = self.orchestrator.step(case, history)
                if step.action is Action.ABSTAIN:
                    traj.stopped, traj.final_step = StopReason.ABSTAIN, step
                    break
                known = traj.iterations[-1].knowledge
                step = _withhold_injected(step)
                new = _new_facts(known, step.facts)
                if not new:
                    # Another round with the same prompt would only repeat the last answer.
                    traj.stopped, traj.final_step = StopReason.STALLED, step
                    break
                step = step.model_copy(update={"facts": new})
                knowledge = [*known, *new]
                it = self._round(case, len(traj.iterations), knowledge, step, base)
                traj.iterations.append(it)
                self._emit_round(it, events)
        except Exception as exc:  # a safety gate fails closed on any failure
            traj.stopped = StopReason.ERROR
            traj.stop_detail = f"{type(exc).__name__}: {exc}"
            events(ErrorEvent(stage=STAGE, data=Failure(error=traj.stop_detail)))
        return traj

    def _emit_round(self, it: Iteration, events: EventSink) -> None:
        answer = DraftAnswer(
            answer=it.answer,
            distribution=it.run.distribution,
            injected=list(it.step.facts) if it.step is not None else None,
        )
        events(AnswerEvent(stage=STAGE, iteration=it.index, data=answer))
        events(SignalsEvent(stage=STAGE, iteration=it.index, data=dict(it.signals)))

    def check(self, case: Case, events: EventSink = discard) -> Verdict:
        t0 = time.perf_counter()
        traj = self.record(case, events=events)
        decision = decide(traj, self.config, self.risk)
        if decision is None:  # cannot happen for a finished trajectory; fail closed regardless
            decision = Decision(
                status=Status.ESCALATED,
                outcome=Outcome.ERROR,
                iteration=None,
                answer=None,
                reason="the gate ended without a decision and escalates",
            )
        verdict = Verdict(
            status=decision.status,
            answer=decision.answer,
            reason=decision.reason,
            case=case,
            signals=_shown_signals(traj, decision),
            held_back=_held_back(traj, decision),
            trace=self._trace(traj, decision, time.perf_counter() - t0),
        )
        events(
            DecisionEvent(
                stage=STAGE,
                iteration=decision.iteration,
                data=GateDecision(
                    status=verdict.status,
                    answer=verdict.answer,
                    reason=verdict.reason,
                    outcome=decision.outcome.value,
                ),
            )
        )
        return verdict

    def _trace(self, traj: Trajectory, decision: Decision, seconds: float) -> Trace:
        timings: list[Timing] = []
        usage: list[Usage] = []
        for it in traj.iterations:
            timings.extend(
                Timing(stage=f"{STAGE}.round{it.index}.{t.stage}", seconds=t.seconds)
                for t in it.timings
            )
            if it.run.peer_answer is not None and self.peer is not None:
                usage.append(
                    Usage(
                        role="peer",
                        model=self.peer.name,
                        seconds=sum(t.seconds for t in it.timings if t.stage == "peer"),
                    )
                )
            usage.append(
                Usage(
                    role="answerer",
                    model=self.answerer.name,
                    prompt_tokens=it.run.prompt_tokens,
                    completion_tokens=it.run.generated_tokens,
                    seconds=sum(t.seconds for t in it.timings),
                )
            )
            if it.step is not None:
                timings.append(
                    Timing(stage=f"{STAGE}.round{it.index}.orchestrator", seconds=it.step.seconds)
                )
                if it.step.usage is not None:
                    usage.append(it.step.usage)
        if traj.final_step is not None and traj.final_step.usage is not None:
            usage.append(traj.final_step.usage)
        timings.append(Timing(stage=f"{STAGE}.total", seconds=seconds))
        report = HRSReport(
            decision=decision,
            trajectory=traj,
            orchestrator=self.orchestrator.name,
            answerer=self.answerer.name,
            thresholds=self.thresholds,
        )
        errors = [traj.stop_detail] if traj.stopped is StopReason.ERROR else []
        return Trace(
            stages={STAGE: report},
            timings=timings,
            usage=usage,
            errors=errors,
        )


def _withhold_injected(step: OrchestratorStep) -> OrchestratorStep:
    """The step without facts that address the model; they are kept on the step, not injected."""
    bad = [f for f in step.facts if find_injections({"fact": f.text})]
    if not bad:
        return step
    return step.model_copy(
        update={"facts": [f for f in step.facts if f not in bad], "withheld": bad}
    )


def _new_facts(known: list[Fact], proposed: list[Fact]) -> list[Fact]:
    """Facts not already in the prompt (by normalised text), each once."""
    seen = {normal_text(f.text) for f in known}
    out = []
    for f in proposed:
        if normal_text(f.text) not in seen:
            seen.add(normal_text(f.text))
            out.append(f)
    return out


def _shown_signals(traj: Trajectory, decision: Decision) -> dict[str, SignalValue]:
    if not traj.iterations:
        return {}
    index = decision.iteration if decision.iteration is not None else len(traj.iterations) - 1
    return dict(traj.iterations[index].signals)


def _held_back(traj: Trajectory, decision: Decision) -> HeldBackAnswer | None:
    """The baseline answer of an escalated case, for the clinician who may approve it.

    The baseline is the answerer's own reading of the question and context; later rounds rest
    on knowledge the orchestrator injected, which the clinician can read in the trace.
    """
    if decision.status is not Status.ESCALATED or not traj.iterations:
        return None
    base = traj.iterations[0]
    return HeldBackAnswer(answer=base.answer, reasoning=base.run.reasoning, source="hrs round 0")

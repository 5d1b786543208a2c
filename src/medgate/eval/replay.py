"""Replaying recorded trajectories under any decision setting, with no model calls.

The deployable rule is :func:`medgate.hrs.decide` as it is. The paper's Revert Baseline reads the
gold label (it reverts only when the baseline was right), so it is offered here only as an
explicitly named oracle for comparison with the paper's tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from medgate.config import HRSConfig, RevertRule
from medgate.errors import ConfigError
from medgate.eval.metrics import ItemOutcome
from medgate.eval.runner import RecordedItem
from medgate.hrs.decision import Decision, Outcome, Trajectory, decide, passes_gate
from medgate.hrs.signals import SignalValue
from medgate.records import Status

DECISION_SIGNALS = ("entropy", "perplexity")


def neutralise(traj: Trajectory, removed: Iterable[str]) -> Trajectory:
    """A copy in which the ``removed`` decision signals read 0, i.e. never hold an answer back.

    This is how a leave-one-signal-out replay drops a decision-layer signal: the rule then
    rests on the remaining signal alone.
    """
    removed = set(removed)
    if not removed:
        return traj
    iterations = []
    for it in traj.iterations:
        signals = dict(it.signals)
        for name in removed:
            old = signals.get(name)
            layer = old.layer if old is not None else "decision"
            signals[name] = SignalValue(name=name, value=0.0, layer=layer, note="left out")
        iterations.append(it.model_copy(update={"signals": signals}))
    return traj.model_copy(update={"iterations": iterations})


def check_coverage(records: Sequence[RecordedItem], cfg: HRSConfig, recorded_k: int) -> None:
    """Refuse settings the recording cannot answer without new model calls."""
    if cfg.max_iterations > recorded_k:
        raise ConfigError(
            f"K={cfg.max_iterations} exceeds the recorded K={recorded_k}; record again with "
            "a larger --max-iterations"
        )
    missing = [
        r.item_id
        for r in records
        if not r.rounds_recorded
        and r.trajectory.iterations
        and not passes_gate(r.trajectory.iterations[0], cfg)
    ]
    if missing:
        raise ConfigError(
            f"{len(missing)} item(s) pass the recording gate but not gate_e={cfg.gate_e}/"
            f"gate_p={cfg.gate_p}, and their rounds were not recorded (e.g. {missing[0]}); "
            "record with --rounds all to sweep the baseline gate"
        )


def decide_item(
    rec: RecordedItem, cfg: HRSConfig, oracle_revert: bool = False, removed: Sequence[str] = ()
) -> Decision:
    traj = neutralise(rec.trajectory, removed)
    if oracle_revert:
        decision = decide(traj, cfg.model_copy(update={"revert": RevertRule.ACCEPT}))
        base = traj.iterations[0].answer if traj.iterations else None
        if (
            decision is not None
            and decision.outcome is Outcome.SUCCESS
            and decision.answer != base
            and base == rec.gold  # reads the gold label: an oracle, not deployable
        ):
            decision = decision.model_copy(
                update={"answer": base, "reason": "oracle revert to the correct baseline"}
            )
    else:
        decision = decide(traj, cfg)
    if decision is None:  # an unfinished recording cannot be scored as an answer
        return Decision(
            status=Status.ESCALATED,
            outcome=Outcome.ERROR,
            iteration=None,
            answer=None,
            reason="recording incomplete",
        )
    return decision


def outcomes(
    records: Sequence[RecordedItem],
    cfg: HRSConfig,
    oracle_revert: bool = False,
    removed: Sequence[str] = (),
) -> list[ItemOutcome]:
    out = []
    for rec in records:
        d = decide_item(rec, cfg, oracle_revert, removed)
        base = rec.trajectory.iterations[0].answer if rec.trajectory.iterations else ""
        escalated = not d.status.answers_user
        out.append(
            ItemOutcome(
                item_id=rec.item_id,
                gold=rec.gold,
                baseline=base,
                escalated=escalated,
                final=None if escalated else d.answer,
            )
        )
    return out

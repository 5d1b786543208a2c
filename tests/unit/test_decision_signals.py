"""The decision layer reads every decision-layer signal and its thresholds by name."""

from __future__ import annotations

import pytest

from medgate.backends.fake import FakeModel
from medgate.config import HRSConfig, SignalThresholds, SuccessRule
from medgate.errors import ConfigError
from medgate.hrs.decision import Iteration, Outcome, Trajectory, decide, passes_gate, succeeds
from medgate.hrs.gate import HRSGate
from medgate.hrs.orchestrator import ModelOrchestrator
from medgate.hrs.signals import ModelRun
from medgate.records import SignalValue


def round_with(index: int = 0, **values: float) -> Iteration:
    """A round whose decision signals have ``values`` (entropy, perplexity and any other)."""
    signals = {
        name: SignalValue(name=name, value=value, layer="decision")
        for name, value in values.items()
    }
    run = ModelRun(answer="yes", distribution={"yes": 0.9, "no": 0.1}, label_mass=0.9)
    return Iteration(index=index, run=run, signals=signals)


PLUGIN = {"disagreement": SignalThresholds(gate=0.2, success=0.3)}


def test_a_declared_decision_signal_must_be_under_its_gate_threshold() -> None:
    cfg = HRSConfig(thresholds=PLUGIN)
    assert passes_gate(round_with(entropy=0.1, perplexity=0.1, disagreement=0.1), cfg)
    assert not passes_gate(round_with(entropy=0.1, perplexity=0.1, disagreement=0.25), cfg)
    traj = Trajectory(iterations=[round_with(entropy=0.1, perplexity=0.1, disagreement=0.1)])
    decision = decide(traj, cfg)
    assert decision is not None and decision.outcome is Outcome.GATE
    assert decision.decided_by == [
        "min_label_mass",
        "gate_e",
        "gate_p",
        "thresholds.disagreement.gate",
    ]
    assert "entropy, perplexity and disagreement under the gate" in decision.reason


def test_the_paper_signals_alone_decide_as_before() -> None:
    cfg = HRSConfig()
    traj = Trajectory(iterations=[round_with(entropy=0.1, perplexity=0.1)])
    decision = decide(traj, cfg)
    assert decision is not None and decision.decided_by == ["min_label_mass", "gate_e", "gate_p"]
    confident = "the first answer is confident (entropy and perplexity under the gate)"
    assert decision.reason == confident


@pytest.mark.parametrize(
    ("rule", "values", "succeeded"),
    [
        (SuccessRule.ALGORITHM1, {"entropy": 0.5, "perplexity": 0.1, "disagreement": 0.1}, True),
        (SuccessRule.ALGORITHM1, {"entropy": 0.5, "perplexity": 0.1, "disagreement": 0.4}, False),
        # Eq. 6 escalates only when every decision signal is at or above its threshold
        (SuccessRule.EQ6, {"entropy": 0.99, "perplexity": 0.5, "disagreement": 0.1}, True),
        (SuccessRule.EQ6, {"entropy": 0.99, "perplexity": 0.5, "disagreement": 0.4}, False),
    ],
)
def test_the_success_rule_reads_every_decision_signal(
    rule: SuccessRule, values: dict[str, float], succeeded: bool
) -> None:
    cfg = HRSConfig(rule=rule, thresholds=PLUGIN)
    assert succeeds(round_with(1, **values), cfg) is succeeded


def test_a_decision_signal_without_thresholds_never_releases() -> None:
    traj = Trajectory(iterations=[round_with(entropy=0.1, perplexity=0.1, disagreement=0.0)])
    decision = decide(traj, HRSConfig())
    assert decision is not None and decision.outcome is Outcome.UNRELIABLE
    assert "no thresholds are set for the decision signal(s) disagreement" in decision.reason


def test_the_gate_refuses_a_decision_signal_without_thresholds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from medgate.hrs import signals

    monkeypatch.setattr(signals.AmbiguitySignal, "layer", "decision")
    orchestrator = ModelOrchestrator(FakeModel("orchestrator"))
    with pytest.raises(ConfigError, match=r"hrs\.thresholds\.ambiguity"):
        HRSGate(FakeModel("answerer"), orchestrator, HRSConfig())
    with_thresholds = HRSConfig(thresholds={"ambiguity": SignalThresholds(gate=0.1, success=0.2)})
    gate = HRSGate(FakeModel("answerer"), orchestrator, with_thresholds)
    assert gate.thresholds["thresholds.ambiguity.gate"].value == 0.1

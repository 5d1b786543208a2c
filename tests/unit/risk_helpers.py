"""Hand-built trajectories with every field the risk features read, and small risk models."""

from __future__ import annotations

from medgate.config import SettingOrigin
from medgate.hrs.calibration import Choice
from medgate.hrs.decision import Iteration, StopReason, Trajectory
from medgate.hrs.risk import LoadedRiskModel, OperatingPoint, RiskModel
from medgate.hrs.signals import ModelRun, SignalValue


def run(
    answer: str,
    dist: dict[str, float],
    *,
    opening: dict[str, float] | None = None,
    samples: tuple[str, ...] = (),
    logprobs: tuple[float, ...] = (-0.5, -1.5),
    mass: float = 0.9,
) -> ModelRun:
    return ModelRun(
        answer=answer,
        distribution=dist,
        label_mass=mass,
        opening_distribution=opening,
        opening_label_mass=None if opening is None else 0.8,
        reasoning="Because.",
        reasoning_logprobs=list(logprobs),
        sample_distributions=[{a: 1.0} for a in samples],
        sample_answers=list(samples),
    )


def signals(**values: float | None) -> dict[str, SignalValue]:
    layers = {"entropy": "decision", "perplexity": "decision"}
    return {
        name: SignalValue(name=name, value=v, layer=layers.get(name, "guidance"))  # type: ignore[arg-type]
        for name, v in values.items()
    }


def iteration(index: int, run_: ModelRun, **values: float | None) -> Iteration:
    return Iteration(index=index, run=run_, signals=signals(**values))


BASE_SIGNALS = {
    "entropy": 0.4,
    "perplexity": 0.2,
    "ambiguity": 0.1,
    "token_length": 0.5,
    "rarity": 0.3,
}


def trajectory(
    *rounds: Iteration, stopped: StopReason | None = None, opening: bool = True
) -> Trajectory:
    """A baseline answering 'yes' (p 0.7 / 0.2 / 0.1), then the given rounds."""
    base = iteration(
        0,
        run(
            "yes",
            {"yes": 0.7, "no": 0.2, "maybe": 0.1},
            opening={"yes": 0.3, "no": 0.6, "maybe": 0.1} if opening else None,
            samples=("yes", "no", "yes"),
        ),
        **BASE_SIGNALS,
    )
    return Trajectory(iterations=[base, *rounds], stopped=stopped)


def entropy_model(
    fingerprint: str = "fp" * 32,
    threshold: float = 0.85,
    rounds: int = 0,
    knowledge: str | None = None,
) -> RiskModel:
    """risk = sigmoid(2 * (entropy - 0.5) / 0.25): entropy 0.75 gives sigmoid(2) = 0.8808."""
    point = OperatingPoint(
        method="test",
        alpha=0.2,
        delta=0.1,
        threshold=threshold,
        certified=True,
        n=10,
        released=5,
        errors=1,
        error_rate=0.2,
    )
    grid = Choice(
        method="paper-grid", gate_e=0.8, gate_p=0.4, n=10, released=4, errors=1, error_rate=0.25
    )
    return RiskModel(
        model="fake:m",
        model_fingerprint=fingerprint,
        feature_set="rounds" if rounds else "baseline",
        features=["entropy", "answer_changed_any"] if rounds else ["entropy"],
        rounds=rounds,
        knowledge=knowledge,
        mean=[0.5, 0.0] if rounds else [0.5],
        scale=[0.25, 1.0] if rounds else [0.25],
        coef=[2.0, 0.0] if rounds else [2.0],
        intercept=0.0,
        regularisation_c=1.0,
        fitted_on="hand-made",
        cv_auroc=0.6,
        calibration_auroc=0.6,
        operating_point=point,
        grid=grid,
    )


def loaded(model: RiskModel) -> LoadedRiskModel:
    return LoadedRiskModel(
        model, SettingOrigin(source="artifact", artifact="test/risk.json", sha256="ab" * 32)
    )

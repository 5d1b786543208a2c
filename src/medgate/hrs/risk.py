"""The risk model: P(the first answer is wrong | features of the run), as the HRS gate applies it.

A risk model is a logistic regression over standardised features (:mod:`medgate.hrs.features`),
fitted on training-split recordings of one answering model (``medgate eval risk``,
:mod:`medgate.eval.risk_fit`) and saved as plain JSON: the feature list, the standardisation,
the coefficients, where it was fitted, and its operating points (the risk threshold conformal
risk control certified on held-out training items, and the paper-style tau_e / tau_p grid
optimum). Applying it needs numpy only; loading runs no pickled code. An artifact fitted for
other weights, or for another feature list than the code computes, is refused.

Where the gate finds one (:func:`resolve`), first wins:

1. ``hrs.risk_model``, when configured (a missing file is an error);
2. one fitted under ``<cache_dir>/risk/`` for this answerer;
3. one shipped in the package (``medgate/hrs/data/risk/``) for this answerer.

Among the candidates of one place, only those whose round features assume the configured
knowledge source apply (a baseline-only model assumes none), and those reading a second model's
answer only when ``hrs.peer_model`` is that model's weights; of those, the one with the higher
AUROC on its own held-out training items is chosen. Its operating point sets ``hrs.rule`` and
``hrs.risk_threshold`` (and the paper's thresholds) wherever the configuration did not set them
(:func:`medgate.config.overlay`), so an explicitly configured threshold always wins.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from medgate.config import HRSConfig, MedgateConfig, SettingOrigin, SuccessRule, overlay
from medgate.errors import ConfigError
from medgate.hrs import features
from medgate.hrs.calibration import Choice
from medgate.hrs.decision import Trajectory
from medgate.records import Record

RISK_VERSION = 1
SHIPPED_DIR = Path(__file__).parent / "data" / "risk"


class OperatingPoint(Record):
    """A risk threshold chosen on held-out training items for a target error alpha."""

    method: str
    alpha: float = Field(description="Target error among released answers.")
    delta: float = Field(description="The guarantee holds with probability 1 - delta.")
    threshold: float = Field(description="Release iff risk <= threshold.")
    certified: bool = Field(description="False when no threshold was certified: none released.")
    n: int = Field(description="Calibration items.")
    released: int
    errors: int
    error_rate: float | None
    p_value: float | None = None


class DatasetFigures(Record):
    """How the model ranks wrong answers on one dataset's training items."""

    n_fit: int
    n_calibration: int
    cv_auroc: float | None = Field(description="Out-of-fold AUROC on the fitting items.")
    calibration_auroc: float | None = Field(description="AUROC on the held-out items.")


class RiskModel(Record):
    """A fitted risk model and its operating points, as saved and shipped."""

    version: int = RISK_VERSION
    model: str = Field(description="The answering model's spec when fitted.")
    model_fingerprint: str = Field(description="sha256 of the answering model's weights.")
    feature_set: str
    features: list[str]
    rounds: int = Field(ge=0, description="Knowledge rounds the features read (0: baseline).")
    knowledge: str | None = Field(
        description="The registered knowledge source (hrs.knowledge: 'retrieval', 'self') the "
        "round features were recorded with; None for a baseline-only model, which assumes none."
    )
    knowledge_detail: str = Field(
        default="", description="The recording's orchestrator, with its corpus or model."
    )
    peer_model: str | None = Field(
        default=None, description="The second model's spec whose answers the peer features read."
    )
    peer_fingerprint: str | None = Field(
        default=None,
        description="sha256 of that second model's weights; None for a model that reads none.",
    )
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    regularisation_c: float = Field(description="Inverse L2 strength chosen by cross-validation.")
    fitted_on: str = Field(description="Datasets, split seed, item counts and id digests.")
    cv_auroc: float | None = Field(description="Pooled out-of-fold AUROC on the fitting items.")
    calibration_auroc: float | None = Field(
        description="Pooled AUROC on the held-out training items the threshold was chosen on."
    )
    per_dataset: dict[str, DatasetFigures] = Field(default_factory=dict)
    operating_point: OperatingPoint = Field(description="The one the gate applies.")
    operating_points: list[OperatingPoint] = Field(
        default_factory=list, description="The same procedure at other alphas, for reading."
    )
    grid: Choice | None = Field(
        default=None, description="The paper-style tau_e / tau_p grid optimum at alpha."
    )
    sklearn_version: str = ""
    fitted_at: str = ""
    command: str = ""

    def standardised_coefficients(self) -> dict[str, float]:
        """Each feature's weight per standard deviation: the model, readable."""
        return dict(zip(self.features, self.coef, strict=True))


def _check(model: RiskModel, source: str) -> None:
    if model.version != RISK_VERSION:
        raise ConfigError(
            f"risk model {source} has version {model.version}, expected {RISK_VERSION}: refit "
            "it with `medgate eval risk`"
        )
    unknown = [f for f in model.features if f not in features.FEATURES]
    if unknown:
        raise ConfigError(f"risk model {source} reads features this medgate lacks: {unknown}")
    n = len(model.features)
    if not (len(model.mean) == len(model.scale) == len(model.coef) == n):
        raise ConfigError(f"risk model {source}: weights do not match its {n} features")
    if any(s <= 0 or not math.isfinite(s) for s in model.scale):
        raise ConfigError(f"risk model {source}: a feature scale is not a positive number")


@dataclass(frozen=True)
class LoadedRiskModel:
    """A risk model with where it came from; implements :class:`medgate.hrs.decision.RiskScorer`."""

    model: RiskModel
    origin: SettingOrigin

    @property
    def id(self) -> str:
        return self.origin.artifact or "risk model"

    @property
    def sha256(self) -> str | None:
        return self.origin.sha256

    @property
    def rounds(self) -> int:
        return self.model.rounds

    def score(self, traj: Trajectory) -> tuple[float | None, list[str]]:
        """P(wrong first answer), or None and the features that could not be computed."""
        return score(self.model, traj)


def score(model: RiskModel, traj: Trajectory) -> tuple[float | None, list[str]]:
    values = features.compute(traj, model.features, model.rounds)
    missing = [name for name, v in values.items() if v is None]
    if missing:
        return None, missing
    x = np.asarray([values[n] for n in model.features], dtype=np.float64)
    z = (x - np.asarray(model.mean)) / np.asarray(model.scale)
    logit = float(z @ np.asarray(model.coef) + model.intercept)
    return _sigmoid(logit), []


def _sigmoid(t: float) -> float:
    if t >= 0:
        return 1.0 / (1.0 + math.exp(-t))
    e = math.exp(t)
    return e / (1.0 + e)


def save_risk_model(model: RiskModel, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(model.model_dump_json(indent=2) + "\n")
    tmp.replace(path)


def load_risk_model(path: Path, fingerprint: str) -> LoadedRiskModel:
    """The risk model at ``path``, refused unless fitted for the weights ``fingerprint``."""
    try:
        raw = path.read_bytes()
        model = RiskModel.model_validate(json.loads(raw))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"risk model {path} is unreadable: {exc}") from exc
    _check(model, str(path))
    if model.model_fingerprint != fingerprint:
        raise ConfigError(
            f"risk model {path} was fitted for other weights ({model.model_fingerprint[:16]}...)"
            "; fit one for this answerer with `medgate eval risk`"
        )
    where = "shipped" if path.parent == SHIPPED_DIR else path.parent.name
    origin = SettingOrigin(
        source="artifact",
        artifact=f"{where}/{path.name}",
        sha256=hashlib.sha256(raw).hexdigest(),
    )
    return LoadedRiskModel(model, origin)


def fitted_dir(config: MedgateConfig) -> Path:
    return config.cache_dir / "risk"


def artifact_name(fingerprint: str, feature_set: str) -> str:
    return f"{fingerprint[:16]}-{feature_set.replace('+', '-')}.json"


def knowledge_matches(model: RiskModel, knowledge: str) -> bool:
    """Whether the model's round features assume the knowledge source ``knowledge``
    (a registered orchestrator name, ``hrs.knowledge``)."""
    return model.rounds == 0 or model.knowledge is None or model.knowledge == knowledge


def reads_peer(model: RiskModel) -> bool:
    """Whether the model reads a second model's answer (it applies only with hrs.peer_model;
    without one its features are never computed and every answer would escalate)."""
    return features.reads_peer(model.features)


def peer_matches(model: RiskModel, peer_fingerprint: str | None) -> bool:
    """Whether the model's peer features were fitted on the configured second model's answers
    (another model agrees with the answerer at another rate, so its weights would not transfer)."""
    return not reads_peer(model) or (
        peer_fingerprint is not None and model.peer_fingerprint == peer_fingerprint
    )


def resolve(
    config: MedgateConfig, fingerprint: str, peer_fingerprint: str | None = None
) -> LoadedRiskModel | None:
    """The risk model the gate applies for the weights ``fingerprint``, with the second model
    of weights ``peer_fingerprint`` when ``hrs.peer_model`` is set (see the module)."""
    knowledge = config.hrs.knowledge
    if config.hrs.risk_model is not None:
        path = config.hrs.risk_model
        if not path.is_file():
            raise ConfigError(f"hrs.risk_model names {path}, which is not a file")
        loaded = load_risk_model(path, fingerprint)
        if not knowledge_matches(loaded.model, knowledge):
            raise ConfigError(
                f"risk model {path} reads knowledge rounds from {loaded.model.knowledge!r}, "
                f"but hrs.knowledge is {knowledge!r}: its round features would not transfer; "
                "use a baseline-only risk model or that knowledge source"
            )
        if reads_peer(loaded.model) and not peer_matches(loaded.model, peer_fingerprint):
            raise ConfigError(
                f"risk model {path} reads a second model's answers ("
                f"{loaded.model.peer_model or 'unnamed'}), but hrs.peer_model is "
                f"{config.hrs.peer_model!r}: set that model as hrs.peer_model or use a risk "
                "model without peer features"
            )
        return loaded
    for folder in (fitted_dir(config), SHIPPED_DIR):
        if not folder.is_dir():
            continue
        paths = sorted(folder.glob(f"{fingerprint[:16]}-*.json"))
        found = [load_risk_model(p, fingerprint) for p in paths]
        usable = [
            m
            for m in found
            if knowledge_matches(m.model, knowledge) and peer_matches(m.model, peer_fingerprint)
        ]
        if usable:
            return max(usable, key=lambda m: m.model.calibration_auroc or 0.0)
    return None


def operating_values(model: RiskModel) -> dict[str, Any]:
    """The settings an artifact's operating points set: the risk rule and its threshold, and
    the paper's thresholds at their grid optimum (for whoever switches back to that rule)."""
    values: dict[str, Any] = {
        "rule": SuccessRule.RISK,
        "risk_threshold": model.operating_point.threshold,
    }
    if model.grid is not None:
        g = model.grid
        values.update(gate_e=g.gate_e, gate_p=g.gate_p, tau_e=g.gate_e, tau_p=g.gate_p)
    return values


def apply_operating_point(
    hrs: HRSConfig, loaded: LoadedRiskModel, origins: dict[str, SettingOrigin] | None = None
) -> tuple[HRSConfig, dict[str, SettingOrigin]]:
    """``hrs`` with the artifact's operating point wherever nothing was configured."""
    return overlay(hrs, operating_values(loaded.model), loaded.origin, origins)

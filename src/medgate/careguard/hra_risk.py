"""HRA's risk model: the judge, sampling consistency, degeneration and token signals combined
by a small logistic regression fitted on labelled answers.

Features, each oriented so that higher means riskier (:data:`FEATURES`):

* ``judge``: the HRA judge's score, 1-5;
* ``ngram_mean``, ``ngram_max``: the draft's unigram inconsistency with its samples, mean and
  max over sentences (:mod:`medgate.careguard.consistency`);
* ``embedding_mean``, ``embedding_max``: its embedding inconsistency, likewise;
* ``degeneration``: :func:`medgate.careguard.degeneration.assess_degeneration`'s score;
* ``token_nll_mean``, ``token_nll_max``: minus the mean and the least token log-probability;
* ``perplexity``: the HRS perplexity risk 1 - 1/PPL.

The artifact is plain JSON (weights, the standardisation, the feature list, the threshold,
provenance with the model's sha256) applied with numpy alone: ``P(wrong) = sigmoid(b + w . z)``,
``z = (x - mean) / scale``. :func:`hra_from_probability` maps P(wrong) to the 1-5 scale so that
it passes HRA's release threshold (2) exactly when P(wrong) is below the artifact's threshold.
Anything that goes wrong (a feature missing or not finite, an artifact that does not validate)
raises, and the judge scores the draft 5: it fails closed.
"""

from __future__ import annotations

import hashlib
import json
import math
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from medgate.careguard.consistency import Consistency
from medgate.careguard.degeneration import Degeneration
from medgate.careguard.records import TokenStats
from medgate.errors import ConfigError
from medgate.records import Record

FEATURES: tuple[str, ...] = (
    "judge",
    "ngram_mean",
    "ngram_max",
    "embedding_mean",
    "embedding_max",
    "degeneration",
    "token_nll_mean",
    "token_nll_max",
    "perplexity",
)

ARTIFACT_FILE = "hra_risk.json"


class HRARiskArtifact(Record):
    """A fitted HRA risk model, as shipped."""

    name: str = "hra_risk"
    version: int = 1
    features: list[str]
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    threshold: float = Field(
        gt=0,
        lt=1,
        description="P(wrong) at or above which HRA fails the draft (chosen on validation).",
    )
    samples: int = Field(ge=1, description="Samples per draft the consistency features used.")
    provenance: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _shapes(self) -> HRARiskArtifact:
        n = len(self.features)
        if not (len(self.mean) == len(self.scale) == len(self.coef) == n):
            raise ValueError("mean, scale and coef must each have one value per feature")
        unknown = set(self.features) - set(FEATURES)
        if unknown:
            raise ValueError(f"unknown features {sorted(unknown)}")
        values = [*self.mean, *self.scale, *self.coef, self.intercept]
        if not all(math.isfinite(v) for v in values) or any(s <= 0 for s in self.scale):
            raise ValueError("weights must be finite and scales positive")
        return self


class HRARiskModel:
    """A loaded artifact, applied with numpy."""

    def __init__(self, artifact: HRARiskArtifact, digest: str, source: str) -> None:
        self.artifact = artifact
        self.digest = digest
        self.source = source
        self._mean = np.asarray(artifact.mean, dtype=np.float64)
        self._scale = np.asarray(artifact.scale, dtype=np.float64)
        self._coef = np.asarray(artifact.coef, dtype=np.float64)

    @property
    def threshold(self) -> float:
        return self.artifact.threshold

    @property
    def label(self) -> str:
        return f"{self.artifact.name} v{self.artifact.version} ({self.source}, {self.digest[:12]})"

    def probability(self, features: dict[str, float]) -> float:
        """P(wrong) of a draft with these features; a missing or non-finite one raises."""
        missing = [f for f in self.artifact.features if f not in features]
        if missing:
            raise ValueError(f"features not computed: {missing}")
        x = np.asarray([features[f] for f in self.artifact.features], dtype=np.float64)
        if not np.all(np.isfinite(x)):
            raise ValueError(f"a feature is not a finite number: {features}")
        z = float(self.artifact.intercept + self._coef @ ((x - self._mean) / self._scale))
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


def load_risk_model(path: Path | None = None) -> HRARiskModel:
    """The artifact at ``path``, or the shipped one; ConfigError when it cannot be read."""
    try:
        if path is None:
            raw = (resources.files("medgate.careguard") / "data" / ARTIFACT_FILE).read_bytes()
            source = ARTIFACT_FILE
        else:
            raw = path.read_bytes()
            source = str(path)
        artifact = HRARiskArtifact.model_validate(json.loads(raw))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"the HRA risk model could not be loaded: {exc}") from exc
    return HRARiskModel(artifact, hashlib.sha256(raw).hexdigest(), source)


def risk_features(
    judge: int,
    consistency: Consistency,
    degeneration: Degeneration,
    tokens: TokenStats | None,
) -> dict[str, float]:
    """The features of one draft; those that could not be computed are left out (the model
    then refuses to score it)."""
    out: dict[str, float] = {"judge": float(judge), "degeneration": degeneration.score}
    for name in ("ngram_mean", "ngram_max", "embedding_mean", "embedding_max"):
        value = getattr(consistency, name)
        if value is not None:
            out[name] = float(value)
    if tokens is not None:
        out["token_nll_mean"] = -tokens.mean_logprob
        out["token_nll_max"] = -tokens.min_logprob
        out["perplexity"] = 1.0 - 1.0 / tokens.perplexity
    return out


def hra_from_probability(p: float, threshold: float) -> int:
    """1-5 from P(wrong): 1 below half the threshold, 2 below it, then 3-5 in equal steps of
    the rest, so the draft passes HRA (<= 2) exactly when ``p < threshold``."""
    if not 0.0 <= p <= 1.0 or not math.isfinite(p):
        return 5
    if p < threshold / 2:
        return 1
    if p < threshold:
        return 2
    step = (1.0 - threshold) / 3
    return min(5, 3 + int((p - threshold) / step)) if step > 0 else 5

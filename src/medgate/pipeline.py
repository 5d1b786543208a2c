"""Assembling gates from configuration.

A profile names a builder; ``build_gate`` looks it up in :data:`PROFILES`. Models are created
through a :class:`ModelPool` so that roles configured with the same spec share one loaded model.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from medgate.backends.base import LanguageModel, WhiteBoxModel
from medgate.backends.registry import create_model
from medgate.careguard.build import build_careguard, build_full
from medgate.config import KnowledgeSource, MedgateConfig, setting_origins
from medgate.errors import ConfigError
from medgate.eval.calibrate import (
    apply_artifact,
    artifact_origin,
    calibration_path,
    load_artifact,
)
from medgate.events import Gate
from medgate.hrs.gate import HRSGate
from medgate.hrs.orchestrator import ModelOrchestrator, Orchestrator, RetrievalOrchestrator
from medgate.hrs.rarity import RarityCentroid, load_centroid
from medgate.hrs.retrieval import BM25Index
from medgate.routing import RoutingGate


class ModelPool:
    """Creates each configured model once and hands the same instance to every role using it."""

    def __init__(self, config: MedgateConfig) -> None:
        self.config = config
        self._models: dict[str, LanguageModel] = {}

    def get(self, spec: str) -> LanguageModel:
        if spec not in self._models:
            self._models[spec] = create_model(spec, self.config)
        return self._models[spec]

    def white_box(self, spec: str) -> WhiteBoxModel:
        model = self.get(spec)
        if not isinstance(model, WhiteBoxModel):
            raise ConfigError(
                f"{spec} cannot be the answerer: the HRS signals need a white-box backend "
                "(llamacpp, embedded, transformers)"
            )
        return model


def rarity_artifact_path(config: MedgateConfig, model: WhiteBoxModel) -> Path:
    """Where the rarity centroid for ``model`` is kept unless configured otherwise."""
    if config.hrs.rarity_artifact is not None:
        return config.hrs.rarity_artifact
    return config.cache_dir / "rarity" / f"{model.fingerprint[:16]}.json"


def build_orchestrator(config: MedgateConfig, pool: ModelPool) -> Orchestrator:
    hrs = config.hrs
    if hrs.knowledge is KnowledgeSource.RETRIEVAL:
        if hrs.corpus is None:
            raise ConfigError("retrieval knowledge needs a corpus: set hrs.corpus to a JSONL file")
        return RetrievalOrchestrator(BM25Index.from_jsonl(hrs.corpus), hrs.facts_per_iteration)
    spec = config.orchestrator_model or config.model
    return ModelOrchestrator(pool.get(spec), hrs.facts_per_iteration)


def build_hrs_gate(config: MedgateConfig, pool: ModelPool | None = None) -> HRSGate:
    pool = pool or ModelPool(config)
    answerer = pool.white_box(config.model)
    hrs, origins = config.hrs, setting_origins(config.hrs)
    # Thresholds fitted by `medgate calibrate` for this model, where not set explicitly.
    path = calibration_path(config, answerer.fingerprint)
    fitted = load_artifact(path, answerer.fingerprint)
    if fitted is not None:
        hrs, origins = apply_artifact(hrs, fitted, artifact_origin(path))
    centroid: RarityCentroid | None = None
    if "rarity" in hrs.signals:
        centroid = load_centroid(rarity_artifact_path(config, answerer), answerer)
    return HRSGate(answerer, build_orchestrator(config, pool), hrs, centroid, origins)


def build_routing_gate(config: MedgateConfig, pool: ModelPool) -> RoutingGate:
    """Closed research questions to the HRS gate, patient questions to CareGuard (triage
    first); see :mod:`medgate.routing`. Both share the pool's models."""
    return RoutingGate(research=build_hrs_gate(config, pool), patient=build_careguard(config, pool))


GateBuilder = Callable[[MedgateConfig, ModelPool], Gate]

PROFILES: dict[str, GateBuilder] = {
    "route": build_routing_gate,
    "hrs": build_hrs_gate,
    "careguard": build_careguard,
    "full": build_full,
}


def build_gate(config: MedgateConfig, pool: ModelPool | None = None) -> Gate:
    """The gate ``config.profile`` names, with its models loaded."""
    builder = PROFILES.get(config.profile)
    if builder is None:
        raise ConfigError(
            f"unknown profile {config.profile!r}; known: {', '.join(sorted(PROFILES))}"
        )
    return builder(config, pool or ModelPool(config))

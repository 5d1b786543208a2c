"""Assembling gates from configuration.

A profile names a builder; ``build_gate`` looks it up in :data:`PROFILES`. Models are created
through a :class:`~medgate.backends.pool.ModelPool` so that roles configured with the same spec
share one loaded model, and so that a case's record can name the model behind each role.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from medgate.backends.base import WhiteBoxModel
from medgate.backends.pool import ModelPool
from medgate.careguard.build import build_careguard, build_full
from medgate.config import KnowledgeSource, MedgateConfig, setting_origins
from medgate.errors import ConfigError
from medgate.eval.calibrate import (
    apply_artifact,
    artifact_origin,
    calibration_path,
    load_artifact,
)
from medgate.events import ErrorEvent, EventSink, Failure, Gate, RouteEvent, discard
from medgate.hrs.gate import HRSGate
from medgate.hrs.orchestrator import ModelOrchestrator, Orchestrator, RetrievalOrchestrator
from medgate.hrs.rarity import RarityCentroid, load_centroid
from medgate.hrs.retrieval import BM25Index
from medgate.records import Case, Status
from medgate.routing import STAGE as ROUTE_STAGE
from medgate.routing import Route, choose_route
from medgate.verdict import Trace, Verdict


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
    return ModelOrchestrator(pool.get(spec, role="orchestrator"), hrs.facts_per_iteration)


def build_hrs_gate(config: MedgateConfig, pool: ModelPool | None = None) -> HRSGate:
    pool = pool or ModelPool(config)
    answerer = pool.white_box(config.model, role="answerer")
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


class RoutingGate:
    """Implements :class:`medgate.events.Gate` by handing each case to the gate of its route
    (:func:`medgate.routing.choose_route`)."""

    def __init__(self, research: Gate, patient: Gate) -> None:
        self.gates: dict[Route, Gate] = {Route.RESEARCH: research, Route.PATIENT: patient}

    def check(self, case: Case, events: EventSink = discard) -> Verdict:
        choice = choose_route(case)
        events(RouteEvent(stage=ROUTE_STAGE, data=choice))
        try:
            verdict = self.gates[choice.route].check(case, events)
        except Exception as exc:  # gates fail closed themselves; this one does not rely on it
            failure = f"{choice.route.value} gate raised {type(exc).__name__}: {exc}"
            events(ErrorEvent(stage=ROUTE_STAGE, data=Failure(error=failure)))
            verdict = Verdict(
                status=Status.ESCALATED,
                reason="the safety check did not complete, so the case is held for a clinician",
                case=case,
                trace=Trace(errors=[failure]),
            )
        return verdict.model_copy(update={"trace": verdict.trace.with_report(choice)})


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

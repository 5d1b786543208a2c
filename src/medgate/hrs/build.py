"""Assembling the HRS gate from configuration: answerer, orchestrator, thresholds, centroid,
risk model."""

from __future__ import annotations

from medgate.backends.pool import ModelPool
from medgate.config import MedgateConfig, setting_origins
from medgate.hrs.calibration import apply_artifact, artifact_origin, calibration_path, load_artifact
from medgate.hrs.gate import HRSGate
from medgate.hrs.orchestrator import build_orchestrator
from medgate.hrs.rarity import RarityCentroid, load_centroid, rarity_artifact_path
from medgate.hrs.risk import apply_operating_point, resolve


def build_hrs_gate(config: MedgateConfig, pool: ModelPool | None = None) -> HRSGate:
    """The gate ``config.hrs`` describes on the configured answerer (the ``hrs`` profile).

    Settings apply in this order, a later one winning only over settings nobody configured: the
    risk model's operating point (configured, fitted under the cache dir, or shipped for this
    answerer: :func:`medgate.hrs.risk.resolve`), then thresholds fitted by ``medgate
    calibrate``. The configuration always wins. The rarity centroid is the one fitted for this
    answerer.
    """
    pool = pool or ModelPool(config)
    answerer = pool.white_box(config.model, role="answerer")
    hrs, origins = config.hrs, setting_origins(config.hrs)
    peer = pool.white_box(hrs.peer_model, role="peer") if hrs.peer_model else None
    risk = resolve(config, answerer.fingerprint, peer.fingerprint if peer else None)
    if risk is not None:
        hrs, origins = apply_operating_point(hrs, risk, origins)
    path = calibration_path(config, answerer.fingerprint)
    fitted = load_artifact(path, answerer.fingerprint)
    if fitted is not None:
        hrs, origins = apply_artifact(hrs, fitted, artifact_origin(path), origins)
    centroid: RarityCentroid | None = None
    if "rarity" in hrs.signals:
        centroid = load_centroid(rarity_artifact_path(config, answerer), answerer)
    orchestrator = build_orchestrator(config, pool)
    return HRSGate(answerer, orchestrator, hrs, centroid, origins, risk, peer)

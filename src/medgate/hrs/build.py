"""Assembling the HRS gate from configuration: answerer, orchestrator, thresholds, centroid."""

from __future__ import annotations

from medgate.backends.pool import ModelPool
from medgate.config import MedgateConfig, setting_origins
from medgate.hrs.calibration import apply_artifact, artifact_origin, calibration_path, load_artifact
from medgate.hrs.gate import HRSGate
from medgate.hrs.orchestrator import build_orchestrator
from medgate.hrs.rarity import RarityCentroid, load_centroid, rarity_artifact_path


def build_hrs_gate(config: MedgateConfig, pool: ModelPool | None = None) -> HRSGate:
    """The gate ``config.hrs`` describes on the configured answerer (the ``hrs`` profile).

    Thresholds fitted by ``medgate calibrate`` for this answerer apply wherever the
    configuration did not set one; the rarity centroid is the one fitted for this answerer.
    """
    pool = pool or ModelPool(config)
    answerer = pool.white_box(config.model, role="answerer")
    hrs, origins = config.hrs, setting_origins(config.hrs)
    path = calibration_path(config, answerer.fingerprint)
    fitted = load_artifact(path, answerer.fingerprint)
    if fitted is not None:
        hrs, origins = apply_artifact(hrs, fitted, artifact_origin(path))
    centroid: RarityCentroid | None = None
    if "rarity" in hrs.signals:
        centroid = load_centroid(rarity_artifact_path(config, answerer), answerer)
    return HRSGate(answerer, build_orchestrator(config, pool), hrs, centroid, origins)
